"""Tagging one large parquet file whole against in work units (`corpus.work_unit_rows`).

    python benchmarks/bench_work_units.py --rows 2000000 --row-group 20000 --bounds 200000 100000000

Writes one parquet file of `--rows` rows (LAION's URL and TEXT columns; captions of 4-12 common
nouns and words, drawn with a fixed seed) in row groups of `--row-group` rows, then runs
`imagenot tag` on it once per bound and worker count (`runner.workers`), each in its own process
tree, sampling /proc every 0.2 s: wall seconds, the work units, the peak resident memory of the
largest process (VmHWM) and of the whole tree (the sum of RSS at the worst sample), and the CPU
seconds of each process that used one or more (the driver, and with several workers each worker:
how the work was spread). The tally must
be the same under every bound. The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

WORDS = (
    "dog cat house garden table chair red blue wooden vintage car bike tree flower beach sunset mountain "
    "river coffee cup book lamp shoe dress shirt kitchen window door street city night light girl boy "
    "bottle glass plate bowl phone camera bag hat ring watch bridge boat train bird horse cake bread"
).split()


def write_corpus(path: Path, rows: int, row_group: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    words = np.array(WORDS)
    with pq.ParquetWriter(path, pa.schema([("URL", pa.string()), ("TEXT", pa.string())])) as writer:
        for start in range(0, rows, row_group):
            n = min(row_group, rows - start)
            lengths = rng.integers(4, 13, n)
            picks = words[rng.integers(0, len(words), int(lengths.sum()))]
            captions = [" ".join(chunk) for chunk in np.split(picks, np.cumsum(lengths)[:-1])]
            urls = [f"https://img.example.com/{start + i}.jpg" for i in range(n)]
            writer.write_table(pa.table({"URL": urls, "TEXT": captions}), row_group_size=row_group)


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def tag(corpus: Path, run: Path, bound: int, workers: int) -> dict:
    config = run.with_suffix(".yaml")
    settings = {
        "corpus": {
            "paths": [str(corpus)],
            "work_unit_rows": bound,
            "columns": {"nsfw": None, "similarity": None, "punsafe": None, "width": None, "height": None},
        },
        "selection": {"allowed_nsfw_tags": None, "max_punsafe": None},
        "runner": {"workers": workers},
    }
    config.write_text(yaml.safe_dump(settings))
    command = [str(Path(sys.executable).with_name("imagenot")), "-v", "tag", "--config", str(config), "--out", str(run)]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hwm: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tree_peak = 0
    while process.poll() is None:
        pids = _tree(process.pid)
        tree_peak = max(tree_peak, sum(_kib(pid, "VmRSS") for pid in pids))
        for pid in pids:
            hwm[pid] = max(hwm.get(pid, 0), _kib(pid, "VmHWM"))
            cpu[pid] = max(cpu.get(pid, 0.0), _cpu_seconds(pid))
        time.sleep(0.2)
    output = process.stdout.read()
    if process.returncode:
        raise SystemExit(output)
    units = next((line.split("tag: ", 1)[1] for line in output.splitlines() if "work unit(s) of" in line), "")
    return {
        "bound": bound,
        "workers": workers,
        "wall_s": round(time.monotonic() - started, 1),
        "units": units,
        "largest_process_peak_mb": round(max(hwm.values()) / 1024),
        "tree_peak_mb": round(tree_peak / 1024),
        "process_cpu_s": sorted((round(c, 1) for c in cpu.values() if c >= 1.0), reverse=True),
        "tally": json.loads((run / "tag" / "tag_tally.json").read_text()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--row-group", type=int, default=20_000)
    parser.add_argument("--bounds", type=int, nargs="+", default=[200_000, 100_000_000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "big.parquet"
        write_corpus(corpus, args.rows, args.row_group)
        print(f"{args.rows:,} rows, {corpus.stat().st_size / 1e6:.0f} MB, row groups of {args.row_group:,}")
        results = []
        for workers in args.workers:
            for bound in args.bounds:
                result = tag(corpus, Path(folder) / f"run-{bound}-{workers}", bound, workers)
                results.append(result)
                shown = {k: v for k, v in result.items() if k != "tally"}
                print(json.dumps(shown), flush=True)
        tallies = {json.dumps(r["tally"], sort_keys=True) for r in results}
        assert len(tallies) == 1, "the tally changed with the units"
        for r in results:
            del r["tally"]
        print(json.dumps({"rows": args.rows, "row_group": args.row_group, "same_tally": True, "runs": results}))


if __name__ == "__main__":
    main()

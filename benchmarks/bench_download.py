"""Download speed: the download stage, every guard on, against plain `img2dataset.download`.

    python benchmarks/bench_download.py [--urls 3000] [--hosts 8] [--threads 16] [--repeats 3]

Serves `--urls` photo URLs from `--hosts` loopback servers (127.0.0.2, 127.0.0.3, ..., each its
own host, in a separate process so neither side shares its interpreter with them), then fetches
them `--repeats` times with each side, the two sides taking turns (so a busy machine slows both
alike), each time into a fresh folder, at 256 px, with one worker process of `--threads` threads:

- `img2dataset.download` over a parquet of the URLs (webdataset output, no guards);
- the download stage (`pipeline.download.stage.run_download`) over a sample stage of the same
  URLs: robots.txt read per host, the address guard allowing only the servers' addresses, per-host
  limits high enough not to bind (connections = threads, 100,000 requests/s), a fetch deadline, a
  blocklist of 1,000 hashes and URLs, the pixel and body caps, sorted tars.

Two rates per side: images written per second of fetching (from the first shard's start to the
last shard's end, as img2dataset's `*_stats.json` of each shard record them: the fetch engine,
guards included, without start-up), and per second of the whole call (img2dataset's process
pool and logger, the stage's Beam pipeline and rounds included). The last line is one JSON
object with each side's runs and the ratios of their medians; the target is a fetching-rate ratio
of at least 0.9.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from image_server import PHOTOS, LoopbackImageServer, write_sample_stage  # noqa: E402

from imagenot.pipeline.config.schema import Config, Download, Runner, Sampling  # noqa: E402


def _serve(hosts: list[str], ports, ready, stop) -> None:
    servers = [LoopbackImageServer(host=host).start() for host in hosts]
    for i, server in enumerate(servers):
        ports[i] = int(server.base_url.rsplit(":", 1)[1])
    ready.set()
    stop.wait()
    for server in servers:
        server.stop()


def _urls(hosts: list[str], ports, count: int) -> list[str]:
    return [
        f"http://{hosts[i % len(hosts)]}:{ports[i % len(hosts)]}/photo/{PHOTOS[i % len(PHOTOS)]}.jpg?id={i}"
        for i in range(count)
    ]


def plain_img2dataset(urls: list[str], folder: Path, threads: int) -> dict:
    from img2dataset import download

    pq.write_table(
        pa.table({"url": urls, "caption": [f"photo {i}" for i in range(len(urls))]}), folder / "urls.parquet"
    )
    started = time.monotonic()
    download(
        url_list=str(folder / "urls.parquet"),
        input_format="parquet",
        url_col="url",
        caption_col="caption",
        output_format="webdataset",
        output_folder=str(folder / "out"),
        processes_count=1,
        thread_count=threads,
        image_size=256,
        resize_mode="keep_ratio",
        number_sample_per_shard=1000,
        timeout=10,
        extract_exif=False,
        user_agent_token="imagenot",
        disallowed_header_directives=["noai", "noimageai", "noindex", "noimageindex"],
    )
    return _rates(list((folder / "out").glob("*_stats.json")), time.monotonic() - started)


def _rates(stats_files: list[Path], wall_s: float) -> dict:
    stats = [json.loads(p.read_text()) for p in stats_files]
    images = sum(s["successes"] for s in stats)
    fetching_s = max(s["end_time"] for s in stats) - min(s["start_time"] for s in stats)
    return {
        "images": images,
        "fetching_s": round(fetching_s, 2),
        "wall_s": round(wall_s, 2),
        "images_per_s": round(images / fetching_s, 1),
        "images_per_wall_s": round(images / wall_s, 1),
    }


def guarded_stage(urls: list[str], folder: Path, threads: int, hosts: list[str]) -> dict:
    from imagenot.pipeline.frame.registry import declared, run_stage

    blocklist = folder / "blocklist.txt"
    lines = [f"sha256 {hashlib.sha256(str(i).encode()).hexdigest()}" for i in range(500)]
    lines += [f"url http://127.0.0.1:1/never/{i}.jpg" for i in range(500)]
    blocklist.write_text("\n".join(lines) + "\n")
    settings = Download(
        enabled=True,
        threads=threads,
        timeout_s=10,
        shard_rows=1000,
        image_size=256,
        per_host_connections=threads,
        per_host_rate=100_000,
        allowed_networks=[f"{host}/32" for host in hosts],
        blocklists=[str(blocklist)],
    )
    write_sample_stage(folder / "run", {"n00000001": (urls, [])}, test_per_class=0)
    started = time.monotonic()
    config = Config(download=settings, sampling=Sampling(images_per_class=len(urls), test_per_class=0), runner=Runner())
    run_stage(declared("download"), config, str(folder / "run"))
    return _rates(list((folder / "run" / "download" / "rounds").glob("*/*_stats.json")), time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=3000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
    hosts = [f"127.0.0.{n}" for n in range(2, 2 + args.hosts)]
    context = multiprocessing.get_context("spawn")
    ports, ready, stop = context.Array("i", args.hosts), context.Event(), context.Event()
    server = context.Process(target=_serve, args=(hosts, ports, ready, stop), daemon=True)
    server.start()
    try:
        if not ready.wait(60):
            raise SystemExit("the loopback servers did not start")
        urls = _urls(hosts, list(ports), args.urls)
        plain, stage = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as plain_dir, tempfile.TemporaryDirectory() as stage_dir:
                plain.append(plain_img2dataset(urls, Path(plain_dir), args.threads))
                stage.append(guarded_stage(urls, Path(stage_dir), args.threads, hosts))
    finally:
        stop.set()
        server.join(30)

    def ratio(key: str) -> float:
        return round(statistics.median(r[key] for r in stage) / statistics.median(r[key] for r in plain), 3)

    print(
        json.dumps(
            {
                "urls": args.urls,
                "hosts": args.hosts,
                "threads": args.threads,
                "img2dataset": plain,
                "stage": stage,
                "ratio": ratio("images_per_s"),
                "ratio_wall": ratio("images_per_wall_s"),
            }
        )
    )


if __name__ == "__main__":
    main()

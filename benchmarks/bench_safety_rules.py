"""What the safety rules cost: WordNet's offensive marks and the identity person synsets over all
82,115 noun synsets (`filters.offensive_synsets.marked_synsets`, `filters.person_synsets.identity_synsets`,
each computed once per process and cached), against loading the noun index from its cache, which
every select stage already does, and against the floor of one pass over the glosses (lower-casing each).

CPU seconds (`time.process_time`), best of `--repeats`, the cases alternating so load from other
processes hurts all alike. The last line is JSON.

    python benchmarks/bench_safety_rules.py [--repeats 5]
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import click

from imagenot.filters.offensive_synsets import marked_synsets
from imagenot.filters.person_synsets import identity_synsets
from imagenot.wordnet import index as noun_index


def _cpu_seconds(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


@click.command()
@click.option("--repeats", default=5, show_default=True)
def main(repeats: int) -> None:
    index = noun_index.load_index()
    path = noun_index._cache_path()  # the cached index a select stage loads

    def rules() -> int:
        marked_synsets.cache_clear()
        identity_synsets.cache_clear()
        return len(marked_synsets(index)) + len(identity_synsets(index))

    cases = {
        "glosses lower-cased (floor)": lambda: [s.gloss.lower() for s in index],
        "safety rules, all nouns": rules,
        "noun index loaded from its cache": lambda: noun_index._load(path),
    }
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(repeats):
        for name, work in cases.items():
            best[name] = min(best[name], _cpu_seconds(work))
    base = best["noun index loaded from its cache"]
    for name, seconds in best.items():
        print(f"{name:34s} {seconds:7.3f} s  {seconds / base:6.3f}x the index load")
    marked, identity = marked_synsets(index), identity_synsets(index)
    print(
        json.dumps(
            {
                "nouns": len(index),
                "offensive_synsets": len(marked),
                "identity_synsets": len(identity),
                "cpu_seconds": {k: round(v, 3) for k, v in best.items()},
                "rules_to_index_load": round(best["safety rules, all nouns"] / base, 3),
            }
        )
    )


if __name__ == "__main__":
    main()

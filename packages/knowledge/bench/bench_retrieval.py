"""Ranked retrieval at 1k, 10k and 100k items in one scope: FTS index vs the full scan.

For each size: build the corpus (one transaction, executemany), then run every fixed query
through both paths in the same process. The indexed path runs ``--runs`` times per query
(per-query median); the full scan, which tokenises every active item on every query, runs
once per query. Every query's two outputs are compared: the index must never change the
result. Prints a Markdown table.

    uv run python packages/knowledge/bench/bench_retrieval.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import QUERIES, generate

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore

WORKSPACE = "/work/shop"
PROJECT = "shop"


def _time_query(repository: KnowledgeRepository, query: str, use_index: bool) -> tuple[float, Any]:
    start = time.perf_counter()
    result = retrieve_relevant_knowledge(
        repository, query, workspace=WORKSPACE, project=PROJECT, use_index=use_index
    )
    return (time.perf_counter() - start) * 1000, result


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def bench_size(size: int, runs: int, directory: Path) -> dict[str, Any]:
    store = KnowledgeStore(directory / f"knowledge-{size}.sqlite")
    repository = KnowledgeRepository(store)
    start = time.perf_counter()
    repository.create_many(generate(size, workspace=WORKSPACE))
    build_seconds = time.perf_counter() - start
    indexed: dict[str, float] = {}
    scanned: dict[str, float] = {}
    mismatches = []
    for query in QUERIES:
        samples = []
        for _ in range(runs):
            elapsed, indexed_result = _time_query(repository, query, use_index=True)
            samples.append(elapsed)
        indexed[query] = statistics.median(samples)
        scanned[query], scanned_result = _time_query(repository, query, use_index=False)
        if scanned_result != indexed_result:
            mismatches.append(query)
    store.close()
    return {
        "size": size,
        "build": build_seconds,
        "indexed": indexed,
        "scanned": scanned,
        "mismatches": mismatches,
    }


def _row(label: str, size: int, times: dict[str, float], build: float | None) -> str:
    values = list(times.values())
    worst = max(times, key=lambda query: times[query])
    built = f"{build:.1f} s" if build is not None else ""
    return (
        f"| {size:,} | {label} | {statistics.median(values):.1f} | {_p95(values):.1f} | "
        f"{times[worst]:.1f} (`{worst}`) | {built} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3, help="indexed runs per query")
    args = parser.parse_args()
    sizes = [int(value) for value in args.sizes.split(",")]
    print(f"{len(QUERIES)} fixed queries (English, Chinese, mixed), one scope, project ranked.")
    print()
    print("| items | path | median ms | p95 ms | worst ms (query) | build |")
    print("|---:|---|---:|---:|---|---:|")
    summaries = []
    with tempfile.TemporaryDirectory() as raw:
        for size in sizes:
            result = bench_size(size, args.runs, Path(raw))
            print(_row("FTS index", size, result["indexed"], result["build"]))
            print(_row("full scan", size, result["scanned"], None))
            ratio = statistics.median(result["scanned"].values()) / statistics.median(
                result["indexed"].values()
            )
            summaries.append(
                f"{size:,} items: index {ratio:.1f}x faster than the full scan at the median; "
                f"identical results for {len(QUERIES) - len(result['mismatches'])}/"
                f"{len(QUERIES)} queries"
                + (f" (MISMATCH: {result['mismatches']})" if result["mismatches"] else "")
            )
            sys.stdout.flush()
    print()
    for line in summaries:
        print(f"- {line}")


if __name__ == "__main__":
    main()

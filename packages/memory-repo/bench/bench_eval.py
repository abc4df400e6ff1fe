"""Retrieval quality on the earlier tool's bilingual evaluation set.

Builds the 26-record corpus of ``memory-retrieval-eval.json`` in a temporary memory root,
runs its 52 labelled queries with ``limit=10`` in the given scope, and prints top-1 and
top-3 hit rates (the JSON's own scoring rule: top-1 is the first result being ``top1``, or
one of ``expect_in_top3`` when ``top1`` is null; top-3 is every ``expect_in_top3`` path
among the first three results), for the index and for the scan fallback.

    uv run python packages/memory-repo/bench/bench_eval.py [path/to/memory-retrieval-eval.json]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from dsh_memory.search import search

DEFAULT_EVAL = Path("/work/shared/reference/memory-retrieval-eval.json")


def write_corpus(root: Path, data: dict[str, Any]) -> None:
    (root / ".sync").mkdir(parents=True)
    (root / "summary.md").write_text(data.get("summary", ""), encoding="utf-8")
    for record in data["records"]:
        lines = ["---", "schema_version: 1", f"id: {record['id']}", f"type: {record['type']}"]
        if record["tags"]:
            lines.append("tags:")
            lines.extend(f"  - {tag}" for tag in record["tags"])
        lines.append("---")
        target = root / record["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n" + record["body"], encoding="utf-8")


def evaluate(root: Path, queries: list[dict[str, Any]], *, use_index: bool) -> dict[str, Any]:
    top1_hits = 0
    top3_hits = 0
    misses: list[str] = []
    for case in queries:
        value = search(root, case["query"], 10, case["scope"], use_index=use_index)
        paths = [result["path"] for result in value["results"]]
        expected = case["expect_in_top3"]
        first = paths[0] if paths else None
        hit1 = first == case["top1"] if case["top1"] else first in expected
        hit3 = all(path in paths[:3] for path in expected)
        top1_hits += hit1
        top3_hits += hit3
        if not (hit1 and hit3):
            misses.append(f"  #{case['n']} {case['query']!r}: top3={paths[:3]}")
    total = len(queries)
    return {
        "top1": top1_hits / total,
        "top3": top3_hits / total,
        "top1_hits": top1_hits,
        "top3_hits": top3_hits,
        "total": total,
        "misses": misses,
    }


def main() -> int:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_EVAL
    data = json.loads(source.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        write_corpus(root, data)
        print("| retrieval | queries | top-1 hits | top-1 rate | top-3 hits | top-3 rate |")
        print("|---|---:|---:|---:|---:|---:|")
        reports = {}
        for label, use_index in (("index", True), ("scan", False)):
            report = evaluate(root, data["queries"], use_index=use_index)
            reports[label] = report
            print(
                f"| {label} | {report['total']} | {report['top1_hits']} | {report['top1']:.3f} |"
                f" {report['top3_hits']} | {report['top3']:.3f} |"
            )
        misses = reports["index"]["misses"]
        if misses:
            print("\nqueries missing top-1 or top-3:")
            print("\n".join(misses))
        return 0 if reports["index"]["top3"] >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())

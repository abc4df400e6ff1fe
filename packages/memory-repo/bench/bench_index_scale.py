"""Index size and query time on dense Chinese memories, each figure beside its baselines.

Dense Chinese is the hardest case for the index's size: every character is three UTF-8
bytes and nearly every bigram a term of its own. For each size this writes records of
dense Chinese prose (characters drawn with a Zipf law from 3,000 ideographs, so common
bigrams are everywhere, as in real text), commits them to git, builds the index once (time
and peak RSS of this process), and prints where the index's bytes go (SQLite's ``dbstat``:
the term table, the records table, the stored listing, the rest).

Then, at rest and with one core busy (:mod:`baselines`), it times the freshness check
alone, a 3-character query, a 1,000-character Chinese query, a query of one common
character, and a search right after one record was edited, beside the baselines: the cold
scan of the 3-character query (no index) and BM25 in pure Python (in memory) for the short
and the long query. Cells are ``median (p90)`` milliseconds over ``--runs`` runs.

    uv run python packages/memory-repo/bench/bench_index_scale.py [--runs N] [sizes ...]
    uv run python packages/memory-repo/bench/bench_index_scale.py --large   # adds 100,000
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from baselines import CONDITIONS, Bm25Index, cell, condition, load, timed

from dsh_memory.search import search_index
from dsh_memory.search.search import search
from dsh_memory.store.records import load_record, walk_payload

CHARACTERS = [chr(0x4E00 + index * 7) for index in range(3000)]
WEIGHTS = [1 / (rank + 1) for rank in range(len(CHARACTERS))]
PUNCTUATION = "，。、；："
GIT_IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def chinese(rng: random.Random, length: int) -> str:
    chars = rng.choices(CHARACTERS, WEIGHTS, k=length)
    for position in range(12, length, rng.randint(9, 20)):
        chars[position] = rng.choice(PUNCTUATION)
    return "".join(chars)


def write_memory(root: Path, count: int, seed: int = 5) -> int:
    """``count`` records of ~150 Chinese characters; returns the payload bytes."""
    rng = random.Random(seed)
    (root / ".sync").mkdir(parents=True)
    total = 0
    for index in range(count):
        folder = ("handbook", "rollouts", "archive")[index % 3]
        directory = root / folder / f"d{index // 1000:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        text = (
            f"---\nschema_version: 1\nid: zh/n{index}\ntype: fact\n---\n"
            f"{chinese(rng, rng.randint(100, 200))}\n"
        )
        data = text.encode("utf-8")
        (directory / f"n{index}.md").write_bytes(data)
        total += len(data)
    return total


def commit(root: Path) -> None:
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*GIT_IDENTITY, "commit", "-qm", "corpus"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)


def where_bytes_go(path: Path) -> dict[str, int]:
    """Bytes per part of the index file: the term table (all its FTS5 shadow tables), the
    records table, the stored listing, everything else (schema, meta, free pages)."""
    connection = sqlite3.connect(path)
    try:
        parts = {"terms": 0, "records": 0, "listing": 0, "other": 0}
        for name, size in connection.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            part = name.split("_")[0] if name.split("_")[0] in parts else "other"
            parts[part] += size
        parts["other"] += os.path.getsize(path) - sum(parts.values())
        return parts
    finally:
        connection.close()


class Edits:
    def __init__(self, root: Path) -> None:
        self.records = sorted((root / "handbook").rglob("*.md"))
        self.serial = 0

    def search_after_one(self, root: Path, query: str) -> float:
        self.serial += 1
        target = self.records[self.serial]
        target.write_text(target.read_text(encoding="utf-8") + f"编辑{self.serial}\n", "utf-8")
        start = time.perf_counter()
        value = search(root, query, 20, "all")
        assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}, value
        return (time.perf_counter() - start) * 1000


def fresh_search(root: Path, query: str) -> None:
    value = search(root, query, 20, "all")
    assert value["retrieval"] == {"mode": "index", "indexState": "fresh"}, value["retrieval"]


def measure(root: Path, bm25: Bm25Index, edits: Edits, runs: int) -> dict[str, list[float]]:
    short = CHARACTERS[40] + CHARACTERS[41] + CHARACTERS[300]
    long = chinese(random.Random(99), 1000)
    common = CHARACTERS[3]
    return {
        "freshness check alone": timed(lambda: search_index.refresh_index(root), runs),
        "3-character query": timed(lambda: fresh_search(root, short), runs),
        "1,000-character query": timed(lambda: fresh_search(root, long), runs),
        "one common character": timed(lambda: fresh_search(root, common), runs),
        "3-character query after editing 1 record": [
            edits.search_after_one(root, short) for _ in range(runs)
        ],
        "baseline: cold scan, 3-character query": timed(
            lambda: search(root, short, 20, "all", use_index=False), max(1, runs // 3)
        ),
        "baseline: BM25 in pure Python, 3-character query": timed(lambda: bm25.top(short), runs),
        "baseline: BM25 in pure Python, 1,000-character query": timed(lambda: bm25.top(long), runs),
    }


def bench_size(count: int, runs: int) -> tuple[str, list[str]]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        payload = write_memory(root, count)
        commit(root)
        start = time.perf_counter()
        search_index.update_index(root)
        build = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        path = search_index.index_path(root)
        size = path.stat().st_size
        parts = where_bytes_go(path)
        size_row = (
            f"| {count:,} | {payload / 2**20:.1f} | {size / 2**20:.1f} | {size / payload:.2f}x |"
            + "".join(f" {parts[name] / payload:.2f}x |" for name in parts)
            + f" {build:.1f} | {rss:.0f} |"
        )
        loaded = (load_record(root, entry) for entry in walk_payload(root))
        records = [record for record in loaded if record is not None]
        bm25 = Bm25Index([r.path for r in records], (r.searchable() for r in records))
        del records
        edits = Edits(root)
        results: dict[str, dict[str, list[float]]] = {}
        for name in CONDITIONS:
            with condition(name):
                print(f"<!-- {count:,} records, {name}: {load()} -->", flush=True)
                for operation, samples in measure(root, bm25, edits, runs).items():
                    results.setdefault(operation, {})[name] = samples
        timing_rows = [
            f"| {count:,} | {operation} | {cell(found['at rest'])} |"
            f" {cell(found['one core busy'])} |"
            for operation, found in results.items()
        ]
        return size_row, timing_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    parser.add_argument("--large", action="store_true", help="add 100,000 records (slow)")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default 5)")
    options = parser.parse_args()
    sizes = options.sizes + ([100_000] if options.large else [])
    print(f"<!-- {load()}, {os.cpu_count()} CPUs -->", flush=True)
    size_rows, timing_rows = [], []
    for count in sizes:
        size_row, rows = bench_size(count, options.runs)
        size_rows.append(size_row)
        timing_rows += rows
        print(size_row, flush=True)
    print()
    print(
        "| records | payload MiB | index MiB | index/payload | terms | records table | listing"
        " | other | build s | peak RSS MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(size_rows))
    print()
    print("| records | operation | at rest ms, median (p90) | one core busy ms, median (p90) |")
    print("|---:|---|---:|---:|")
    print("\n".join(timing_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Search and context at 100, 1,000 and 10,000 records, each figure beside its baselines.

For each size a mixed Chinese/English corpus is generated (bench/corpus.py) and committed
to a git repository (as a real memory root is), the index is built once (its build time and
size are reported), and the indexed results are checked identical to the scan's for every
query. Then, at rest and again with one core busy (:mod:`baselines`), it times:

- ``search`` and ``context`` (with and without a query) through the library, every query of
  ``corpus.QUERIES`` ``--runs`` times;
- a search right after one record was edited, one added and one removed (the index is
  updated for what changed), each a typical query;
- the whole ``dsh-memory search`` process (the console script's fast path);
- from 3,000 records on, a search of a twin root whose index holds the stat key (built by a
  child without ``find`` on its PATH): the listing key against the stat key;

and, in the same conditions, the baselines: the cold scan (the same search without the
index), BM25 in pure Python over an in-memory inverted index, one ``lstat`` of every record
file, and ``python -c pass``. Cells are ``median (p90)`` milliseconds; the last column is
the figure at rest over its baseline at rest (the cold scan for the library's operations,
``python -c pass`` for the process).

    uv run python packages/memory-repo/bench/bench_search.py [--runs N] [sizes ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from baselines import (
    CONDITIONS,
    Bm25Index,
    cell,
    condition,
    load,
    median,
    python_pass,
    timed,
)
from corpus import QUERIES, write_corpus

from dsh_memory.search import search_index
from dsh_memory.search.context import context
from dsh_memory.search.search import search
from dsh_memory.store.records import load_record, walk_payload

GIT_IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
CLI = Path(sys.executable).parent / "dsh-memory"
CLI_QUERIES = QUERIES[:3]


def _commit(root: Path) -> None:
    """A real memory root is a git repository with its records committed."""
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*GIT_IDENTITY, "commit", "-qm", "corpus"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)


def over_queries(call: Callable[[str], object], runs: int) -> list[float]:
    samples: list[float] = []
    for query in QUERIES:
        samples += timed(lambda q=query: call(q), runs)
    return samples


def after_change(root: Path, change: Callable[[int], None], runs: int) -> list[float]:
    """A typical query right after ``change(run)`` altered one record."""
    samples = []
    for run in range(runs):
        change(run)
        query = QUERIES[run % len(QUERIES)]
        start = time.perf_counter()
        value = search(root, query, 20, "all")
        samples.append((time.perf_counter() - start) * 1000)
        assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}, value
    return samples


class Changes:
    """One record edited, added or removed per run, never the same one removed twice."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records = sorted(p for p in root.glob("*/**/*.md") if p.parts[-2] != "added")
        self.serial = 0

    def edit(self, _run: int) -> None:
        self.serial += 1
        target = self.records[self.serial % len(self.records)]
        text = target.read_text(encoding="utf-8") + f"edited {self.serial}\n"
        target.write_text(text, encoding="utf-8")

    def add(self, run: int) -> None:
        self.serial += 1
        target = self.root / "handbook" / "added" / f"n{self.serial}.md"
        target.parent.mkdir(exist_ok=True)
        text = f"---\nschema_version: 1\nid: added/n{self.serial}\n---\ncache 缓存 {run}\n"
        target.write_text(text, encoding="utf-8")

    def remove(self, _run: int) -> None:
        self.records.pop().unlink()


def _stat_key_twin(root: Path, directory: Path) -> Path:
    """A copy of ``root`` whose index a child without ``find`` on its PATH built."""
    twin = directory / "twin"
    shutil.copytree(root, twin, symlinks=True, ignore=shutil.ignore_patterns("*.sqlite*"))
    no_find = directory / "no-find"
    no_find.mkdir()
    build = "import sys; from pathlib import Path; from dsh_memory.search import search_index as s;"
    build += " s.update_index(Path(sys.argv[1]))"
    environment = {**os.environ, "PATH": str(no_find)}
    subprocess.run([sys.executable, "-c", build, str(twin)], check=True, env=environment)
    meta = search_index._index_meta(search_index.index_path(twin)) or {}
    assert "stat_key" in meta, meta
    return twin


def _lstat_every_record(root: Path, groups: dict[str, list[str]]) -> None:
    for directory, names in groups.items():
        descriptor = os.open(root / directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in names:
                os.stat(name, dir_fd=descriptor, follow_symlinks=False)
        finally:
            os.close(descriptor)


def _cli_search(root: Path, query: str) -> None:
    subprocess.run(
        [str(CLI), "--root", str(root), "search", query], check=True, capture_output=True
    )


def measure(root: Path, twin: Path | None, changes: Changes, runs: int) -> dict[str, list[float]]:
    """Every operation and baseline once, under the current condition."""
    records = [
        r for r in (load_record(root, e) for e in walk_payload(root)) if r is not None and r.valid
    ]
    bm25 = Bm25Index([r.path for r in records], (r.searchable() for r in records))
    found: dict[str, list[float]] = {
        "search": over_queries(lambda q: search(root, q, 20, "all"), runs),
        "context (query)": over_queries(lambda q: context(root, q, 10, "all"), runs),
        "context (no query)": timed(lambda: context(root, None, 10, "all"), runs * 3),
    }
    if twin is not None:
        found["search, stat key (no find)"] = over_queries(
            lambda q: search(twin, q, 20, "all"), runs
        )
    found["search after editing 1 record"] = after_change(root, changes.edit, runs * 2)
    found["search after adding 1 record"] = after_change(root, changes.add, runs * 2)
    found["search after removing 1 record"] = after_change(root, changes.remove, runs * 2)
    found["process: dsh-memory search"] = [
        sample
        for query in CLI_QUERIES
        for sample in timed(lambda q=query: _cli_search(root, q), runs)
    ]
    found["baseline: cold scan (search without the index)"] = over_queries(
        lambda q: search(root, q, 20, "all", use_index=False), max(1, runs // 3)
    )
    found["baseline: BM25 in pure Python, in memory"] = over_queries(bm25.top, runs)
    groups: dict[str, list[str]] = {}
    for path in sorted(root.glob("*/**/*.md")):
        relative = path.relative_to(root)
        groups.setdefault(str(relative.parent), []).append(relative.name)
    found["baseline: lstat of every record"] = timed(
        lambda: _lstat_every_record(root, groups), runs * 3
    )
    found["baseline: python -c pass"] = python_pass(runs * 2)
    return found


def bench_size(count: int, runs: int) -> list[str]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        write_corpus(root, count)
        _commit(root)
        start = time.perf_counter()
        search_index.update_index(root)
        build_ms = (time.perf_counter() - start) * 1000
        index_bytes = search_index.index_path(root).stat().st_size
        for query in QUERIES:
            indexed = search(root, query, 20, "all")
            scanned = search(root, query, 20, "all", use_index=False)
            assert indexed["retrieval"]["mode"] == "index", indexed["retrieval"]
            assert indexed["results"] == scanned["results"], query
            assert indexed["count"] == scanned["count"], query
        twin = None
        if count >= search_index.FAST_KEY_MIN_RECORDS:
            twin = _stat_key_twin(root, Path(directory))
        results: dict[str, dict[str, list[float]]] = {}
        changes = Changes(root)
        for name in CONDITIONS:
            with condition(name):
                print(f"<!-- {count:,} records, {name}: {load()} -->", flush=True)
                for operation, samples in measure(root, twin, changes, runs).items():
                    results.setdefault(operation, {})[name] = samples
        rows = []
        cold = median(results["baseline: cold scan (search without the index)"]["at rest"])
        bare = median(results["baseline: python -c pass"]["at rest"])
        for operation, by_condition in results.items():
            rest, busy = by_condition["at rest"], by_condition["one core busy"]
            if operation.startswith("baseline"):
                ratio = "-"
            else:
                base = bare if operation.startswith("process") else cold
                name = "pass" if operation.startswith("process") else "scan"
                ratio = f"{median(rest) / base:.3f}x {name}"
            rows.append(f"| {count:,} | {operation} | {cell(rest)} | {cell(busy)} | {ratio} |")
        rows.append(
            f"| {count:,} | index build (first search) | {build_ms:.0f} | - |"
            f" {index_bytes / 2**20:.1f} MiB |"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=5, help="runs per query (default 5)")
    options = parser.parse_args()
    print(f"<!-- {load()}, {os.cpu_count()} CPUs -->")
    print(
        "| records | operation | at rest ms, median (p90) | one core busy ms, median (p90) |"
        " at rest / baseline |"
    )
    print("|---:|---|---:|---:|---:|")
    for count in options.sizes:
        for row in bench_size(count, options.runs):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Search and context at 100, 1,000 and 10,000 records: the FTS5 index beside the scan.

For each size a mixed Chinese/English corpus is generated (bench/corpus.py) and committed
to a git repository (as a real memory root is), the index is built once (its build time is
reported), then every query in ``corpus.QUERIES`` is run
``RUNS`` times through ``search`` with the index and with the scan fallback, and
``context`` with a query and without one. Medians and p95 are over all runs of all queries
(milliseconds); the ratio is scan / index. Results are checked identical on every query.

The baseline row, measured in the same run, is one ``lstat`` of every record file from
Python (``os.stat`` relative to an open directory, nothing else): what any exact freshness
check of the files costs when done before the query. Its last column is search / baseline.
From 3,000 records on, the index is also built a second time, in a copy of the root, by a
child process whose PATH has no ``find`` (so it stores the stat key); the two are then
searched alternately, query by query (the "A/B" rows): the listing key against the stat key
under the same load, results asserted identical. The build row names the freshness key the
index stores (``listing`` when a GNU ``find`` runs beside the query, ``stat`` without one,
``walk`` below 3,000 records).

    uv run python packages/memory-repo/bench/bench_search.py [sizes...]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import QUERIES, write_corpus

from dsh_memory import search_index
from dsh_memory.context import context
from dsh_memory.search import search

RUNS = 5
SCAN_RUNS = 2
GIT_IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def _commit(root: Path) -> None:
    """A real memory root is a git repository with its records committed."""
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*GIT_IDENTITY, "commit", "-qm", "corpus"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)


def timed(call: Callable[[], object], runs: int = RUNS) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def bench_size(count: int) -> list[str]:
    rows = []
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
        operations: list[tuple[str, Callable[[str], object], Callable[[str], object]]] = [
            (
                "search",
                lambda q: search(root, q, 20, "all"),
                lambda q: search(root, q, 20, "all", use_index=False),
            ),
            (
                "context (query)",
                lambda q: context(root, q, 10, "all"),
                lambda q: context(root, q, 10, "all", use_index=False),
            ),
        ]
        for name, with_index, with_scan in operations:
            index_samples: list[float] = []
            scan_samples: list[float] = []
            for query in QUERIES:
                index_samples += timed(lambda q=query, call=with_index: call(q))
                scan_samples += timed(lambda q=query, call=with_scan: call(q), runs=SCAN_RUNS)
            rows.append(_row(count, name, index_samples, scan_samples))
        no_query_index = timed(lambda: context(root, None, 10, "all"))
        no_query_scan = timed(lambda: context(root, None, 10, "all", use_index=False), runs=3)
        rows.append(_row(count, "context (no query)", no_query_index, no_query_scan))
        search_median = statistics.median(
            [
                sample
                for query in QUERIES
                for sample in timed(lambda q=query: search(root, q, 20, "all"))
            ]
        )
        rows.append(_baseline_row(root, count, search_median))
        if count >= search_index.FAST_KEY_MIN_RECORDS:
            rows += _key_rows(root, _stat_key_twin(root, Path(directory)), count)
        rows.append(_refresh_row(root, count))
        rows.append(
            f"| {count:,} | index build (first search, {_key_kind(root)} key) | {build_ms:.1f}"
            f" | - | - | - | {index_bytes / 1024 / 1024:.1f} MiB |"
        )
    return rows


def _stat_key_twin(root: Path, directory: Path) -> Path:
    """A copy of ``root`` whose index a child without ``find`` on its PATH built."""
    twin = directory / "twin"
    shutil.copytree(root, twin, symlinks=True, ignore=shutil.ignore_patterns("*.sqlite"))
    no_find = directory / "no-find"
    no_find.mkdir()
    build = "import sys; from pathlib import Path; from dsh_memory import search_index as s;"
    build += " s.update_index(Path(sys.argv[1]))"
    environment = {**os.environ, "PATH": str(no_find)}
    subprocess.run([sys.executable, "-c", build, str(twin)], check=True, env=environment)
    assert _key_kind(twin) == "stat", _key_kind(twin)
    return twin


def _key_rows(root: Path, twin: Path, count: int) -> list[str]:
    samples: dict[Path, list[float]] = {root: [], twin: []}
    for query in QUERIES:
        answers = {}
        for _run in range(RUNS):
            for where in (root, twin):
                start = time.perf_counter()
                answers[where] = search(where, query, 20, "all")
                samples[where].append((time.perf_counter() - start) * 1000)
                assert answers[where]["retrieval"]["indexState"] == "fresh"
        assert answers[root]["results"] == answers[twin]["results"], query
    listing, stat_only = (statistics.median(samples[where]) for where in (root, twin))
    return [
        f"| {count:,} | search (A/B: {_key_kind(root)} key) | {listing:.1f} |"
        f" {p95(samples[root]):.1f} | - | - | - |",
        f"| {count:,} | search (A/B: stat key, no find) | {stat_only:.1f} |"
        f" {p95(samples[twin]):.1f} | - | - | stat/listing {stat_only / listing:.2f}x |",
    ]


def _key_kind(root: Path) -> str:
    meta = search_index._index_meta(search_index.index_path(root)) or {}
    return "listing" if "listing_key" in meta else "stat" if "stat_key" in meta else "walk"


def _lstat_every_record(root: Path, groups: dict[str, list[str]]) -> None:
    for directory, names in groups.items():
        descriptor = os.open(root / directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in names:
                os.stat(name, dir_fd=descriptor, follow_symlinks=False)
        finally:
            os.close(descriptor)


def _baseline_row(root: Path, count: int, search_median: float) -> str:
    groups: dict[str, list[str]] = {}
    for path in sorted(root.glob("*/**/*.md")):
        relative = path.relative_to(root)
        groups.setdefault(str(relative.parent), []).append(relative.name)
    samples = timed(lambda: _lstat_every_record(root, groups), runs=RUNS * len(QUERIES))
    median = statistics.median(samples)
    name = "baseline: lstat of every record"
    return (
        f"| {count:,} | {name} | {median:.1f} | {p95(samples):.1f} | - | - |"
        f" search {search_median / median:.2f}x |"
    )


def _refresh_row(root: Path, count: int) -> str:
    """A search right after one record was edited: the incremental index update."""
    target = sorted((root / "handbook").rglob("*.md"))[0]
    original = target.read_text(encoding="utf-8")
    samples = []
    for run in range(RUNS):
        target.write_text(original + f"edited {run}\n", encoding="utf-8")
        start = time.perf_counter()
        value = search(root, "edited", 20, "all")
        samples.append((time.perf_counter() - start) * 1000)
        assert value["retrieval"]["indexState"] == "rebuilt", value["retrieval"]
    median = statistics.median(samples)
    name = "search after editing 1 record"
    return f"| {count:,} | {name} | {median:.1f} | {p95(samples):.1f} | - | - | - |"


def _row(count: int, name: str, index_samples: list[float], scan_samples: list[float]) -> str:
    index_median = statistics.median(index_samples)
    scan_median = statistics.median(scan_samples)
    return (
        f"| {count:,} | {name} | {index_median:.1f} | {p95(index_samples):.1f} |"
        f" {scan_median:.1f} | {p95(scan_samples):.1f} | {scan_median / index_median:.1f}x |"
    )


def main() -> int:
    sizes = [int(arg) for arg in sys.argv[1:]] or [100, 1000, 10000]
    print(
        "| records | operation | index median ms | index p95 ms | scan median ms |"
        " scan p95 ms | scan/index |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for count in sizes:
        for row in bench_size(count):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

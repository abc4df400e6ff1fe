"""PostgreSQL beside SQLite, in one run: retrieval at 10,000 items, add throughput, the hook.

Starts a throw-away PostgreSQL server of its own (Debian's ``postgresql``, as the tests do:
Unix socket only, ``fsync`` off - which flatters write throughput equally on a real server
with a battery-backed disk; SQLite runs with its own defaults, WAL and ``synchronous=NORMAL``)
or uses ``$DSH_TEST_POSTGRES_URL``. Measured in the same process, so the ratios hold on a
busy machine even when the absolute values move:

* retrieve at ``--size`` items: the shared corpus built on SQLite and copied to PostgreSQL
  with ``import`` (same ids and timestamps, so the ranked results must be identical, and are
  compared); every fixed query ``--runs`` times through the library, per-query medians;
* ``add`` throughput: 1 and 8 concurrent writer processes, one transaction per item;
* the whole ``dsh-knowledge hook user-prompt-submit`` process on each store, ``--hook-runs``
  times, beside ``python -c pass``; with bytecode caches, as an installed package has them
  (``PYTHONDONTWRITEBYTECODE`` is dropped for these processes and one untimed run per store
  writes the caches: compiling every module from source would cost the hook more than its
  whole budget, on both backends).

    uv run python packages/knowledge/bench/bench_postgres.py [--size 10000] [--runs 5]

Goals: PostgreSQL retrieval under 3x SQLite's median and under 30 ms; hook under 80 ms median.
Each is printed after the table as met or missed, with the machine's load average (other
jobs on a shared machine move the absolute times; the ratios move much less).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test server

from corpus import QUERIES, generate

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.transfer import import_store
from pg_server import DatabaseFactory, binaries, external_url, running_server, with_database

WORKSPACE = "/work/shop"
PROJECT = "shop"
RETRIEVE_RATIO_GOAL = 3.0
RETRIEVE_MS_GOAL = 30.0
HOOK_MS_GOAL = 80.0

WRITER = """
import sys, time
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
location, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = KnowledgeStore(location)
repository = KnowledgeRepository(store)
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
start = time.perf_counter()
for n in range(count):
    repository.create(type="fact", content=f"writer {writer} note {n} about the payment queue",
                      scope={"workspace": "/bench"})
print(time.perf_counter() - start)
store.close()
"""


@contextmanager
def databases() -> Iterator[DatabaseFactory]:
    external = external_url()
    if external is not None:
        factory = DatabaseFactory(external, lambda name: with_database(external, name))
        try:
            yield factory
        finally:
            factory.close(drop=True)
        return
    if binaries() is None:
        raise SystemExit("needs Debian's postgresql package or DSH_TEST_POSTGRES_URL")
    with running_server() as server:
        factory = DatabaseFactory(server.url(), server.url)
        try:
            yield factory
        finally:
            factory.close(drop=False)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _one(repository: KnowledgeRepository, query: str) -> tuple[float, Any]:
    start = time.perf_counter()
    result = retrieve_relevant_knowledge(repository, query, workspace=WORKSPACE, project=PROJECT)
    return (time.perf_counter() - start) * 1000, result


def bench_retrieval(
    size: int, runs: int, sqlite_path: Path, url: str, medians: dict[str, float]
) -> list[str]:
    with KnowledgeStore(sqlite_path) as lite:
        KnowledgeRepository(lite).create_many(generate(size, workspace=WORKSPACE))
    with KnowledgeStore(url) as pg:
        start = time.perf_counter()
        # import ends with VACUUM (ANALYZE), as autovacuum would a minute later: retrieval
        # is measured on the settled tables a team's server has.
        import_store(KnowledgeRepository(pg), str(sqlite_path))
        copied = time.perf_counter() - start
    labels = ("SQLite", "PostgreSQL")
    stores = [KnowledgeStore(str(sqlite_path)), KnowledgeStore(url)]
    repositories = dict(zip(labels, (KnowledgeRepository(s) for s in stores), strict=True))
    times: dict[str, dict[str, float]] = {label: {} for label in labels}
    same = 0
    try:
        for query in QUERIES:
            answers = {label: _one(repositories[label], query)[1] for label in labels}  # warm
            same += answers["SQLite"] == answers["PostgreSQL"]
            samples: dict[str, list[float]] = {label: [] for label in labels}
            for _ in range(runs):  # interleaved: a load spike hits both backends alike
                for label in labels:
                    samples[label].append(_one(repositories[label], query)[0])
            for label in labels:
                times[label][query] = statistics.median(samples[label])
    finally:
        for store in stores:
            store.close()
    base = statistics.median(times["SQLite"].values())
    rows = []
    for label in labels:
        values = list(times[label].values())
        medians[f"retrieve {label}"] = statistics.median(values)
        worst = max(times[label], key=lambda q: times[label][q])
        median = statistics.median(values)
        rows.append(
            f"| retrieve, {size:,} items | {label} | {median:.1f} | {_p95(values):.1f} | "
            f"{times[label][worst]:.1f} (`{worst}`) | {median / base:.2f}x |"
        )
    rows.append(
        f"| | identical ranked results | {same}/{len(QUERIES)} queries | | "
        f"import of {size:,} items: {copied:.1f} s | |"
    )
    return rows


def _writers(location: str, writers: int, count: int) -> float:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, str(n), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        process.communicate(timeout=600)
        assert process.returncode == 0
    return writers * count / (time.perf_counter() - start)


def bench_adds(sqlite_dir: Path, factory: DatabaseFactory, count: int) -> list[str]:
    rows = []
    for writers in (1, 8):
        per_writer = count if writers == 1 else max(1, count // writers)
        rates = {}
        for label in ("SQLite", "PostgreSQL"):
            location = (
                str(sqlite_dir / f"adds-{writers}.sqlite")
                if label == "SQLite"
                else factory.create()
            )
            KnowledgeStore(location).close()  # schema in place before the clock starts
            rates[label] = _writers(location, writers, per_writer)
        for label in ("SQLite", "PostgreSQL"):
            rows.append(
                f"| add, {writers} writer{'s' if writers > 1 else ''} x {per_writer} | {label} "
                f"| {rates[label]:.0f} items/s | | | {rates[label] / rates['SQLite']:.2f}x |"
            )
    return rows


def _installed_env() -> dict[str, str]:
    """The environment of a hook process, with bytecode caches written and read."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(argv: list[str], stdin: str | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv, input=stdin, capture_output=True, text=True, check=True, env=_installed_env()
    )
    return (time.perf_counter() - start) * 1000


def bench_hook(
    sqlite_path: Path, url: str, runs: int, medians: dict[str, float] | None = None
) -> list[str]:
    command = str(Path(sys.executable).parent / "dsh-knowledge")
    samples: dict[str, list[float]] = {"python -c pass": [], "SQLite": [], "PostgreSQL": []}
    injected = {"SQLite": 0, "PostgreSQL": 0}
    env = _installed_env()
    for location in (str(sqlite_path), url):  # untimed: writes the bytecode caches
        subprocess.run(
            [command, "hook", "user-prompt-submit", "--db", location, "--project", PROJECT],
            input=json.dumps({"session_id": "warm-up", "cwd": WORKSPACE, "prompt": QUERIES[0]}),
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
    for n in range(runs):  # interleaved, so load spikes hit every row alike
        samples["python -c pass"].append(_time([sys.executable, "-c", "pass"]))
        for label, location in (("SQLite", str(sqlite_path)), ("PostgreSQL", url)):
            payload = json.dumps(
                {
                    "session_id": f"bench-{label}-{n}",
                    "cwd": WORKSPACE,
                    "prompt": QUERIES[n % len(QUERIES)],
                }
            )
            start = time.perf_counter()
            done = subprocess.run(
                [command, "hook", "user-prompt-submit", "--db", location, "--project", PROJECT],
                input=payload,
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            samples[label].append((time.perf_counter() - start) * 1000)
            injected[label] += bool(done.stdout)
    base = statistics.median(samples["SQLite"])
    rows = []
    for label, values in samples.items():
        median = statistics.median(values)
        if medians is not None:
            medians[f"hook {label}"] = median
        note = f"{injected[label]}/{runs} injected" if label in injected else ""
        rows.append(
            f"| hook process | {label} | {median:.1f} | {_p95(values):.1f} | {note} | "
            f"{median / base:.2f}x |"
        )
    return rows


def goals(medians: dict[str, float]) -> list[str]:
    """Each goal, the measured value, and whether it was met."""
    pg, lite = medians["retrieve PostgreSQL"], medians["retrieve SQLite"]
    hook = medians["hook PostgreSQL"]
    checks = [
        (
            f"retrieve: PostgreSQL median under {RETRIEVE_RATIO_GOAL:g}x SQLite's",
            f"{pg / lite:.2f}x ({pg:.1f} ms against {lite:.1f} ms)",
            pg < RETRIEVE_RATIO_GOAL * lite,
        ),
        (
            f"retrieve: PostgreSQL median under {RETRIEVE_MS_GOAL:g} ms through the library",
            f"{pg:.1f} ms",
            pg < RETRIEVE_MS_GOAL,
        ),
        (
            f"hook process on PostgreSQL: median under {HOOK_MS_GOAL:g} ms",
            f"{hook:.1f} ms (SQLite {medians['hook SQLite']:.1f} ms)",
            hook < HOOK_MS_GOAL,
        ),
    ]
    return [f"- {goal}: {value} - {'met' if met else 'MISSED'}" for goal, value, met in checks]


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5, help="runs per retrieval query")
    parser.add_argument("--adds", type=int, default=400, help="items per add measurement")
    parser.add_argument("--hook-runs", type=int, default=30)
    args = parser.parse_args()
    os.environ.setdefault("DSH_HOME", tempfile.mkdtemp(prefix="dsh-bench-home-"))
    with databases() as factory, tempfile.TemporaryDirectory() as raw:
        directory = Path(raw)
        sqlite_path = directory / "retrieve.sqlite"
        url = factory.create()
        print(
            f"{len(QUERIES)} fixed queries (English, Chinese, mixed), one scope, project "
            "ranked; times in ms unless stated; ratio: to SQLite in the same run."
        )
        print(f"Load average (1, 5, 15 min) at the start: {_load()}")
        print()
        print("| what | backend | median | p95 | worst / note | ratio |")
        print("|---|---|---:|---:|---|---:|")
        medians: dict[str, float] = {}
        for row in bench_retrieval(args.size, args.runs, sqlite_path, url, medians):
            print(row)
        sys.stdout.flush()
        for row in bench_hook(sqlite_path, url, args.hook_runs, medians):
            print(row)
        sys.stdout.flush()
        for row in bench_adds(directory, factory, args.adds):
            print(row)
        print()
        print(f"Goals (load average at the end: {_load()}):")
        for line in goals(medians):
            print(line)


if __name__ == "__main__":
    main()

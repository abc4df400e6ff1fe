"""Benchmark dsh-compound: recall (library, CLI process, prompt hook), capture, check.

Builds two corpora (100 and 500 records, the larger just under the 4 MiB scan bound; half
Chinese, half English, with real evidence files) and prints Markdown tables of median and
p95 wall time and median CPU time:

- library recall through the recall cache beside the cold scan (every record read and
  parsed: what recall did before the cache), typical and worst queries, in the same run;
  hybrid ranking beside lexical (vectors built first by ``dsh-compound index``'s code): what
  a long-lived process (the MCP server) pays per query for it;
- whole processes - ``python -c pass``, the prompt hook (lexical, and hybrid with
  ``DSH_RANKING=hybrid``), ``recall`` and ``--help`` -
  interleaved, at rest and again while one core is kept busy by a spinning process, with
  each median as a multiple of ``python -c pass`` measured alongside;
- check and capture.

The cache lives in a temporary DSH_HOME; the corpora are left to settle (a record is cached
once its change time is 3 s old) before anything is timed.

    uv run python packages/compound/bench/bench_compound.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from corpus import CHINESE, ENGLISH, generate, make_draft

from dsh_common.text import query_terms
from dsh_compound import capture, check, corpus_index, recall
from dsh_compound.scoring import recall_terms

TYPICAL_EN = "database connection pool timeout"
TYPICAL_ZH = "数据库连接池超时"
PROMPT = "Why does the login request time out with a database connection pool?"
LIBRARY_TARGET_MS, WORST_TARGET_MS, HOOK_TARGET_MS = 10.0, 25.0, 50.0
HYBRID_HOOK_TARGET_MS, HYBRID_OVERHEAD_TARGET_MS = 150.0, 15.0


def cli_path() -> str:
    local = Path(sys.executable).parent / "dsh-compound"
    found = str(local) if local.exists() else shutil.which("dsh-compound")
    if not found:
        raise SystemExit("dsh-compound is not installed in this environment")
    return found


#: CPU milliseconds per sample, filled by ``measure`` alongside the wall-clock samples.
CPU_SAMPLES: dict[int, list[float]] = {}


def _cpu_now() -> float:
    # Own CPU plus that of finished children: covers library calls and whole processes.
    own = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own + children.ru_utime + children.ru_stime) * 1000


def measure(run: Callable[[], Any], runs: int, warmup: int = 1) -> list[float]:
    """Wall-clock milliseconds of ``runs`` calls; CPU milliseconds go to CPU_SAMPLES."""
    for _ in range(warmup):
        run()
    samples: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        cpu_start = _cpu_now()
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
        cpu.append(_cpu_now() - cpu_start)
    CPU_SAMPLES[id(samples)] = cpu
    return samples


def merged(parts: list[list[float]]) -> list[float]:
    """Concatenate single-run samples, keeping their CPU samples with them."""
    wall = [value for part in parts for value in part]
    CPU_SAMPLES[id(wall)] = [value for part in parts for value in CPU_SAMPLES[id(part)]]
    return wall


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def process(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Callable[[], Any]:
    environment = {**os.environ, **(env or {})}

    def run() -> None:
        result = subprocess.run(
            args, input=stdin, capture_output=True, text=True, check=False, env=environment
        )
        if result.returncode != 0:
            raise SystemExit(f"{args} failed: {result.stderr}")

    return run


def worst_queries() -> dict[str, str]:
    rng = random.Random(11)
    vocabulary = "".join(CHINESE)
    corpus_chars = "".join(rng.choice(vocabulary) for _ in range(500))
    # Rare, unrelated ideographs are segmented one by one: 500 segments + 499 bigrams.
    rare = "".join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(500))
    english = " ".join(rng.choice(ENGLISH) for _ in range(80))[:500]
    return {
        "worst: 500 zh chars (corpus words)": corpus_chars,
        "worst: 500 zh chars (rare)": rare,
        "500 en chars (corpus words)": english,
    }


def cold_recall(workspace: str, query: str) -> dict[str, Any]:
    """Recall as it was before the cache: every record read and parsed on every call."""
    from dsh_compound import retrieval

    original = corpus_index.read_corpus
    retrieval.read_corpus = lambda selected: original(selected, cached=False)  # type: ignore[assignment]
    try:
        return recall(workspace, query, 10)
    finally:
        retrieval.read_corpus = original


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """One core kept busy by a spinning process for the duration."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        yield
    finally:
        spinner.kill()
        spinner.wait()


def table(rows: list[tuple[str, str, list[float]]], baseline: dict[str, float]) -> None:
    print("| operation | corpus | runs | median ms | p95 ms | median CPU ms | x `python -c pass` |")
    print("|---|---|---|---|---|---|---|")
    for name, corpus, samples in rows:
        median = statistics.median(samples)
        cpu = statistics.median(CPU_SAMPLES[id(samples)])
        key = next((k for k in baseline if name.endswith(k)), None)
        versus = f"{median / baseline[key]:.2f}x" if key is not None else "-"
        print(
            f"| {name} | {corpus} | {len(samples)} | {median:.1f} | {p95(samples):.1f} "
            f"| {cpu:.1f} | {versus} |"
        )


def processes(
    commands: dict[str, Callable[[], Any]], runs: int, label: str
) -> tuple[list[tuple[str, str, list[float]]], float]:
    """Every command ``runs`` times, interleaved so that other load hits all alike."""
    pieces: dict[str, list[list[float]]] = {key: [] for key in commands}
    for command in commands.values():
        command()  # warm the page cache, the .pyc files and the recall cache
    for _ in range(runs):
        for key, command in commands.items():
            pieces[key].append(measure(command, 1, warmup=0))
    rows = []
    for key, parts in pieces.items():
        corpus = "-" if "`" in key else ("0" if "no corpus" in key else "500")
        rows.append((f"{key}, {label}", corpus, merged(parts)))
    baseline = statistics.median(merged(pieces["`python -c pass`"]))
    return rows, baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke test")
    args = parser.parse_args()
    lib_runs, proc_runs = (7, 7) if args.quick else (31, 21)
    dsh = cli_path()
    notes: list[str] = [f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"]
    with tempfile.TemporaryDirectory(prefix="dsh-compound-bench-") as temp:
        base = Path(temp)
        os.environ["DSH_HOME"] = str(base / "home")
        # An installed package has its bytecode compiled; a shell that sets
        # PYTHONDONTWRITEBYTECODE would make every process compile every module.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        sizes = {}
        for records, target in ((100, 820_000), (500, 4_150_000)):
            root = base / f"corpus-{records}"
            root.mkdir()
            sizes[records] = (root, generate(root, records, target))
            notes.append(f"corpus {records}: {records} records, {sizes[records][1]:,} bytes")
        time.sleep(corpus_index.SETTLED_NS / 1e9 + 0.5)  # records are cached once settled
        ws500 = str(sizes[500][0])
        started = time.perf_counter()
        recall(ws500, TYPICAL_EN, 10)
        notes.append(
            f"first recall of the 500-record corpus (reads every record, writes the cache): "
            f"{(time.perf_counter() - started) * 1000:.0f} ms"
        )

        library: list[tuple[str, str, list[float]]] = []
        queries = [("typical en", TYPICAL_EN), ("typical zh", TYPICAL_ZH), ("prompt", PROMPT)]
        for records, (root, _) in sizes.items():
            recall(str(root), TYPICAL_EN, 10)
            for label, query in queries:
                if cold_recall(str(root), query) != recall(str(root), query, 10):
                    raise SystemExit(f"cached and cold recall differ for {query!r}")
                cold = measure(lambda r=str(root), q=query: cold_recall(r, q), lib_runs)
                cached = measure(lambda r=str(root), q=query: recall(r, q, 10), lib_runs)
                library.append((f"recall library, {label}, cold scan", str(records), cold))
                library.append((f"recall library, {label}, cached", str(records), cached))
        for label, query in worst_queries().items():
            raw = len(query_terms(query, dedupe=False))
            notes.append(f"{label}: {raw} terms before dedup, {len(recall_terms(query))} distinct")
            if cold_recall(ws500, query) != recall(ws500, query, 10):
                raise SystemExit(f"cached and cold recall differ for {label}")
            cold = measure(lambda q=query: cold_recall(ws500, q), max(3, lib_runs // 3))
            cached = measure(lambda q=query: recall(ws500, q, 10), lib_runs)
            library.append((f"recall library, {label}, cold scan", "500", cold))
            library.append((f"recall library, {label}, cached", "500", cached))
        from dsh_compound.indexing import build_index

        started = time.perf_counter()
        built = build_index(ws500)
        notes.append(
            f"dsh-compound index, 500 records: {built['vectors']['encoded']} vectors encoded in "
            f"{time.perf_counter() - started:.1f} s (the model's weight cache built first)"
        )
        for label, query in queries:
            recall(ws500, query, 10, ranking="hybrid")
            hybrid = measure(lambda q=query: recall(ws500, q, 10, ranking="hybrid"), lib_runs)
            library.append((f"recall library, {label}, hybrid", "500", hybrid))
        library.append(
            (
                "check library (hashes every evidence file)",
                "500",
                measure(lambda: check(ws500), max(3, lib_runs // 5)),
            )
        )

        empty = base / "empty-workspace"
        empty.mkdir()
        payload = json.dumps(
            {
                "cwd": ws500,
                "hook_event_name": "UserPromptSubmit",
                "session_id": "bench",
                "prompt": PROMPT,
            }
        )
        commands = {
            "`python -c pass`": process(sys.executable, "-c", "pass"),
            "prompt hook process": process(dsh, "hook", "user-prompt-submit", stdin=payload),
            "prompt hook process, DSH_RANKING=hybrid": process(
                dsh, "hook", "user-prompt-submit", stdin=payload, env={"DSH_RANKING": "hybrid"}
            ),
            "session-start hook process": process(
                dsh, "hook", "session-start", stdin=json.dumps({"cwd": ws500})
            ),
            "recall CLI process, typical zh": process(
                dsh, "recall", "--workspace", ws500, "--query", TYPICAL_ZH
            ),
            "recall CLI process, no corpus": process(
                dsh, "recall", "--workspace", str(empty), "--query", TYPICAL_ZH
            ),
            "`dsh-compound --help` process": process(dsh, "--help"),
        }
        at_rest, pass_rest = processes(commands, proc_runs, "at rest")
        with busy_core():
            busy, pass_busy = processes(commands, proc_runs, "one core busy")

        capture_root = sizes[100][0]
        sources = sorted(
            str(p.relative_to(capture_root)) for p in (capture_root / "src").glob("*.py")
        )
        counter = iter(range(100_000))
        rng = random.Random(3)

        def capture_new() -> None:
            draft = make_draft(rng, 0, sources, 6)
            draft["id"] = f"bench-new-{next(counter)}"
            capture(capture_root, draft)

        writes = [("capture library, new record", "100", measure(capture_new, lib_runs))]
        draft = make_draft(rng, 1, sources, 6)
        draft["id"] = "bench-replaced"
        state = {"digest": capture(capture_root, draft)["digest"]}

        def capture_replace() -> None:
            state["digest"] = capture(capture_root, draft, replace=state["digest"])["digest"]

        writes.append(
            ("capture library, --replace (CAS)", "100", measure(capture_replace, lib_runs))
        )
        draft_path = capture_root / "bench-draft.json"

        def capture_cli() -> None:
            new = make_draft(rng, 2, sources, 6)
            new["id"] = f"bench-cli-{next(counter)}"
            draft_path.write_text(json.dumps(new, ensure_ascii=False), encoding="utf-8")
            process(dsh, "capture", "--workspace", str(capture_root), "--input", str(draft_path))()

        writes.append(("capture CLI process, new record", "100", measure(capture_cli, proc_runs)))
        notes.append(f"load average after: {os.getloadavg()[0]:.2f}")

    table(library, {})
    print()
    table([*at_rest, *busy], {"at rest": pass_rest, "one core busy": pass_busy})
    print()
    table(writes, {})
    print()
    for note in notes:
        print(f"- {note}")
    medians = {(name, corpus): statistics.median(s) for name, corpus, s in library + at_rest}
    typical = max(
        medians[(f"recall library, {label}, cached", "500")]
        for label in ("typical en", "typical zh")
    )
    worst = max(
        value
        for (name, _), value in medians.items()
        if name.startswith("recall library, worst") and name.endswith("cached")
    )
    hook = medians[("prompt hook process, at rest", "500")]
    hybrid_hook = medians[("prompt hook process, DSH_RANKING=hybrid, at rest", "500")]
    cpu = {
        name: statistics.median(CPU_SAMPLES[id(s)])
        for name, corpus, s in library
        if corpus == "500"
    }
    overhead = max(
        cpu[f"recall library, {label}, hybrid"] - cpu[f"recall library, {label}, cached"]
        for label, _ in queries
    )
    print()
    verdict(
        f"library recall, typical query, 500 records: {typical:.1f} ms", typical, LIBRARY_TARGET_MS
    )
    verdict(f"library recall, worst query, 500 records: {worst:.1f} ms", worst, WORST_TARGET_MS)
    verdict(f"prompt hook, whole process, at rest: {hook:.1f} ms", hook, HOOK_TARGET_MS)
    verdict(
        f"prompt hook with DSH_RANKING=hybrid, whole process, at rest: {hybrid_hook:.1f} ms",
        hybrid_hook,
        HYBRID_HOOK_TARGET_MS,
    )
    verdict(
        f"hybrid ranking's CPU per query in a long-lived process, 500 records: +{overhead:.1f} ms",
        overhead,
        HYBRID_OVERHEAD_TARGET_MS,
    )


def verdict(measured: str, value: float, target: float) -> None:
    print(f"- {measured} (target < {target:g} ms): {'PASS' if value < target else 'FAIL'}")


if __name__ == "__main__":
    main()

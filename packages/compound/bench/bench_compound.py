"""Benchmark dsh-compound: recall (library and whole CLI process), capture, check.

Builds two corpora (100 and 500 records, the larger just under the 4 MiB scan bound; half
Chinese, half English, with real evidence files), runs each operation several times and
prints a Markdown table of median and p95 wall times. The baseline is the
``dsh-compound --help`` process measured in the same run: a whole ``recall`` process is
compared with it, since both pay the same interpreter and Typer start-up.

    uv run python packages/compound/bench/bench_compound.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from corpus import CHINESE, generate, make_draft

from dsh_common.text import query_terms
from dsh_compound import capture, check, recall
from dsh_compound.retrieval import recall_terms

TYPICAL_EN = "database connection pool timeout"
TYPICAL_ZH = "数据库连接池超时"


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


def process(*args: str) -> Callable[[], Any]:
    def run() -> None:
        result = subprocess.run(args, capture_output=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"{args} failed: {result.stderr.decode()}")

    return run


def worst_queries() -> dict[str, str]:
    rng = random.Random(11)
    vocabulary = "".join(CHINESE)
    corpus_chars = "".join(rng.choice(vocabulary) for _ in range(500))
    # Rare, unrelated ideographs are segmented one by one: 500 segments + 499 bigrams.
    rare = "".join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(500))
    return {"worst: 500 zh chars (corpus words)": corpus_chars, "worst: 500 zh chars (rare)": rare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke test")
    args = parser.parse_args()
    lib_runs, proc_runs = (5, 5) if args.quick else (30, 20)
    dsh = cli_path()
    rows: list[tuple[str, str, list[float]]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="dsh-compound-bench-") as temp:
        base = Path(temp)
        sizes = {}
        for records, target in ((100, 820_000), (500, 4_150_000)):
            root = base / f"corpus-{records}"
            root.mkdir()
            sizes[records] = (root, generate(root, records, target))
            notes.append(f"corpus {records}: {records} records, {sizes[records][1]:,} bytes")
        ws500 = str(sizes[500][0])

        worst = worst_queries()["worst: 500 zh chars (rare)"]
        # Whole processes are measured interleaved (help, typical, worst, help, ...) so
        # that load from anything else on the machine hits the baseline and the recall
        # processes alike.
        pieces: dict[str, list[list[float]]] = {"help": [], "empty": [], "typical": [], "worst": []}
        empty = base / "empty-workspace"
        empty.mkdir()
        commands = {
            "help": process(dsh, "--help"),
            "empty": process(dsh, "recall", "--workspace", str(empty), "--query", TYPICAL_ZH),
            "typical": process(dsh, "recall", "--workspace", ws500, "--query", TYPICAL_ZH),
            "worst": process(dsh, "recall", "--workspace", ws500, "--query", worst),
        }
        for command in commands.values():
            command()  # warm the page cache and .pyc files
        for _ in range(proc_runs):
            for key, command in commands.items():
                pieces[key].append(measure(command, 1, warmup=0))
        interleaved = {key: merged(parts) for key, parts in pieces.items()}
        baseline = interleaved["help"]
        rows.append(("`dsh-compound --help` process (baseline)", "-", baseline))
        for records, (root, _) in sizes.items():
            for label, query in (("typical en", TYPICAL_EN), ("typical zh", TYPICAL_ZH)):
                samples = measure(lambda r=root, q=query: recall(r, q, 10), lib_runs)
                rows.append((f"recall library, {label}", str(records), samples))
        for label, query in worst_queries().items():
            raw = len(query_terms(query, dedupe=False))
            notes.append(f"{label}: {raw} terms before dedup, {len(recall_terms(query))} distinct")
            samples = measure(lambda q=query: recall(ws500, q, 10), lib_runs)
            rows.append((f"recall library, {label}", "500", samples))
        rows.append(("recall CLI process, no corpus (start-up only)", "0", interleaved["empty"]))
        rows.append(("recall CLI process, typical zh", "500", interleaved["typical"]))
        rows.append(("recall CLI process, worst (500 zh chars)", "500", interleaved["worst"]))
        rows.append(
            (
                "check library (hashes every evidence file)",
                "500",
                measure(lambda: check(ws500), max(3, lib_runs // 5)),
            )
        )

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

        rows.append(("capture library, new record", "100", measure(capture_new, lib_runs)))
        draft = make_draft(rng, 1, sources, 6)
        draft["id"] = "bench-replaced"
        state = {"digest": capture(capture_root, draft)["digest"]}

        def capture_replace() -> None:
            state["digest"] = capture(capture_root, draft, replace=state["digest"])["digest"]

        rows.append(("capture library, --replace (CAS)", "100", measure(capture_replace, lib_runs)))
        draft_path = capture_root / "bench-draft.json"

        def capture_cli() -> None:
            new = make_draft(rng, 2, sources, 6)
            new["id"] = f"bench-cli-{next(counter)}"
            draft_path.write_text(json.dumps(new, ensure_ascii=False), encoding="utf-8")
            process(dsh, "capture", "--workspace", str(capture_root), "--input", str(draft_path))()

        rows.append(("capture CLI process, new record", "100", measure(capture_cli, proc_runs)))

    base_median = statistics.median(baseline)
    print(
        "| operation | corpus | runs | median ms | p95 ms | median CPU ms | vs `--help` process |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, corpus, samples in rows:
        median = statistics.median(samples)
        versus = (
            f"{median / base_median:.2f}x ({median - base_median:+.0f} ms)"
            if "process" in name and "baseline" not in name
            else ("1.00x" if "baseline" in name else "-")
        )
        cpu = statistics.median(CPU_SAMPLES[id(samples)])
        print(
            f"| {name} | {corpus} | {len(samples)} | {median:.1f} | {p95(samples):.1f} "
            f"| {cpu:.1f} | {versus} |"
        )
    print()
    for note in notes:
        print(f"- {note}")
    medians = {(name, corpus): statistics.median(s) for name, corpus, s in rows}
    typical = max(
        medians[("recall library, typical en", "500")],
        medians[("recall library, typical zh", "500")],
    )
    worst_lib = max(v for (n, c), v in medians.items() if n.startswith("recall library, worst"))
    typical_gap = medians[("recall CLI process, typical zh", "500")] - base_median
    worst_gap = medians[("recall CLI process, worst (500 zh chars)", "500")] - base_median
    print()
    verdict(f"library recall, typical query, 500 records: {typical:.1f} ms", typical < 50, "< 50")
    verdict(
        f"library recall, worst query, 500 records: {worst_lib:.1f} ms", worst_lib < 250, "< 250"
    )
    verdict(
        f"recall CLI, typical query, minus --help: {typical_gap:+.1f} ms",
        typical_gap <= 100,
        "<= 100",
    )
    verdict(
        f"recall CLI, worst query, minus --help: {worst_gap:+.1f} ms", worst_gap <= 100, "<= 100"
    )


def verdict(measured: str, passed: bool, target: str) -> None:
    print(f"- {measured} (target {target} ms): {'PASS' if passed else 'FAIL'}")


if __name__ == "__main__":
    main()

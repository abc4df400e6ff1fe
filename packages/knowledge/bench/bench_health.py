"""Benchmark: health of 16 items x 16 Git-backed evidence in a 10,000-file repository.

Builds (once per run, or reuses ``--cache-dir``) a repository of 10,000 committed files, then
edits and deletes some of them so the 256 evidence entries are a mix of current, changed and
missing. It measures, in the same run:

* ``batched``   - ``check_health`` on the 16-item batch (one Git inspection for all 256);
* ``per item``  - 16 separate ``check_freshness`` calls (what a caller looping over items gets);
* ``naive``     - one ``git diff --quiet <commit> -- <path>`` process per evidence entry, the
                  baseline a straightforward implementation would spawn.

and prints a Markdown table with the median and p95 wall time and the git processes spawned.

    uv run python packages/knowledge/bench/bench_health.py [--runs 7] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_common.git import GitRunner
from dsh_knowledge.freshness import evaluate_freshness_batch
from dsh_knowledge.health import check_health_detailed

FILE_COUNT = 10_000
ITEMS = 16
EVIDENCE_PER_ITEM = 16
IDENTITY = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(IDENTITY)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    out = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def file_path(number: int) -> str:
    return f"pkg{number // 100:03d}/module_{number:05d}.py"


def build_repository(root: Path) -> tuple[Path, str]:
    """A 10,000-file repository at ``root`` (reused when already built) and its commit."""
    marker = root / ".bench-ready"
    if marker.exists():
        return root, marker.read_text().strip()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    # No background auto-gc racing the copy below; pack once, as a real repository is.
    _git(root, "config", "gc.auto", "0")
    for number in range(FILE_COUNT):
        target = root / file_path(number)
        target.parent.mkdir(exist_ok=True)
        target.write_text(
            f'"""Module {number}."""\n\nVALUE = {number}\n\n\ndef compute() -> int:\n'
            f"    return VALUE * 2\n"
        )
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "10,000 files")
    commit = _git(root, "rev-parse", "HEAD")
    _git(root, "repack", "-adq")
    marker.write_text(commit)
    _git(root, "update-index", "--refresh")
    return root, commit


def evidence_numbers() -> list[list[int]]:
    """16 x 16 distinct files spread over the repository."""
    step = FILE_COUNT // (ITEMS * EVIDENCE_PER_ITEM)
    return [
        [(i * EVIDENCE_PER_ITEM + j) * step for j in range(EVIDENCE_PER_ITEM)] for i in range(ITEMS)
    ]


def dirty_worktree(repo: Path, numbers: list[list[int]]) -> dict[str, int]:
    """Edit every 5th and delete every 11th evidence file: a realistic mix of states."""
    counts = {"changed": 0, "missing": 0}
    flat = [n for row in numbers for n in row]
    for position, number in enumerate(flat):
        target = repo / file_path(number)
        if position % 11 == 3:
            if target.exists():
                target.unlink()
            counts["missing"] += 1
        elif position % 5 == 1:
            target.write_text(f'"""Module {number}, edited."""\nVALUE = -1\n')
            counts["changed"] += 1
    counts["current"] = len(flat) - counts["changed"] - counts["missing"]
    return counts


def items_for(commit: str, numbers: list[list[int]]) -> list[dict[str, Any]]:
    items = []
    for index, row in enumerate(numbers):
        evidence = [
            {
                "type": "file",
                "source": file_path(n),
                "timestamp": "2026-11-30T12:00:00.000Z",
                "gitProvenance": {"commit": commit, "path": file_path(n)},
            }
            for n in row
        ]
        items.append(
            {
                "id": f"item-{index:02d}",
                "type": "fact",
                "content": f"Module group {index} doubles its value.",
                "scope": {"workspace": "/bench"},
                "status": "verified",
                "creationOrigin": "explicit",
                "evidence": evidence,
                "createdAt": "2026-11-30T12:00:00.000Z",
                "updatedAt": "2026-11-30T12:00:00.000Z",
            }
        )
    return items


def naive_health(repo: Path, items: list[dict[str, Any]]) -> tuple[dict[str, int], int]:
    """One git process per evidence entry: ``git diff --quiet <commit> -- <path>``."""
    runner = GitRunner(repo, timeout=10, budget=600)
    counts = {"current": 0, "potentially_stale": 0}
    for item in items:
        for evidence in item["evidence"]:
            provenance = evidence["gitProvenance"]
            result = runner.run(
                [
                    "diff",
                    "--quiet",
                    "--no-ext-diff",
                    "--no-textconv",
                    provenance["commit"],
                    "--",
                    provenance["path"],
                ],
                check=False,
            )
            counts["current" if result.returncode == 0 else "potentially_stale"] += 1
    return counts, runner.commands_run


def measure(action: Callable[[], int], runs: int) -> tuple[list[float], int]:
    action()  # warm the page cache and git's object lookups
    times = []
    processes = 0
    for _ in range(runs):
        started = time.perf_counter()
        processes = action()
        times.append((time.perf_counter() - started) * 1000)
    return times, processes


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()

    base = args.cache_dir or Path(tempfile.mkdtemp(prefix="dsh-bench-health-"))
    started = time.perf_counter()
    reused = (base / "clean-10000" / ".bench-ready").exists()
    clean, commit = build_repository(base / "clean-10000")
    built = (
        "reused from --cache-dir" if reused else f"built in {time.perf_counter() - started:.1f}s"
    )
    # Work on a copy so the cached clean repository can be reused by the next run.
    work = base / "work"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(clean, work, symlinks=True)
    numbers = evidence_numbers()
    mix = dirty_worktree(work, numbers)
    items = items_for(commit, numbers)

    def batched() -> int:
        results, processes = check_health_detailed(items, work)
        assert len(results) == ITEMS
        return processes

    def per_item() -> int:
        total = 0
        for item in items:
            total += evaluate_freshness_batch([item], work).commands_run
        return total

    def naive() -> int:
        _, processes = naive_health(work, items)
        return processes

    # The three approaches must agree before their speed means anything.
    results, _ = check_health_detailed(items, work)
    batched_states = [e["status"] for r in results for e in r["evidence"]]
    naive_counts, _ = naive_health(work, items)
    assert batched_states.count("current") == naive_counts["current"] == mix["current"]

    rows = []
    naive_times, naive_processes = measure(naive, max(3, args.runs // 2))
    naive_median = statistics.median(naive_times)
    for label, action, runs in (
        ("batched `check_health` (16 x 16)", batched, args.runs),
        ("per item: 16 x `check_freshness`", per_item, args.runs),
    ):
        times, processes = measure(action, runs)
        rows.append((label, times, processes))
    rows.append(("naive: 1 git process per evidence", naive_times, naive_processes))

    print(
        f"Repository: {FILE_COUNT:,} files ({built}); evidence: "
        f"{ITEMS} items x {EVIDENCE_PER_ITEM} = {ITEMS * EVIDENCE_PER_ITEM} "
        f"({mix['current']} current, {mix['changed']} changed, {mix['missing']} missing); "
        f"{args.runs} runs (naive {max(3, args.runs // 2)})."
    )
    print()
    print("| approach | median ms | p95 ms | git processes | vs naive (median) |")
    print("|---|---:|---:|---:|---:|")
    for label, times, processes in rows:
        median = statistics.median(times)
        ratio = "baseline" if times is naive_times else f"{naive_median / median:.1f}x faster"
        print(f"| {label} | {median:.1f} | {p95(times):.1f} | {processes} | {ratio} |")
    if args.cache_dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

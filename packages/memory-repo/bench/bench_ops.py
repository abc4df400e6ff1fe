"""Benchmark the payload writers: ``clear`` and ``migrateLegacy`` at 100 and 1,000 records.

Each measurement runs on a fresh copy of a prepared repository (copying is not timed),
several times; the table shows the median and p95 in milliseconds and the ratio against a
baseline measured in the same run: the same change made the naive way with porcelain
(``git add -A`` + ``git commit``), which takes no lock, makes no recovery point, writes no
journal and walks the whole index.

    uv run python packages/memory-repo/bench/bench_ops.py [--runs 5] [--sizes 100,1000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory.service import MemoryService

WORDS_EN = (
    "cache",
    "retry",
    "deploy",
    "schema",
    "index",
    "queue",
    "token",
    "budget",
    "rollback",
    "latency",
    "codegen",
    "pipeline",
    "review",
    "lint",
    "migration",
)
WORDS_ZH = ("缓存", "雪崩", "部署", "索引", "队列", "回滚", "延迟", "流水线", "审查", "迁移")


def _identity(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
    os.environ["HOME"] = str(home)
    os.environ["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def build_template(base: Path, size: int) -> Path:
    """A memory repository with ``size`` committed legacy records (mixed English/Chinese)."""
    rng = random.Random(size)
    root = base / f"template-{size}"
    MemoryService(root).init()
    for index in range(size):
        folder = ("handbook", "rollouts", "archive")[index % 3]
        words = [rng.choice(WORDS_EN) for _ in range(30)] + [
            rng.choice(WORDS_ZH) for _ in range(10)
        ]
        rng.shuffle(words)
        path = root / folder / f"topic-{index // 50}" / f"note-{index}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {index}\n\n{' '.join(words)}\n", encoding="utf-8")
    (root / "summary.md").write_text("# Summary\n\n- bench corpus\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench corpus")
    return root


def _fresh(template: Path, scratch: Path) -> Path:
    target = scratch / f"run-{time.monotonic_ns()}"
    shutil.copytree(template, target, symlinks=True)
    return target


def _time(
    template: Path,
    scratch: Path,
    runs: int,
    prepare: Callable[[Path], None] | None,
    action: Callable[[Path], None],
) -> list[float]:
    samples: list[float] = []
    for _ in range(runs):
        root = _fresh(template, scratch)
        if prepare is not None:
            prepare(root)
        started = time.perf_counter()
        action(root)
        samples.append((time.perf_counter() - started) * 1000)
        shutil.rmtree(root)
    return samples


def migrate(root: Path) -> None:
    result = MemoryService(root).migrate_legacy(False)
    assert result["ok"] and result["value"]["status"] == "applied", result


def migrate_baseline(root: Path) -> None:
    # The same bytes written naively, then porcelain add/commit.
    for path in sorted(root.glob("*/**/*.md")):
        if path.parts[-3] in ("handbook", "rollouts", "archive") or "topic-" in str(path):
            text = path.read_text(encoding="utf-8")
            path.write_text("---\nschema_version: 1\nid: legacy-x\n---\n\n" + text)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "baseline migrate")


def clear(root: Path) -> None:
    result = MemoryService(root).clear("DELETE_MEMORY")
    assert result["ok"] and result["value"]["clearedFileCount"] > 0, result


def clear_baseline(root: Path) -> None:
    _git(root, "rm", "-r", "-q", "--", "handbook", "rollouts", "archive")
    (root / "summary.md").write_text("")
    _git(root, "add", "summary.md")
    _git(root, "commit", "-q", "-m", "baseline clear")


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="100,1000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="dsh-memory-bench-") as temp:
        base = Path(temp)
        _identity(base / "home")
        rows = []
        for size in sizes:
            template = build_template(base, size)
            dirty = lambda root: (root / "handbook" / "dirty.md").write_text("dirty\n")  # noqa: E731
            cases = [
                ("migrateLegacy (apply)", None, migrate, migrate_baseline),
                ("clear (clean HEAD)", None, clear, clear_baseline),
                ("clear (dirty payload)", dirty, clear, clear_baseline),
            ]
            for name, prepare, action, baseline in cases:
                ours = _time(template, base, args.runs, prepare, action)
                naive = _time(template, base, args.runs, prepare, baseline)
                rows.append(
                    (name, size, statistics.median(ours), _p95(ours), statistics.median(naive))
                )
    print(f"runs per cell: {args.runs}; baseline = porcelain `git add -A`/`git rm` + `git commit`")
    print()
    print("| operation | records | median ms | p95 ms | baseline median ms | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, size, median, p95, base_median in rows:
        print(
            f"| {name} | {size:,} | {median:.1f} | {p95:.1f} | {base_median:.1f} "
            f"| {median / base_median:.2f}x |"
        )


if __name__ == "__main__":
    main()

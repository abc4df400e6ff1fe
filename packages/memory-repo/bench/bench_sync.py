"""Benchmark the write path at 1,000 modified records: sync, preview apply, rollback.

A repository with 1,000 committed records (about 3 KiB each, 3 MiB in all: inside the 5 MiB
change limit) is copied fresh for every measurement (copying is not timed). Timed:

- **sync**: ``dsh-memory-sync`` end to end through the library - candidate scan, redaction
  of one session log, staging copy, the agent (a real process appending a line to every
  record), validation, recovery point, apply commit, work tree, journal commit;
- **preview apply**: ``applyPreview`` of a stored preview holding the same change;
- **rollback**: ``rollback`` of the sync run;
- **baseline**: the same modification committed with porcelain ``git add -A && git commit``
  (no staging, no validation, no lock, no recovery point, no journal).

    uv run python packages/memory-repo/bench/bench_sync.py [--runs 3] [--records 1000]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory.service import MemoryService
from dsh_memory.sync.sessions import SessionSources
from dsh_memory.sync.syncrun import SyncOptions, run_sync

AGENT = Path(__file__).with_name("sync_agent.py")
BODY = ("The codegen pipeline retries flaky steps with a bounded budget. " * 48).strip()


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def build_template(base: Path, records: int) -> Path:
    root = base / "template"
    MemoryService(root).init()
    for index in range(records):
        path = root / "handbook" / f"topic-{index // 100}" / f"note-{index}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nschema_version: 1\nid: bench/note-{index}\ntype: fact\n---\n{BODY}\n",
            encoding="utf-8",
        )
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench corpus")
    old = time.time() - 3 * 3600
    os.utime(root / ".last-sync", (old, old))
    return root


def _session(base: Path) -> SessionSources:
    sessions = base / "sessions"
    log = sessions / "s1" / "session.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text('{"type": "session", "id": "s1"}\n')
    moment = time.time() - 2 * 3600
    os.utime(log, (moment, moment))
    return SessionSources(sessions, base / "no-claude", base / "no-codex")


def _options(root: Path, sources: SessionSources, **kwargs: object) -> SyncOptions:
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(AGENT))}"
    return SyncOptions(
        root=root,
        sources=sources,
        env=dict(os.environ),
        agent="command",
        agent_command=command,
        **kwargs,  # type: ignore[arg-type]
    )


def _copy(template: Path, work: Path) -> Path:
    target = work / f"copy-{time.monotonic_ns()}"
    shutil.copytree(template, target, symlinks=True)
    old = time.time() - 3 * 3600
    os.utime(target / ".last-sync", (old, old))
    return target


Timer = Callable[[str, Callable[[], object]], object]


def _one_round(template: Path, work: Path, sources: SessionSources, run: int, timed: Timer) -> None:
    root = _copy(template, work)
    result = timed("sync", lambda: run_sync(_options(root, sources)))
    assert isinstance(result, dict) and result["status"] == "applied", result
    service = MemoryService(root)
    undone = timed("rollback", lambda: service.rollback(result["runId"], "ROLLBACK_MEMORY"))
    assert isinstance(undone, dict) and undone["ok"], undone
    preview_root = _copy(template, work)
    preview_id = f"20261201T000000Z-{run:08x}"
    stored = run_sync(_options(preview_root, sources, mode="preview", preview_id=preview_id))
    assert stored["status"] == "pending", stored
    applied = timed("preview apply", lambda: MemoryService(preview_root).apply_preview(preview_id))
    assert isinstance(applied, dict) and applied["ok"], applied
    plain = _copy(template, work)
    subprocess.run([sys.executable, str(AGENT)], cwd=plain, check=True)
    timed(
        "baseline",
        lambda: (_git(plain, "add", "-A"), _git(plain, "commit", "-q", "-m", "porcelain")),
    )


def measure(
    template: Path, work: Path, sources: SessionSources, runs: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "sync": [],
        "preview apply": [],
        "rollback": [],
        "baseline": [],
    }

    def timed(name: str, action: Callable[[], object]) -> object:
        started = time.perf_counter()
        result = action()
        times[name].append((time.perf_counter() - started) * 1000)
        return result

    for run in range(runs):
        _one_round(template, work, sources, run, timed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-memory-bench-sync-") as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        os.environ["HOME"] = str(home)
        os.environ["DSH_HOME"] = str(base / "dsh")
        os.environ["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
        template = build_template(base, args.records)
        sources = _session(base)
        times = measure(template, base, sources, args.runs)
    baseline = statistics.median(times["baseline"])
    print(f"{args.records} modified records, {args.runs} runs each\n")
    print("| operation | median ms | max ms | baseline median ms | ratio | median under 3 s |")
    print("|---|---:|---:|---:|---:|---|")
    for name in ("sync", "preview apply", "rollback", "baseline"):
        median = statistics.median(times[name])
        under = "yes" if median < 3000 else "NO"
        print(
            f"| {name} | {median:.1f} | {max(times[name]):.1f} | {baseline:.1f} |"
            f" {median / baseline:.2f}x | {under} |"
        )


if __name__ == "__main__":
    main()

"""Benchmark pull through a Git remote: a merge of 1,000 changed records each side, an
up-to-date pull, and plain ``git pull`` of the same states in the same run.

Two machines share one memory of ``2 x --records`` records (about 3 KiB each) through a
bare repository on disk. For every measurement the three repositories are copied fresh
(not timed), then machine A changes its half of the records (one journaled run, ``adopt``)
and pushes, machine B changes the other half (one journaled run too), and B pulls. Timed:

- **pull (merge)**: ``MemoryService.pull()`` on B - fetch, the path-by-path merge of 2 x
  records changes, the id check, the merge commit, the CAS, live index, work tree (the
  records A changed) and journal commit, under the operation lock with its recovery point;
- **pull (merge, 100 conflicts)**: the same with 100 records changed on both sides (each
  kept twice: ours at the path, theirs beside it);
- **pull (up-to-date)**: B pulls again: one fetch that brings nothing, no write; and the
  same as the installed ``dsh-memory pull`` command (a new process each time);
- **git pull (merge)** / **git pull (up-to-date)**: the baseline, plain ``git pull
  --no-rebase --no-edit -X ours`` from the same bare repository on a copy of the same B (no
  lock, no recovery point, no journal, no conflict handling - ``-X ours`` settles the
  journal's ``last-run.json`` both runs rewrote; a record conflict would silently keep
  ours, so the conflict case has no baseline).

    uv run python packages/memory-repo/bench/bench_remote.py [--runs 5] [--records 1000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dsh_memory.service import MemoryService
from dsh_memory.store.initialize import initialize_repository

#: The baseline. ``-X ours``: both machines' runs rewrote the journal's ``last-run.json``,
#: a conflict that would stop a plain ``git pull`` (ours recomputes it).
GIT_PULL = ("pull", "-q", "--no-rebase", "--no-edit", "-X", "ours")

BODY = ("The codegen pipeline retries flaky steps with a bounded budget. " * 48).strip()


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def _record(index: int, note: str) -> str:
    return f"---\nschema_version: 1\nid: bench/note-{index}\ntype: fact\n---\n{BODY}\n{note}\n"


def _path(root: Path, index: int) -> Path:
    return root / "handbook" / f"topic-{index // 100}" / f"note-{index}.md"


def _ok(service: MemoryService, envelope: dict[str, object]) -> dict[str, object]:
    if not envelope.get("ok"):
        raise SystemExit(f"failed: {envelope} {service.last_error_message}")
    value = envelope["value"]
    assert isinstance(value, dict)
    return value


def build_templates(base: Path, records: int) -> Path:
    """``base/template/{remote.git, a, b}``: two machines in step, 2 x records records."""
    template = base / "template"
    remote = template / "remote.git"
    template.mkdir()
    _git(template, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    a, b = template / "a", template / "b"
    for name, root in (("a", a), ("b", b)):
        root.mkdir()
        _git(root, "init", "-q", "--initial-branch=main")
        _git(root, "config", "user.name", f"Machine {name}")
        _git(root, "config", "user.email", f"{name}@example.com")
        initialize_repository(root)
    for index in range(2 * records):
        path = _path(a, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_record(index, "base"), encoding="utf-8")
    # The corpus is the shared starting point, not a change being measured: one plain
    # commit (adopt takes at most 50 new files in a run).
    _git(a, "add", "-A")
    _git(a, "commit", "-q", "-m", "bench corpus")
    sa, sb = MemoryService(a), MemoryService(b)
    for service in (sa, sb):
        _ok(service, service.set_remote(str(remote)))
    _ok(sa, sa.push())
    _ok(sb, sb.pull())  # adopts the corpus
    _ok(sb, sb.push())
    _ok(sa, sa.pull())  # B's pull run: a journal-only fast-forward
    return template


def _copy(template: Path, work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(template, work, symlinks=True)
    for root in (work / "a", work / "b"):
        # The copies point at their own remote.
        _git(root, "config", "remote.origin.url", str(work / "remote.git"))
    return work


def _diverge(work: Path, records: int, conflicts: int) -> None:
    """A changes records [0, records) and pushes; B changes [records, 2 x records) and the
    first ``conflicts`` of A's (those are changed on both sides). Each side's changes are
    one journaled run (``adopt``, as a person's edits or a sync would be), so the pull
    merges two journals as it does between real machines."""
    a, b = work / "a", work / "b"
    for index in range(records):
        _path(a, index).write_text(_record(index, "changed on A"), encoding="utf-8")
    sa = MemoryService(a)
    _ok(sa, sa.adopt())
    _ok(sa, sa.push())
    for index in [*range(records, 2 * records), *range(conflicts)]:
        _path(b, index).write_text(_record(index, "changed on B"), encoding="utf-8")
    sb = MemoryService(b)
    _ok(sb, sb.adopt())


Timer = Callable[[str, Callable[[], object]], None]


def one_round(template: Path, scratch: Path, records: int, timed: Timer) -> None:
    work = _copy(template, scratch / "work")
    _diverge(work, records, 0)
    baseline = scratch / "baseline"
    if baseline.exists():
        shutil.rmtree(baseline)
    shutil.copytree(work / "b", baseline, symlinks=True)
    remote = str(work / "remote.git")
    service = MemoryService(work / "b")
    timed("pull (merge)", lambda: _ok(service, service.pull()))
    timed("git pull (merge)", lambda: _git(baseline, *GIT_PULL, remote, "main"))
    timed("pull (up-to-date)", lambda: _ok(service, service.pull()))
    command = [str(Path(sys.executable).parent / "dsh-memory"), "--root", str(work / "b"), "pull"]
    timed(
        "dsh-memory pull (up-to-date)",
        lambda: subprocess.run(command, check=True, capture_output=True),
    )
    timed("git pull (up-to-date)", lambda: _git(baseline, *GIT_PULL, remote, "main"))
    work = _copy(template, scratch / "work")
    _diverge(work, records, 100)
    service = MemoryService(work / "b")

    def conflicted() -> None:
        result = _ok(service, service.pull())
        conflicts = result["conflicts"]
        assert isinstance(conflicts, list) and len(conflicts) == 100, result

    timed("pull (merge, 100 conflicts)", conflicted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=1000)
    args = parser.parse_args()
    times: dict[str, list[float]] = {}

    def timed(name: str, action: Callable[[], object]) -> None:
        started = time.perf_counter()
        action()
        times.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        os.environ.setdefault("GIT_AUTHOR_NAME", "Bench")
        template = build_templates(base, args.records)
        for _ in range(args.runs):
            one_round(template, base, args.records, timed)
    goals = {
        "pull (merge)": 3000.0,
        "pull (merge, 100 conflicts)": 3000.0,
        "pull (up-to-date)": 300.0,
        "dsh-memory pull (up-to-date)": 300.0,
    }
    baselines = {
        "pull (merge)": "git pull (merge)",
        "pull (up-to-date)": "git pull (up-to-date)",
        "pull (merge, 100 conflicts)": "git pull (merge)",
        "dsh-memory pull (up-to-date)": "git pull (up-to-date)",
    }
    print(
        f"{args.records} changed records on each side ({2 * args.records} in the memory),"
        f" {args.runs} runs each\n"
    )
    print("| operation | median ms | max ms | baseline | baseline median ms | ratio | goal |")
    print("|---|---:|---:|---|---:|---:|---|")
    for name in (
        "pull (merge)",
        "pull (merge, 100 conflicts)",
        "pull (up-to-date)",
        "dsh-memory pull (up-to-date)",
        "git pull (merge)",
        "git pull (up-to-date)",
    ):
        median = statistics.median(times[name])
        base_name = baselines.get(name, name)
        base_median = statistics.median(times[base_name])
        goal = goals.get(name)
        verdict = (
            "—" if goal is None else ("met" if median < goal else "MISSED") + f" (< {goal:g} ms)"
        )
        print(
            f"| {name} | {median:.1f} | {max(times[name]):.1f} | {base_name} |"
            f" {base_median:.1f} | {median / base_median:.2f}x | {verdict} |"
        )


if __name__ == "__main__":
    main()

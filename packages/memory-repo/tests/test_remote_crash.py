"""A pull killed at every step: after the fetch, around the merge commit and the CAS, before
and after the journal - as the installed ``dsh-memory pull``, SIGKILLed by the test-only
``DSH_MEMORY_TEST_KILL_AT`` (no ``finally``, no lock release).

After each kill ``git fsck --strict`` passes, HEAD is the old commit or the pull's own (the
merge, or the fetched commit), this machine's watermark is untouched, ``health`` reports the
interrupted run, and ``recover`` leaves the work tree equal to HEAD, the run journaled and
health clean; the next pull then finishes the exchange.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from dsh_memory.write.crashpoints import AFTER_CAS, AFTER_FETCH, AFTER_JOURNAL, PIPELINE_POINTS

from .conftest import Machine

POINTS = (AFTER_FETCH, *PIPELINE_POINTS)
MOVED = frozenset(PIPELINE_POINTS[PIPELINE_POINTS.index(AFTER_CAS) :])


def killed_pull(machine: Machine, point: str) -> subprocess.CompletedProcess[str]:
    env = commands.environ(DSH_MEMORY_TEST_KILL_AT=point)
    return commands.run("dsh-memory", "--root", str(machine.root), "pull", env=env)


def active_run(root: Path) -> dict[str, Any] | None:
    path = root / ".sync" / "active-run.json"
    return json.loads(path.read_text()) if path.exists() else None


def diverged(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    """B must merge A's record with its own."""
    a, b = machines("a"), machines("b")
    a.record("handbook/first.md", "project/first", "First.")
    a.push()
    b.pull()
    b.push()
    a.pull()
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b.record("handbook/b.md", "project/b", "B.")
    return a, b


def fast_forward(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    a, b = diverged(machines)
    b.remove("handbook/b.md")
    b.pull()
    b.push()
    a.pull()
    a.record("handbook/a2.md", "project/a2", "A2.")
    a.push()
    return a, b


def adoption(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    a = machines("a")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    return a, machines("b")


SCENARIOS = {"merge": diverged, "fast-forward": fast_forward, "adoption": adoption}


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_pull_killed_at_each_step_is_recovered(
    scenario: str, point: str, machines: Callable[..., Machine]
) -> None:
    a, b = SCENARIOS[scenario](machines)
    old_head, old_payload = b.head(), b.committed()
    watermark = (b.root / ".last-sync").read_bytes()
    killed = killed_pull(b, point)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    git(b.root, "fsck", "--strict")
    assert (b.root / ".last-sync").read_bytes() == watermark
    active = active_run(b.root)
    health = b.ok(b.service.health())
    if point == AFTER_FETCH:
        # Nothing of the memory changed; no lock was taken yet.
        assert b.head() == old_head and active is None
        assert health["needsManualRecovery"] is False, health
    elif point in MOVED:
        assert active is not None
        assert (
            git(b.root, "merge-base", "--is-ancestor", active["apply_commit"], "HEAD", check=False)
            == ""
        )
        assert b.committed(active["apply_commit"]) == b.committed()
        # Killed after its journal commit, the run is finished: only litter is left.
        assert health["needsManualRecovery"] is (point != AFTER_JOURNAL), health
        if scenario == "merge" and point != "after-journal":
            assert health["headAheadOfJournal"] is True
    else:
        assert b.head() == old_head and b.committed() == old_payload
        assert active is not None and health["needsManualRecovery"] is True
    if point not in (AFTER_FETCH, AFTER_JOURNAL):
        assert b.error(b.service.pull()) == "interrupted-run"
        assert b.error(b.service.push()) == "interrupted-run"
    if point != AFTER_FETCH:
        recovered = b.ok(b.service.recover("RECOVER_MEMORY"))
        assert recovered["status"] == "recovered", recovered
        git(b.root, "fsck", "--strict")
        health = b.ok(b.service.health())
        assert health["needsManualRecovery"] is False, health
        assert health["activeRun"] is None and health["operationLock"] is None
        record = next(r for r in b.runs() if r["run_id"] == active["run_id"])  # type: ignore[index]
        expected = ("applied",) if point in MOVED else ("interrupted", "failed")
        assert record["operation"] == "pull" and record["status"] in expected, record
    assert b.files() == b.committed(), "the work tree equals HEAD"
    assert (b.root / ".last-sync").read_bytes() == watermark
    # The exchange then completes: one more pull, a push, and A sees everything.
    b.pull()
    b.push()
    a.pull()
    assert a.files() == b.files()
    assert set(a.committed()) >= set(old_payload)


def journal_only(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    """A's pull fetches only B's journal commit (B's own pull run): no payload change."""
    a, b = machines("a"), machines("b")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b.pull()
    b.push()
    return b, a


@pytest.mark.parametrize("point", POINTS[: POINTS.index("after-index") + 1])
def test_a_journal_only_fast_forward_killed_is_recovered(
    point: str, machines: Callable[..., Machine]
) -> None:
    b, a = journal_only(machines)
    old = a.head()
    killed = killed_pull(a, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    git(a.root, "fsck", "--strict")
    assert a.head() in (old, b.head())
    if point != AFTER_FETCH:
        a.ok(a.service.recover("RECOVER_MEMORY"))
    assert a.ok(a.service.health())["needsManualRecovery"] is False
    assert a.files() == a.committed() == b.committed()
    a.pull()
    a.push()
    b.pull()
    assert a.files() == b.files()


def test_a_merge_nobody_journaled_is_journaled_by_recover_from_its_subject(
    machines: Callable[..., Machine],
) -> None:
    """The active-run record was deleted by hand after a kill: HEAD's merge subject names
    the pull run, and recover journals it from that (then rollback can undo it)."""
    _, b = diverged(machines)
    assert killed_pull(b, AFTER_CAS).returncode == -signal.SIGKILL
    run_id = str((active_run(b.root) or {})["run_id"])
    (b.root / ".sync" / "active-run.json").unlink()
    (b.root / ".sync" / "operation.lock").unlink()
    health = b.ok(b.service.health())
    assert health["headAheadOfJournal"] is True and health["needsManualRecovery"] is True
    assert any("recover" in step for step in health["recoverySteps"])
    recovered = b.ok(b.service.recover("RECOVER_MEMORY"))
    assert (recovered["case"], recovered["journaledRunId"]) == ("unjournaled", run_id)
    record = next(r for r in b.runs() if r["run_id"] == run_id)
    assert (record["operation"], record["status"]) == ("pull", "applied")
    assert record["changed_paths"] == ["handbook/a.md"]
    b.ok(b.service.rollback(run_id, "ROLLBACK_MEMORY"))
    assert "handbook/a.md" not in b.committed() and "handbook/b.md" in b.committed()
    assert b.files() == b.committed()

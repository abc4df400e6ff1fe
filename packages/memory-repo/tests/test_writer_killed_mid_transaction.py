"""A ``dsh-memory`` writer (migrate-legacy, clear) killed by SIGKILL mid-transaction stays
recoverable: nothing half-staged, the run journaled, health naming the manual recovery,
rollback possible after it.

Each test runs the ``dsh-memory`` console script as a real process with
``DSH_MEMORY_TEST_KILL_AT`` naming the crash point, so the process dies exactly there (no
``finally``, no lock release); the commands after the kill are processes too, as a dead
writer's run is told from a live one by its process.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

LEGACY = "an old note without front matter\n"


def dsh_memory(
    root: Path, *args: str, kill_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = commands.environ(DSH_MEMORY_TEST_KILL_AT=kill_at)
    return commands.run("dsh-memory", "--root", str(root), *args, env=env)


def ok(root: Path, *args: str) -> Any:
    result = dsh_memory(root, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["value"]


def fails(root: Path, *args: str) -> str:
    result = dsh_memory(root, *args)
    assert result.returncode == 1, result.stdout
    code: str = json.loads(result.stderr)["error"]["code"]
    return code


def killed(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == -signal.SIGKILL, (result.returncode, result.stderr)


@pytest.fixture
def legacy_root(memory_root: Path) -> Path:
    (memory_root / "handbook" / "old.md").write_text(LEGACY)
    (memory_root / "notes.txt").write_text("the user's own staged work\n")
    git(memory_root, "add", "handbook/old.md")
    git(memory_root, "commit", "-qm", "legacy note")
    git(memory_root, "add", "notes.txt")  # staged, outside the payload: must stay staged
    return memory_root


def recover_by_hand(root: Path) -> None:
    """The documented manual recovery: remove the dead run's record and lock."""
    (root / ".sync" / "active-run.json").unlink()
    (root / ".sync" / "operation.lock").unlink()


def test_killed_before_the_cas_leaves_nothing_staged(legacy_root: Path) -> None:
    root = legacy_root
    head = git(root, "rev-parse", "HEAD")
    killed(dsh_memory(root, "migrate-legacy", "--dry-run", "false", kill_at="before-cas"))
    assert git(root, "rev-parse", "HEAD") == head
    # The user's index holds none of the migration: only their own staged file differs.
    assert git(root, "diff", "--cached", "--name-only") == "notes.txt\n"
    assert (root / "handbook" / "old.md").read_text() == LEGACY
    health = ok(root, "health")
    assert health["activeRun"]["state"] == "interrupted"
    assert health["headAheadOfJournal"] is False
    assert health["needsManualRecovery"] is True


def test_killed_after_the_cas_stays_journaled_and_rollbackable(legacy_root: Path) -> None:
    root = legacy_root
    before = git(root, "rev-parse", "HEAD").strip()
    killed(dsh_memory(root, "migrate-legacy", "--dry-run", "false", kill_at="after-cas"))
    assert git(root, "log", "-1", "--format=%s").startswith("DPSK memory sync applied:")
    health = ok(root, "health")
    assert health["headAheadOfJournal"] is True
    assert health["needsManualRecovery"] is True
    active = health["activeRun"]
    assert active["state"] == "interrupted"
    assert active["recovery_commit"] == before
    assert active["apply_commit"] == git(root, "rev-parse", "HEAD").strip()
    run_id = active["run_id"]
    # The next writer journals the dead run - with its commits - and stops.
    assert fails(root, "migrate-legacy", "--dry-run", "false") == "interrupted-run"
    record = json.loads((root / ".sync" / "runs" / f"{run_id}.json").read_text())
    assert record["status"] == "interrupted"
    assert record["recovery_commit"] == before
    assert record["apply_commit"] == active["apply_commit"]
    assert record["changed_paths"] == ["handbook/old.md"]
    assert ok(root, "health")["interruptedRun"]["run_id"] == run_id
    recover_by_hand(root)
    rolled = ok(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert rolled["changedPaths"] == ["handbook/old.md"]
    assert (root / "handbook" / "old.md").read_text() == LEGACY
    assert git(root, "status", "--porcelain", "--", "handbook", "summary.md") == ""
    assert git(root, "diff", "--cached", "--name-only") == "notes.txt\n"


def test_clear_killed_before_its_journal_commit_can_be_rolled_back(legacy_root: Path) -> None:
    root = legacy_root
    killed(dsh_memory(root, "clear", "--confirmation", "DELETE_MEMORY", kill_at="before-journal"))
    assert not (root / "handbook" / "old.md").exists()
    health = ok(root, "health")
    assert health["headAheadOfJournal"] is True
    run_id = health["activeRun"]["run_id"]
    # Rolling it back at once: not "run not found" - journaled now, recover first.
    rollback = ("rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert fails(root, *rollback) == "interrupted-run"
    assert ok(root, "runs")["runs"][0]["run_id"] == run_id
    recover_by_hand(root)
    ok(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert (root / "handbook" / "old.md").read_text() == LEGACY
    assert ok(root, "health")["needsManualRecovery"] is False


def test_a_failed_journal_commit_is_not_reported_as_commit_failed(legacy_root: Path) -> None:
    """The journal cannot be written (here: last-run.json is a directory): every record was
    migrated, so the answer says so, and the run stays visible and roll-back-able."""
    root = legacy_root
    (root / ".sync" / "last-run.json").mkdir()
    migrated = ok(root, "migrate-legacy", "--dry-run", "false")
    assert migrated["status"] == "applied"
    assert migrated["journaled"] is False
    assert migrated["journalCommit"] is None
    assert (root / "handbook" / "old.md").read_text().startswith("---\nschema_version: 1\n")
    health = ok(root, "health")
    assert health["activeRun"]["state"] == "interrupted"
    assert health["activeRun"]["status"] == "unjournaled"
    assert health["needsManualRecovery"] is True
    (root / ".sync" / "last-run.json").rmdir()
    run_id = health["activeRun"]["run_id"]
    assert fails(root, "clear", "--confirmation", "DELETE_MEMORY") == "interrupted-run"
    # The record the failed commit left in the work tree is now part of the journal.
    assert run_id in [r["run_id"] for r in ok(root, "runs")["runs"]]
    (root / ".sync" / "active-run.json").unlink()
    ok(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert (root / "handbook" / "old.md").read_text() == LEGACY


def test_a_writer_killed_holding_the_index_lock_is_named_by_health(legacy_root: Path) -> None:
    """Killed inside the live-index update (here: its lock left behind by hand)."""
    lock = legacy_root / ".git" / "index.lock"
    lock.write_text("")
    health = ok(legacy_root, "health")
    assert health["needsManualRecovery"] is True
    assert any(str(lock) in step for step in health["recoverySteps"])
    assert fails(legacy_root, "migrate-legacy", "--dry-run", "false") == "commit-failed"
    assert (legacy_root / "handbook" / "old.md").read_text() == LEGACY
    lock.unlink()
    assert ok(legacy_root, "migrate-legacy", "--dry-run", "false")["status"] == "applied"

"""A sync killed at each phase, then ``recover``: the content ends right.

``DSH_MEMORY_TEST_KILL_AT=<point>`` (dsh_memory.write.crashpoints) kills the real
``dsh-memory-sync`` process with SIGKILL - no ``finally``, no lock release - at each phase.
After each kill: ``git fsck`` passes, the payload is either entirely the old content or
entirely the new (never half-applied), health reports the interruption, and
``recover`` followed by a new sync ends with the agent's content.
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

from dsh_memory.service import MemoryService

OLD = {
    "handbook/existing.md": "---\nschema_version: 1\nid: project/existing\ntype: fact\n---\nOld.\n",
    "handbook/old.md": "---\nschema_version: 1\nid: project/old\ntype: fact\n---\nGone soon.\n",
}
NEW = {
    "handbook/existing.md": (
        "---\nschema_version: 1\nid: project/existing\ntype: fact\n---\nChanged.\n"
    ),
    "handbook/new-fact.md": (
        "---\nschema_version: 1\nid: project/new-fact\ntype: fact\n---\nUse uv.\n"
    ),
}
#: Where the kill leaves live memory: before the apply commit's CAS the old content stays.
POINTS = {
    "staging": OLD,
    "validating": OLD,
    "after-recovery": OLD,
    "before-cas": OLD,
    "after-cas": NEW,
    "after-index": NEW,
    "before-journal": NEW,
    "after-journal": NEW,
}


def _payload(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted((root / "handbook").rglob("*.md"))
    }


def _sync(command: str, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    """``dsh-memory-sync`` through its console script, killed at ``kill_at`` if given."""
    env = commands.environ(DSH_MEMORY_TEST_KILL_AT=kill_at)
    return commands.run(
        "dsh-memory-sync", "--json", "--agent", "command", "--agent-command", command, env=env
    )


@pytest.mark.parametrize("point", list(POINTS))
def test_a_sync_killed_at_each_phase_recovers_to_the_right_content(
    point: str,
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
) -> None:
    for path, text in OLD.items():
        write_file(sync_root, path, text)
    git(sync_root, "add", "-A")
    git(sync_root, "commit", "-q", "-m", "seed")
    session_logs.dsh("d1", "hello")
    killed = _sync(agent_command("multi"), kill_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    git(sync_root, "fsck", "--strict")
    after_kill = POINTS[point]
    if after_kill is OLD or point == "after-journal":
        assert _payload(sync_root) == after_kill  # nothing half-applied in the work tree
    head_tree = {p: git(sync_root, "show", f"HEAD:{p}", check=False) for p in NEW}
    assert (head_tree == NEW) == (after_kill is NEW)
    health = MemoryService().health()["value"]
    if point != "after-journal":
        assert health["activeRun"]["state"] == "interrupted"
        assert health["interruptedRun"] is not None
        assert health["needsManualRecovery"] is True
        refused = _sync(agent_command("multi"))
        assert refused.returncode == 1
        error = json.loads(refused.stderr)["error"]
        assert error["code"] == "interrupted-run"
        assert "dsh-memory recover --confirmation RECOVER_MEMORY" in error["message"]
    recovered = MemoryService().recover("RECOVER_MEMORY")
    assert recovered["ok"], (recovered, MemoryService().last_error_message)
    health = MemoryService().health()["value"]
    assert health["needsManualRecovery"] is False, json.dumps(health)
    assert health["operationLock"] is None and health["activeRun"] is None
    assert git(sync_root, "status", "--porcelain").strip() == ""
    assert _payload(sync_root) == after_kill
    git(sync_root, "fsck", "--strict")
    # A new sync ends with the agent's content, whatever the kill interrupted.
    again = _sync(agent_command("multi"))
    assert again.returncode == 0, again.stderr
    assert _payload(sync_root) == NEW
    assert git(sync_root, "status", "--porcelain").strip() == ""
    assert MemoryService().health()["value"]["needsManualRecovery"] is False


def test_a_run_kept_by_recover_can_be_rolled_back(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
) -> None:
    for path, text in OLD.items():
        write_file(sync_root, path, text)
    git(sync_root, "add", "-A")
    git(sync_root, "commit", "-q", "-m", "seed")
    session_logs.dsh("d1", "hello")
    assert _sync(agent_command("multi"), kill_at="after-index").returncode == -9
    value = MemoryService().recover("RECOVER_MEMORY")["value"]
    assert value["case"] == "kept-commits"
    undone = MemoryService().rollback(value["interruptedRunId"], "ROLLBACK_MEMORY")
    assert undone["ok"], undone
    assert _payload(sync_root) == OLD


def test_recover_needs_its_confirmation_and_is_quiet_when_nothing_is_wrong(
    memory_root: Path,
) -> None:
    assert MemoryService().recover("yes") == {
        "ok": False,
        "error": {"code": "recover-invalid-confirmation"},
    }
    value = MemoryService().recover("RECOVER_MEMORY")["value"]
    assert value["status"] == "nothing-to-recover"


def test_recover_keeps_hand_edits_made_before_the_crash(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
) -> None:
    for path, text in OLD.items():
        write_file(sync_root, path, text)
    git(sync_root, "add", "-A")
    git(sync_root, "commit", "-q", "-m", "seed")
    write_file(sync_root, "summary.md", "- a person's uncommitted note\n")
    session_logs.dsh("d1", "hello")
    assert _sync(agent_command("multi"), kill_at="before-journal").returncode == -9
    assert MemoryService().recover("RECOVER_MEMORY")["ok"]
    # The note was in the recovery checkpoint, hence in the apply commit: still there.
    assert (sync_root / "summary.md").read_text() == "- a person's uncommitted note\n"
    assert git(sync_root, "status", "--porcelain").strip() == ""

"""``dsh-memory-sync --agent-command PROG`` runs PROG: an explicit option is never ignored.

Without ``--agent command`` the option used to be dropped silently and the ``dsh`` agent
ran instead. Now ``--agent-command`` alone implies ``--agent command``, and mixing it with
another agent is refused before anything runs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands

from dsh_memory.errors import SyncInvalidRequestError
from dsh_memory.service import MemoryService
from dsh_memory.sync.agent import resolve_agent


def sync(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run("dsh-memory-sync", "--root", str(root), "--json", *args)


def test_agent_command_alone_runs_that_program(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    result = sync(sync_root, "--agent-command", agent_command("add"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["added"] == ["handbook/new-fact.md"]
    assert (sync_root / "handbook" / "new-fact.md").is_file()


@pytest.mark.parametrize("agent", ["dsh", "claude", "codex"])
def test_agent_command_with_another_agent_is_refused_before_anything_runs(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str], agent: str
) -> None:
    session_logs.dsh("d1", "hello")
    head = (sync_root / ".git" / "HEAD").read_text()
    result = sync(sync_root, "--agent", agent, "--agent-command", agent_command("add"))
    assert result.returncode == 1
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "sync-invalid-request"
    assert f"not --agent {agent}" in error["message"]
    assert not (sync_root / "handbook" / "new-fact.md").exists()
    assert MemoryService().runs()["value"]["total"] == 0  # refused as an argument error
    assert (sync_root / ".git" / "HEAD").read_text() == head


def test_resolution_rules() -> None:
    assert resolve_agent(None, None) == "dsh"
    assert resolve_agent(None, "  ") == "dsh"
    assert resolve_agent(None, "prog") == "command"
    assert resolve_agent("command", "prog") == "command"
    assert resolve_agent("claude", None) == "claude"
    with pytest.raises(SyncInvalidRequestError, match="unknown agent"):
        resolve_agent("gpt", None)
    with pytest.raises(SyncInvalidRequestError, match="not --agent dsh"):
        resolve_agent("dsh", "prog")

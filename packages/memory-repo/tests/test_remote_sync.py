"""``dsh-memory-sync --remote`` (pull before, push after) and the auto-sync that starts it,
run as the installed console scripts with the scripted fake agent and real session logs."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from .conftest import Machine, SessionLogs, age_watermark


def sync(machine: Machine, agent: str, *args: str) -> tuple[int, dict[str, Any], str]:
    done = commands.run(
        "dsh-memory-sync", "--root", str(machine.root), "--agent-command", agent, *args, timeout=180
    )
    document = json.loads(done.stdout if done.returncode == 0 else done.stderr)
    return done.returncode, document, done.stderr


def session_start(env: dict[str, str]) -> None:
    """The installed ``dsh-memory hook session-start`` (the agents' hook), as a process."""
    done = commands.run("dsh-memory", "hook", "session-start", input="{}", env=env)
    assert done.returncode == 0, done.stderr


def test_a_sync_pulls_before_and_pushes_after(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
    remote_repo: Path,
) -> None:
    a, b = machines("a"), machines("b")
    a.record("handbook/existing.md", "project/existing", "Old.")
    a.push()
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, result, progress = sync(b, agent_command("add"), "--remote")
    assert code == 0, result
    pulled, pushed = result["remote"]["pull"], result["remote"]["push"]
    assert pulled["ok"] and pulled["value"]["adopted"] is True
    assert result["status"] == "applied" and "handbook/new-fact.md" in result["changedPaths"]
    # The agent consolidated on top of A's memory: it saw A's record in its staging copy.
    assert "handbook/existing.md" in b.files()
    assert (
        pushed == {"ok": True, "value": pushed["value"]} and pushed["value"]["status"] == "pushed"
    )
    assert git(remote_repo, "rev-parse", "main").strip() == b.head()
    assert "dsh-memory-sync: pull: fast-forward" in progress
    a.pull()
    assert "handbook/new-fact.md" in a.files()


def test_a_conflict_never_fails_the_sync(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
) -> None:
    a, b = machines("a"), machines("b")
    a.record("handbook/existing.md", "project/existing", "Old.")
    a.push()
    b.pull()
    b.push()
    a.pull()
    a.record("handbook/existing.md", "project/existing", "A changed it.")
    a.push()
    b.record("handbook/existing.md", "project/existing", "B changed it.")
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, result, _ = sync(b, agent_command("add"), "--remote", "--json")
    assert code == 0, result
    pulled = result["remote"]["pull"]["value"]
    assert pulled["status"] == "merged-with-conflicts"
    assert pulled["conflicts"][0]["path"] == "handbook/existing.md"
    assert result["remote"]["push"]["value"]["status"] == "pushed"
    files = b.files()
    assert files["handbook/existing.md"].endswith("B changed it.\n")
    assert files[pulled["conflicts"][0]["keptAs"]].endswith("A changed it.\n")


def test_an_offline_remote_still_lets_the_local_sync_run(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
    tmp_path: Path,
) -> None:
    b = machines("b", remote=False)
    b.ok(b.service.set_remote(str(tmp_path / "unreachable.git")))
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, result, progress = sync(b, agent_command("add"), "--remote")
    assert code == 0, result
    assert result["status"] == "applied"
    assert result["remote"]["pull"]["error"]["code"] == "remote-unavailable"
    assert result["remote"]["push"] is None, "nothing is pushed after a failed pull"
    assert "pull failed (remote-unavailable)" in progress


def test_without_a_remote_the_option_is_an_error_and_nothing_runs(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
) -> None:
    b = machines("b", remote=False)
    head = b.head()
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, error, _ = sync(b, agent_command("add"), "--remote")
    assert (code, error["error"]["code"]) == (1, "remote-not-configured")
    assert b.head() == head
    code, error, _ = sync(b, agent_command("add"), "--remote", "--dry-run")
    assert (code, error["error"]["code"]) == (1, "sync-invalid-request")


def test_a_push_lost_to_another_machine_is_retried_after_one_more_pull(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    tmp_path: Path,
    remote_repo: Path,
) -> None:
    """The agent itself plays the other machine: while B's sync runs, A pushes."""
    a, b = machines("a"), machines("b")
    a.record("handbook/existing.md", "project/existing", "Old.")
    a.push()
    b.pull()
    b.push()
    a.pull()
    a.record("handbook/meanwhile.md", "project/meanwhile", "Pushed while B synced.")
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import pathlib, subprocess, sys\n"
        f"subprocess.run(['git', '-C', {str(a.root)!r}, 'push', '-q', {str(remote_repo)!r},"
        " 'HEAD:main'], check=True)\n"
        "p = pathlib.Path('handbook/new.md')\n"
        "p.write_text('---\\nschema_version: 1\\nid: project/new\\ntype: fact\\n---\\nB.\\n')\n"
    )
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, result, progress = sync(b, f"{sys.executable} {agent}", "--remote")
    assert code == 0, result
    assert result["remote"]["push"]["value"]["status"] == "pushed", result["remote"]
    assert "pulling once more" in progress
    assert {"handbook/meanwhile.md", "handbook/new.md"} <= set(b.files())
    assert git(remote_repo, "rev-parse", "main").strip() == b.head()


def test_the_auto_sync_adds_remote_when_asked_and_a_remote_is_set(
    machines: Callable[..., Machine], tmp_path: Path, dsh_home: Path
) -> None:
    memory = machines("auto")
    marker = tmp_path / "sync-ran"
    fake = tmp_path / "bin" / "dsh-memory-sync"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$@\" > '{marker}'\n")
    fake.chmod(0o755)
    dsh_home.mkdir(exist_ok=True)
    (dsh_home / "settings.yaml").write_text(
        "memory:\n  auto_sync_interval_minutes: 60\n  auto_sync_remote: true\n"
    )
    age_watermark(memory.root, 2 * 3600)
    env = {**os.environ, "DSH_MEMORY_SYNC_COMMAND": str(fake), "DSH_MEMORY_ROOT": str(memory.root)}
    session_start(env)
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    assert marker.read_text().split() == ["--json", "--remote"]
    # Without a remote the same setting syncs locally (a sync with --remote would refuse).
    memory.ok(memory.service.remove_remote())
    marker.unlink()
    (dsh_home / "state" / "memory-auto-sync.stamp").unlink()
    session_start(env)
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    assert marker.read_text().split() == ["--json"]


def test_a_refused_url_or_a_detached_head_still_lets_the_local_sync_run(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
) -> None:
    """The URL written into the config by hand, never checked by ``remote set``: the pull
    refuses it, the local run happens, nothing is pushed, the exit status is 0."""
    b = machines("b", remote=False)
    git(b.root, "config", "remote.origin.url", "ext::sh -c id")
    age_watermark(b.root)
    session_logs.dsh("d1", "we use uv")
    code, result, progress = sync(b, agent_command("add"), "--remote")
    assert code == 0, result
    assert result["status"] == "applied" and "handbook/new-fact.md" in b.files()
    assert result["remote"]["pull"]["error"]["code"] == "remote-invalid"
    assert result["remote"]["push"] is None
    assert "pull failed (remote-invalid)" in progress
    # HEAD on no branch: the pull cannot know the remote's branch; the local run goes on.
    git(b.root, "config", "remote.origin.url", str(b.root.parent / "nowhere.git"))
    git(b.root, "checkout", "-q", "--detach")
    age_watermark(b.root)
    session_logs.dsh("d2", "we use ruff")
    code, result, _ = sync(b, agent_command("add"), "--remote")
    assert code == 0, result
    assert result["remote"]["pull"]["error"]["code"] == "remote-failed"
    assert "switch main" in result["remote"]["pull"]["error"]["message"]
    assert result["remote"]["push"] is None


def test_the_auto_sync_with_a_refused_url_still_syncs_locally(
    machines: Callable[..., Machine],
    session_logs: SessionLogs,
    agent_command: Callable[[str], str],
    tmp_path: Path,
    dsh_home: Path,
) -> None:
    """The session hook starts the real ``dsh-memory-sync --json --remote`` (the remote is
    set, if refused); the background run succeeds locally instead of failing every time."""
    memory = machines("auto", remote=False)
    git(memory.root, "config", "remote.origin.url", "ext::sh -c id")
    done, out = tmp_path / "sync-exit", tmp_path / "sync-out"
    wrapper = tmp_path / "bin" / "dsh-memory-sync"
    wrapper.parent.mkdir()
    installed = str(commands.program("dsh-memory-sync"))
    wrapper.write_text(
        f"#!/bin/sh\n{shlex.quote(installed)} --agent-command"
        f" {shlex.quote(agent_command('add'))} \"$@\" > '{out}'\necho $? > '{done}.tmp'\n"
        f"mv '{done}.tmp' '{done}'\n"
    )
    wrapper.chmod(0o755)
    dsh_home.mkdir(exist_ok=True)
    (dsh_home / "settings.yaml").write_text(
        "memory:\n  auto_sync_interval_minutes: 60\n  auto_sync_remote: true\n"
    )
    age_watermark(memory.root, 2 * 3600)
    session_logs.dsh("d1", "we use uv")
    env = {
        **os.environ,
        "DSH_MEMORY_SYNC_COMMAND": str(wrapper),
        "DSH_MEMORY_ROOT": str(memory.root),
    }
    session_start(env)
    deadline = time.monotonic() + 120
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "0"
    result = json.loads(out.read_text())
    assert result["status"] == "applied", result
    assert result["remote"]["pull"]["error"]["code"] == "remote-invalid"
    assert "handbook/new-fact.md" in memory.files()

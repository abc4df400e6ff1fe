"""Repositories in the earlier tool's exact shapes: its init checks, its stale active run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_test_support import commands, in_process
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService
from dsh_memory.store.initialize import initialize_repository

# The earlier tool's dsh-memory-init, validate_initialized_repository / harden (pinned).
EARLIER_REQUIRED_FILES = (
    "README.md",
    "summary.md",
    ".last-sync",
    ".sync/.gitignore",
    "scripts/filter_session.py",
)
EARLIER_REQUIRED_DIRS = ("handbook", "rollouts", "archive", "scripts", ".sync")
EARLIER_MODES = {
    ".": 0o700,
    ".git": 0o700,
    "handbook": 0o700,
    "rollouts": 0o700,
    "archive": 0o700,
    ".sync": 0o700,
    "scripts": 0o700,
    "README.md": 0o600,
    "summary.md": 0o600,
    ".last-sync": 0o600,
    ".sync/.gitignore": 0o600,
    "scripts/filter_session.py": 0o700,
}
EARLIER_FIRST_COMMIT = {
    "README.md",
    "summary.md",
    ".last-sync",
    ".sync/.gitignore",
    "scripts/filter_session.py",
}


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_init_passes_the_earlier_tools_completeness_check(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    for name in EARLIER_REQUIRED_FILES:
        assert stat.S_ISREG(os.lstat(root / name).st_mode), name
    for name in EARLIER_REQUIRED_DIRS:
        assert stat.S_ISDIR(os.lstat(root / name).st_mode), name
    assert os.access(root / "scripts" / "filter_session.py", os.X_OK)
    assert {name: _mode(root / name) for name in EARLIER_MODES} == EARLIER_MODES
    committed = set(git(root, "ls-tree", "-r", "--name-only", "HEAD").split())
    assert committed == EARLIER_FIRST_COMMIT
    assert "100755" in git(root, "ls-tree", "HEAD", "scripts/filter_session.py")


def test_the_installed_init_leaves_git_private_like_the_earlier_tool(tmp_path: Path) -> None:
    # The earlier tool's harden_initialized_repository: chmod 700 "$MEMORY_ROOT/.git", on
    # the first run and on every rerun. `git init` makes it 0755.
    root = tmp_path / "mem"
    for _ in range(2):
        done = commands.run("dsh-memory", "init", "--root", str(root))
        assert done.returncode == 0, done.stderr
        assert {name: _mode(root / name) for name in EARLIER_MODES} == EARLIER_MODES
        os.chmod(root / ".git", 0o755)  # noqa: S103 - what `git init` leaves


#: What the earlier tool's sync tells its agent (dsh-memory-sync STAGING_PROMPT): read the
#: README's "「提炼与整合」一节" first; and it refuses any change to README.md.
EARLIER_PROMPT_SECTION = "「提炼与整合」一节"


def test_the_readme_init_writes_has_the_section_both_sync_agents_read(tmp_path: Path) -> None:
    from dsh_memory.sync.agent import PROMPT

    root = tmp_path / "mem"
    done = in_process.run("dsh-memory", "init", "--root", str(root))
    assert done.returncode == 0, done.stderr
    readme = git(root, "show", "HEAD:README.md")
    title = EARLIER_PROMPT_SECTION.removeprefix("「").removesuffix("」一节")
    assert f"## {title}" in readme.splitlines()  # a heading of its own, found by its name
    section = readme.split(f"## {title}", 1)[1]
    # Its rules: distill (NO_SIGNAL when nothing is worth keeping), consolidate (replace,
    # archive/, summary.md), the payload only, no git: the host commits.
    for rule in ("NO_SIGNAL", "archive/", "summary.md", "handbook/", "git"):
        assert rule in section, rule
    assert "[REDACTED]" in readme
    assert title in PROMPT  # our own sync's agent is pointed at the same section


def test_init_completes_an_older_repository_without_a_new_commit(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    first = initialize_repository(root)
    (root / "scripts" / "filter_session.py").unlink()
    os.chmod(root / "README.md", 0o644)
    again = initialize_repository(root)
    assert again["headCommit"] == first["headCommit"]
    assert os.access(root / "scripts" / "filter_session.py", os.X_OK)
    assert _mode(root / "README.md") == 0o600


def test_the_filter_script_redacts_a_session_log(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    script = root / "scripts" / "filter_session.py"
    events = [
        {"type": "session", "id": "s1", "cwd": "/home/alice/p", "agentPreset": "default"},
        {"type": "turn/start", "data": {"turn": 1}},
        {
            "type": "user/message",
            "data": {
                "content": [
                    {"type": "text", "text": "token sk-secretsecret and ?api_key=abc123"},
                    {"type": "text", "text": "<system-reminder>injected</system-reminder>"},
                ]
            },
        },
        {"type": "tool/call", "data": {"name": "http", "arguments": {"password": "hunter2"}}},
        {
            "type": "tool/result",
            "data": {"message": {"content": [{"type": "text", "text": "x" * 1000}]}},
        },
    ]
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    done = subprocess.run(
        [sys.executable, str(script), str(log)], capture_output=True, text=True, check=True
    )
    out = done.stdout
    assert out.startswith("# Session s1\n- cwd: $HOME/p\n- preset: default\n")
    assert "sk-secret" not in out and "abc123" not in out and "hunter2" not in out
    assert "?api_key=[REDACTED]" in out and '{"password": "[REDACTED]"}' in out
    assert "injected" not in out
    assert "…[truncated 600 chars]" in out
    # Executable on its own (shebang), reading stdin, as the earlier tool's prompt runs it.
    piped = subprocess.run(
        [str(script), "-"], input=log.read_text(), capture_output=True, text=True, check=True
    )
    assert piped.stdout == out


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_finished_runs_leftover_active_record_is_not_an_interruption(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    # What the earlier tool leaves after a finished migrate: an applied journal record and
    # the active-run record (and here its lock too), both naming the dead process.
    run_id = "20261201T100000Z-migrate-4242"
    record = {
        "schema_version": 1,
        "run_id": run_id,
        "operation": "migrate",
        "status": "applied",
        "phase": "complete",
    }
    record_path = memory_root / ".sync" / "runs" / f"{run_id}.json"
    write_file(memory_root, f".sync/runs/{run_id}.json", json.dumps(record, separators=(",", ":")))
    git(memory_root, "add", ".sync")
    git(memory_root, "commit", "-q", "-m", f"DPSK memory journal: {run_id}")
    pid = _dead_pid()
    active = {
        "run_id": run_id,
        "operation": "migrate",
        "status": "running",
        "phase": "finalizing",
        "pid": pid,
        "started_at": "2026-12-01T10:00:00Z",
    }
    write_file(memory_root, ".sync/active-run.json", json.dumps(active))
    lock = {
        "operation": "migrate",
        "pid": pid,
        "runId": run_id,
        "startedAt": "2026-12-01T10:00:00Z",
    }
    write_file(memory_root, ".sync/operation.lock", json.dumps(lock))
    before = record_path.read_bytes()
    health = MemoryService().health()["value"]
    assert health["activeRun"] is None and health["interruptedRun"] is None
    assert health["needsManualRecovery"] is False
    write_file(memory_root, "handbook/old.md", "legacy note\n")
    git(memory_root, "add", "-A")
    git(memory_root, "commit", "-q", "-m", "legacy")
    migrated = MemoryService().migrate_legacy(False)
    assert migrated["ok"], (migrated, MemoryService().last_error_message)
    assert record_path.read_bytes() == before  # never overwritten
    assert not (memory_root / ".sync" / "active-run.json").exists()


def test_a_finished_record_is_never_rewritten_as_interrupted(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    # A live-looking stale record whose journal entry finished but with a status we keep.
    run_id = "20261201T100000Z-clear-77"
    record = {"schema_version": 1, "run_id": run_id, "operation": "clear", "status": "applied"}
    write_file(memory_root, f".sync/runs/{run_id}.json", json.dumps(record))
    active = {
        "run_id": run_id,
        "operation": "clear",
        "status": "running",
        "phase": "applying",
        "pid": _dead_pid(),
        "started_at": "2026-12-01T10:00:00Z",
    }
    write_file(memory_root, ".sync/active-run.json", json.dumps(active))
    result = MemoryService().clear("DELETE_MEMORY")
    assert result["ok"] or result["error"]["code"] != "interrupted-run"
    assert json.loads((memory_root / f".sync/runs/{run_id}.json").read_text())["status"] == (
        "applied"
    )


def _earlier_init(root: Path) -> None:
    """A repository exactly as the earlier tool's dsh-memory-init makes one (plain git)."""
    for name in ("handbook", "rollouts", "archive", "scripts", ".sync"):
        (root / name).mkdir(parents=True, mode=0o700)
    (root / "README.md").write_text("# DSH 独立长期记忆库\n\n本仓库只属于当前 DSH 实例。\n")
    (root / ".sync" / ".gitignore").write_text(
        "operation.lock\nactive-run.json\npreviews/\nusage.json\nusage.lock/\n.usage.*.tmp\n"
    )
    (root / "scripts" / "filter_session.py").write_text("#!/usr/bin/env python3\n")
    (root / "summary.md").write_text("")
    (root / ".last-sync").write_text("")
    git(root, "init", "-q")
    for name, mode in EARLIER_MODES.items():
        os.chmod(root / name, mode)
    git(root, "config", "user.name", "DPSK Memory")
    git(root, "config", "user.email", "dpsk-memory@localhost")
    git(
        root,
        "add",
        "README.md",
        "summary.md",
        ".last-sync",
        ".sync/.gitignore",
        "scripts/filter_session.py",
    )
    git(root, "commit", "-q", "-m", "Initialize DPSK memory repository")


def test_a_repository_made_by_the_earlier_init_syncs_with_ours(
    dsh_home: Path,
    session_logs: object,
    agent_command: Callable[[str], str],
) -> None:
    from dsh_memory.sync.sessions import SessionSources
    from dsh_memory.sync.syncrun import SyncOptions, run_sync

    root = dsh_home / "storages" / "memory"
    _earlier_init(root)
    head = git(root, "rev-parse", "HEAD").strip()
    assert initialize_repository(root)["headCommit"] == head  # ours accepts it as complete
    old = time.time() - 3 * 3600
    os.utime(root / ".last-sync", (old, old))
    logs: Any = session_logs
    logs.dsh("d1", "hello")
    result = run_sync(
        SyncOptions(
            root=root,
            sources=SessionSources(logs.dsh_sessions, logs.claude_projects, logs.codex_sessions),
            env=dict(os.environ),
            agent="command",
            agent_command=agent_command("add"),
        )
    )
    assert result["status"] == "applied"
    assert (root / "handbook" / "new-fact.md").is_file()
    assert git(root, "status", "--porcelain").strip() == ""


def test_health_names_the_interrupted_active_run_before_any_writer_saw_it(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    active = {
        "run_id": "20261201T100000Z-0badf00d",
        "operation": "sync",
        "status": "running",
        "phase": "applying",
        "pid": _dead_pid(),
        "started_at": "2026-12-01T10:00:00Z",
    }
    write_file(memory_root, ".sync/active-run.json", json.dumps(active))
    health = MemoryService().health()["value"]
    assert health["activeRun"]["state"] == "interrupted"
    assert health["interruptedRun"]["run_id"] == "20261201T100000Z-0badf00d"
    assert health["needsManualRecovery"] is True
    assert any("dsh-memory recover" in step for step in health["recoverySteps"])

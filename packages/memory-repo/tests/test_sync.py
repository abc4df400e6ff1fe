"""dsh-memory-sync end to end: real session logs, a real fake-agent process, real git."""

# ruff: noqa: PLR0917, S105 - pytest fixtures are positional; the "secrets" are test bait

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from dsh_memory.errors import MemoryRepoError
from dsh_memory.service import MemoryService
from dsh_memory.sync.sessions import SessionSources
from dsh_memory.sync.syncrun import SyncOptions, run_sync

RECORD = "---\nschema_version: 1\nid: project/existing\ntype: fact\n---\nOriginal.\n"


def _options(root: Path, logs: Any, command: str, **kwargs: Any) -> SyncOptions:
    env = dict(os.environ)
    env["SECRET_TOKEN"] = "sk-live-should-not-pass"
    env.update(kwargs.pop("extra_env", {}))
    return SyncOptions(
        root=root,
        sources=SessionSources(logs.dsh_sessions, logs.claude_projects, logs.codex_sessions),
        env=env,
        agent="command",
        agent_command=command,
        **kwargs,
    )


def _head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def _last_run(root: Path) -> dict[str, Any]:
    return json.loads((root / ".sync" / "last-run.json").read_text())


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_sync_applies_an_added_record_from_three_kinds_of_session(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    session_logs.dsh("d1", "use uv", zstd=True)
    session_logs.claude("c1", "prefer pnpm")
    session_logs.codex("x1", "tests need -n 0")
    before = _head(sync_root)
    result = run_sync(_options(sync_root, session_logs, agent_command("add")))
    assert result["status"] == "applied"
    assert result["candidateSessions"] == 3
    assert result["changedPaths"] == ["handbook/new-fact.md"]
    assert result["recoveryCommit"] == before  # clean payload: HEAD is the recovery point
    subjects = git(sync_root, "log", "--format=%s", f"{before}..HEAD").splitlines()
    run_id = result["runId"]
    assert subjects == [f"DPSK memory journal: {run_id}", f"DPSK memory sync applied: {run_id}"]
    record = _last_run(sync_root)
    assert record["status"] == "applied" and record["operation"] == "sync"
    full = json.loads((sync_root / ".sync" / "runs" / f"{run_id}.json").read_text())
    assert full["candidate_sessions"] == 3 and full["processed_sessions"] == 3
    assert full["staging_digest"].startswith("sha256:")
    assert (sync_root / "handbook" / "new-fact.md").read_text().endswith("Use uv.\n")
    # The watermark moved and is committed in the journal commit.
    journal_files = git(sync_root, "show", "--name-only", "--format=", "HEAD").split()
    assert ".last-sync" in journal_files
    assert git(sync_root, "status", "--porcelain").strip() == ""
    git(sync_root, "fsck", "--strict")
    health = MemoryService().health()["value"]
    assert health["needsManualRecovery"] is False and health["operationLock"] is None
    # The same sessions are not candidates again.
    again = run_sync(_options(sync_root, session_logs, agent_command("add")))
    assert again["status"] == "nothing-to-do"


@pytest.mark.parametrize("scenario", ["modify", "delete"])
def test_sync_modifies_or_deletes_and_the_run_rolls_back(
    scenario: str,
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
    commit: Callable[..., str],
) -> None:
    write_file(sync_root, "handbook/existing.md", RECORD)
    commit(sync_root, "seed")
    session_logs.dsh("d1", "hello", zstd=False)
    result = run_sync(_options(sync_root, session_logs, agent_command(scenario)))
    assert result["status"] == "applied"
    assert result["changedPaths"] == ["handbook/existing.md"]
    existing = sync_root / "handbook" / "existing.md"
    if scenario == "delete":
        assert not existing.exists()
    else:
        assert "Changed." in existing.read_text()
    undone = MemoryService().rollback(result["runId"], "ROLLBACK_MEMORY")
    assert undone["ok"], undone
    assert existing.read_text() == RECORD


@pytest.mark.parametrize(
    ("scenario", "code"),
    [
        ("break", "flow-style-metadata"),
        ("symlink", "unsafe-layout"),
        ("hardlink", "unsafe-layout"),
        ("many", "too-many-files"),
        ("duplicate", "duplicate-id"),
        ("readme", "staging-invalid"),
        ("outside", "staging-invalid"),
        ("fail", "agent-failed"),
    ],
)
def test_a_refused_change_journals_failed_and_leaves_memory(
    scenario: str,
    code: str,
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
    commit: Callable[..., str],
) -> None:
    write_file(sync_root, "handbook/existing.md", RECORD)
    commit(sync_root, "seed")
    session_logs.dsh("d1", "hello")
    payload_before = git(sync_root, "rev-parse", "HEAD:handbook").strip()
    watermark_before = (sync_root / ".last-sync").stat().st_mtime_ns
    with pytest.raises(MemoryRepoError) as caught:
        run_sync(_options(sync_root, session_logs, agent_command(scenario)))
    assert caught.value.code == code
    if scenario == "fail":
        assert "the model refused" in caught.value.message
    record = _last_run(sync_root)
    assert (record["status"], record["error_code"]) == ("failed", code)
    assert git(sync_root, "rev-parse", "HEAD:handbook").strip() == payload_before
    assert (sync_root / "handbook" / "existing.md").read_text() == RECORD
    assert not (sync_root / "handbook" / "link.md").exists()
    assert (sync_root / ".last-sync").stat().st_mtime_ns == watermark_before
    assert git(sync_root, "status", "--porcelain").strip() == ""
    # Refused, not stuck: the lock is released and the next run may start.
    assert not (sync_root / ".sync" / "operation.lock").exists()


def test_an_agent_past_its_time_limit_is_killed(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    started = time.monotonic()
    with pytest.raises(MemoryRepoError) as caught:
        run_sync(_options(sync_root, session_logs, agent_command("sleep"), timeout=1.0))
    assert caught.value.code == "agent-timeout"
    assert time.monotonic() - started < 30
    assert _last_run(sync_root)["error_code"] == "agent-timeout"


def test_a_zero_change_run_journals_no_change_and_advances_the_watermark(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    session_logs.dsh("d1", "hello")
    payload = git(sync_root, "rev-parse", "HEAD:handbook", check=False)
    mark = (sync_root / ".last-sync").stat().st_mtime_ns
    result = run_sync(_options(sync_root, session_logs, agent_command("noop")))
    assert result["status"] == "no_change"
    assert _last_run(sync_root)["status"] == "no_change"
    assert git(sync_root, "log", "-1", "--format=%s").startswith("DPSK memory journal:")
    assert git(sync_root, "rev-parse", "HEAD:handbook", check=False) == payload
    assert (sync_root / ".last-sync").stat().st_mtime_ns > mark


def test_sessions_active_in_the_last_hour_wait(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("busy", "still typing", age=600)
    session_logs.dsh("idle", "done", age=2 * 3600)
    result = run_sync(_options(sync_root, session_logs, agent_command("add"), mode="scan-only"))
    assert result["candidateSessions"] == 1
    assert result["sessions"][0]["path"].endswith("idle/session.jsonl.zstd")


def test_a_batch_takes_ten_sessions_and_leaves_the_rest(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    for index in range(12):
        session_logs.dsh(f"s{index:02d}", "x", age=2 * 3600 + index * 10)
    first = run_sync(_options(sync_root, session_logs, agent_command("noop")))
    assert (first["candidateSessions"], first["deferredSessions"]) == (10, 2)
    second = run_sync(_options(sync_root, session_logs, agent_command("noop")))
    assert (second["candidateSessions"], second["deferredSessions"]) == (2, 0)
    third = run_sync(_options(sync_root, session_logs, agent_command("noop")))
    assert third["status"] == "nothing-to-do"


@pytest.mark.parametrize("mode", ["dry-run", "scan-only"])
def test_dry_run_and_scan_only_write_nothing(
    mode: str,
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    session_logs.dsh("d1", "hello")
    head = _head(sync_root)
    mark = (sync_root / ".last-sync").stat().st_mtime_ns
    sync_dir = sorted(p.name for p in (sync_root / ".sync").iterdir())
    result = run_sync(_options(sync_root, session_logs, agent_command("add"), mode=mode))
    assert result["candidateSessions"] == 1
    if mode == "dry-run":
        assert result["dryRun"] is True
        assert result["changedPaths"] == ["handbook/new-fact.md"]
        assert result["added"] == ["handbook/new-fact.md"]
    else:
        assert result["scanOnly"] is True
    assert _head(sync_root) == head
    assert (sync_root / ".last-sync").stat().st_mtime_ns == mark
    assert sorted(p.name for p in (sync_root / ".sync").iterdir()) == sync_dir
    assert not (sync_root / "handbook" / "new-fact.md").exists()


def test_disabled_memory_does_nothing_and_says_so(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    dsh_home: Path,
) -> None:
    (dsh_home / "settings.yaml").write_text("memory:\n  enabled: false\n")
    session_logs.dsh("d1", "hello")
    head = _head(sync_root)
    result = run_sync(_options(sync_root, session_logs, agent_command("add")))
    assert result == {"status": "disabled", "message": "memory.enabled is false; skipping sync."}
    assert _head(sync_root) == head


def test_the_agent_gets_only_allow_listed_environment(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    run_sync(_options(sync_root, session_logs, agent_command("env")))
    names = (sync_root / "summary.md").read_text().split()
    assert "SECRET_TOKEN" not in names
    assert not [n for n in names if n.startswith("GIT_")]
    assert {"HOME", "PATH", "TMPDIR", "DSH_MEMORY_STAGING", "DSH_TELEMETRY_DISABLED"} <= set(names)


def test_named_provider_variables_pass(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    extra = {"DSH_MEMORY_PROVIDER_ENV_NAMES": "SECRET_TOKEN"}
    run_sync(_options(sync_root, session_logs, agent_command("env"), extra_env=extra))
    assert "SECRET_TOKEN" in (sync_root / "summary.md").read_text().split()


def test_the_agent_sees_only_redacted_transcripts(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    secret = "sk-abcdef1234567890"
    session_logs.dsh("d1", f"my key is {secret} in /home/alice/repo and Bearer abc.def.ghi")
    session_logs.claude("c1", "the claude session ghp_abcdefghijklmnop1234")
    session_logs.codex("x1", "codex says AKIAABCDEFGHIJKLMNOP")
    run_sync(_options(sync_root, session_logs, agent_command("transcripts")))
    text = (sync_root / "rollouts" / "transcripts.md").read_text()
    for leaked in (
        secret,
        "/home/alice",
        "abc.def.ghi",
        "t0ps3cret",
        "ghp_abcdef",
        "AKIAABCDEFGHIJKLMNOP",
    ):
        assert leaked not in text
    assert "$HOME/repo" in text and "[REDACTED]" in text
    assert "the claude session" in text and "codex says" in text


def test_a_dead_earlier_run_stops_the_sync_until_recovered(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    active = {
        "run_id": "20260101T000000Z-deadbeef",
        "operation": "sync",
        "status": "running",
        "phase": "applying",
        "pid": _dead_pid(),
        "started_at": "2026-01-01T00:00:00Z",
    }
    (sync_root / ".sync" / "active-run.json").write_text(json.dumps(active))
    with pytest.raises(MemoryRepoError) as caught:
        run_sync(_options(sync_root, session_logs, agent_command("add")))
    assert caught.value.code == "interrupted-run"
    assert "dsh-memory recover --confirmation RECOVER_MEMORY" in caught.value.message
    record = json.loads((sync_root / ".sync/runs/20260101T000000Z-deadbeef.json").read_text())
    assert record["status"] == "interrupted"
    health = MemoryService().health()["value"]
    assert health["activeRun"]["state"] == "interrupted"
    assert health["interruptedRun"]["run_id"] == "20260101T000000Z-deadbeef"
    assert health["needsManualRecovery"] is True
    assert not (sync_root / "handbook" / "new-fact.md").exists()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The installed ``dsh-memory-sync`` (it runs the fake agent as a process)."""
    return commands.run("dsh-memory-sync", *args, env=env)


def test_the_command_prints_json_and_progress_on_stderr(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    cli_env: dict[str, str],
) -> None:
    session_logs.dsh("d1", "hello")
    args = [
        "--agent",
        "command",
        "--agent-command",
        agent_command("add"),
        "--codex-sessions",
        str(session_logs.codex_sessions),
    ]
    done = _cli(args, cli_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["status"] == "applied"
    assert "dsh-memory-sync: 1 new idle session log(s)" in done.stderr
    quiet = _cli([*args, "--json"], cli_env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["status"] == "nothing-to-do"


def test_the_command_refuses_two_modes_with_a_json_error(cli_env: dict[str, str]) -> None:
    done = _cli(["--dry-run", "--preview", "20260101T000000Z-aaaaaaaa"], cli_env)
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)
    assert error["ok"] is False
    assert error["error"]["code"] == "sync-invalid-request"
    assert "mutually exclusive" in error["error"]["message"]


def test_the_command_says_when_memory_is_disabled(
    sync_root: Path, cli_env: dict[str, str], dsh_home: Path
) -> None:
    (dsh_home / "settings.yaml").write_text("memory:\n  enabled: false\n")
    done = _cli([], cli_env)
    assert done.returncode == 0
    assert "memory.enabled is false; skipping sync." in done.stderr
    assert json.loads(done.stdout)["status"] == "disabled"


def test_the_default_agent_is_dsh_headless_with_a_private_session_patch(
    sync_root: Path, session_logs: Any, tmp_path: Path
) -> None:
    # A stand-in `dsh` on PATH (via DSH_BIN) that records how it was called.
    fake = tmp_path / "bin" / "dsh-fake"
    fake.parent.mkdir()
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import json, os, sys\n"
        "patch = open(sys.argv[sys.argv.index('--patch') + 1]).read()\n"
        "os.makedirs('handbook', exist_ok=True)\n"
        "open('handbook/dsh.md', 'w').write('---\\nschema_version: 1\\nid: dsh\\n---\\n'"
        " + json.dumps({'argv': sys.argv[1:4], 'patch': patch,"
        " 'mode': os.environ['DSH_PERMISSION_MODE'], 'cwd': os.getcwd()}) + '\\n')\n"
    )
    fake.chmod(0o755)
    session_logs.dsh("d1", "hello")
    options = _options(sync_root, session_logs, "unused", extra_env={"DSH_BIN": str(fake)})
    options.agent, options.agent_command = None, None  # no agent named: the default
    result = run_sync(options)
    assert result["status"] == "applied"
    seen = json.loads((sync_root / "handbook" / "dsh.md").read_text().split("---\n")[2])
    assert seen["argv"][:2] == ["--profile", "headless"] and seen["argv"][2] == "--patch"
    assert seen["patch"].startswith("- id: session-persistence-jsonl\n  config:\n    root: ")
    assert seen["mode"] == "workspace-write"
    assert seen["cwd"].endswith("/staging")


def test_the_command_applies_and_discards_previews(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    cli_env: dict[str, str],
) -> None:
    session_logs.dsh("d1", "hello")
    base = ["--agent", "command", "--agent-command", agent_command("add"), "--json"]
    stored = _cli([*base, "--preview", "20261201T100000Z-0000aaaa"], cli_env)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["status"] == "pending"
    applied = _cli(["--apply-preview", "20261201T100000Z-0000aaaa"], cli_env)
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["value"]["status"] == "applied"
    missing = _cli(["--discard-preview", "20261201T100000Z-0000aaaa"], cli_env)
    assert missing.returncode == 1
    assert json.loads(missing.stderr)["error"]["code"] == "preview-not-found"


def test_the_first_sync_creates_the_repository_and_skips_history(
    session_logs: Any, agent_command: Callable[[str], str], dsh_home: Path
) -> None:
    session_logs.dsh("history", "older than the repository")
    root = dsh_home / "storages" / "memory"
    result = run_sync(_options(root, session_logs, agent_command("add")))
    assert result["status"] == "nothing-to-do"
    assert (root / ".git").is_dir() and (root / "scripts" / "filter_session.py").is_file()


def test_preview_modes_also_respect_disabled_memory(
    sync_root: Path, cli_env: dict[str, str], dsh_home: Path
) -> None:
    (dsh_home / "settings.yaml").write_text("memory:\n  enabled: false\n")
    done = _cli(["--apply-preview", "20261201T100000Z-0000aaaa"], cli_env)
    assert done.returncode == 0
    assert json.loads(done.stdout)["status"] == "disabled"

"""Runs of the earlier tool seriousz158/dsh-memory beside ours, replayed byte for byte.

What each test writes is what that tool leaves on disk, pinned from its source and from
running it on a memory repository (v0.8.x):

- its sync (``dsh-memory-sync``, zsh) takes the lock and writes the active run through
  ``sync-apply.py acquire-lock`` / ``write-active``: helper processes that exit at once, so
  a live sync's lock and active run name dead pids. Its rule (``acquire_operation_lock``,
  and ``acquireOperationLock`` in ``operation-lock.js``): a lock is held while its pid runs
  *or* its ``startedAt`` is under six hours old (``DEFAULT_STALE_MS``);
- its host (``index.js``) never removes ``active-run.json`` - ``clearActiveRun`` compares
  ``existing.runId`` with a record keyed ``run_id`` - after ``migrateLegacy``, ``rollback``
  and ``clear``; its rollback journals under ``<stamp>-rollback`` while the active run is
  ``<stamp>-rollback-<pid>``, and its clear journals nothing;
- its CLI ``--apply-preview`` makes the recovery and apply commits with the run id
  ``preview`` in their subjects (``apply_preview`` passes ``--operation-name`` as the run
  id) and journals nothing.

Every replay goes through the installed ``dsh-memory`` command.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

RECORD = "---\nschema_version: 1\nid: user/pref\ntype: preference\n---\npnpm\n"
OTHER = "---\nschema_version: 1\nid: user/other\ntype: preference\n---\nuv\n"
SYNC_RUN = "20261204T030000Z-0a1b2c3d"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed ``dsh-memory``, a process of its own: a run tells a live lock holder
    from a dead one by its process id."""
    return commands.run("dsh-memory", *args, input=stdin)


def ok(*args: str, stdin: str | None = None) -> Any:
    done = cli(*args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["value"]


def error_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 1, done.stdout
    error: dict[str, Any] = json.loads(done.stderr)["error"]
    return error


def dead_pid() -> int:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait()
    return child.pid


def seconds(moment: dt.datetime) -> str:
    """``startedAt`` / ``started_at`` as its sync helper writes them (``%Y-%m-%dT%H:%M:%SZ``)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def millis(moment: dt.datetime) -> str:
    """As its host writes them (JavaScript's ``toISOString``)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def compact(value: dict[str, Any]) -> str:
    """``json.dumps(..., separators=(",", ":")) + "\\n"``: the sync helper's files."""
    return json.dumps(value, separators=(",", ":")) + "\n"


def pretty(value: dict[str, Any]) -> str:
    """``JSON.stringify(value, null, 2) + "\\n"``: the host's files."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def earlier_sync_holds_the_lock(root: Path, started: dt.datetime) -> None:
    """A sync of the earlier tool between ``acquire-lock`` and its apply: exact bytes."""
    (root / ".sync" / "operation.lock").write_text(
        compact(
            {
                "operation": "sync",
                "pid": dead_pid(),
                "runId": SYNC_RUN,
                "startedAt": seconds(started),
            }
        )
    )
    (root / ".sync" / "active-run.json").write_text(
        compact(
            {
                "schema_version": 1,
                "run_id": SYNC_RUN,
                "operation": "sync",
                "status": "running",
                "phase": "staging",
                "pid": dead_pid(),
                "started_at": seconds(started),
            }
        )
    )


def snapshot(root: Path) -> dict[str, Any]:
    """Everything a writer could change: HEAD, index, every file under the root."""
    files = {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }
    return {
        "head": git(root, "rev-parse", "HEAD"),
        "index": git(root, "ls-files", "-s"),
        "files": files,
    }


def test_a_live_earlier_sync_is_in_progress_for_every_writer_and_nothing_changes(
    memory_root: Path,
    tmp_path: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    ok("write", "handbook/pref.md", "-", stdin=RECORD)
    run_id = ok("runs")["runs"][0]["run_id"]
    earlier_sync_holds_the_lock(memory_root, dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
    clean = snapshot(memory_root)
    rolled = cli("rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert error_of(rolled)["code"] == "operation-in-progress"
    assert snapshot(memory_root) == clean
    health = ok("health")
    assert health["operationLock"]["active"] is True
    assert health["activeRun"]["state"] == "running"
    assert (health["interruptedRun"], health["needsManualRecovery"]) == (None, False)
    # Edits for `adopt` and a legacy record for `migrate-legacy`, then every other writer.
    (memory_root / "handbook" / "hand.md").write_text(RECORD.replace("user/pref", "user/hand"))
    (memory_root / "handbook" / "legacy.md").write_text("a legacy note\n")
    session_logs.dsh("d1", "hello")
    os.utime(memory_root / ".last-sync", (0, 0))
    before = snapshot(memory_root)
    attempts = [
        ["write", "handbook/other.md", "-"],
        ["remove", "handbook/pref.md"],
        ["adopt"],
        ["clear", "--confirmation", "DELETE_MEMORY"],
        ["migrate-legacy", "--apply"],
        ["recover", "--confirmation", "RECOVER_MEMORY"],
    ]
    for args in attempts:
        error = error_of(cli(*args, stdin=OTHER))
        assert error["code"] == "operation-in-progress", (args, error)
        assert "seriousz158/dsh-memory" in error["message"]
    synced = commands.run(
        "dsh-memory-sync", "--json", "--agent", "command", "--agent-command", agent_command("add")
    )
    assert error_of(synced)["code"] == "operation-in-progress"
    assert snapshot(memory_root) == before  # no journal record, no take-over
    # Its sync ends (clear-active, release-lock): ours writes again.
    (memory_root / ".sync" / "active-run.json").unlink()
    (memory_root / ".sync" / "operation.lock").unlink()
    assert ok("write", "handbook/other.md", "-", stdin=OTHER)["status"] == "applied"


def test_the_earlier_tools_lock_is_stale_by_its_own_rule_after_six_hours(
    memory_root: Path,
) -> None:
    # Dead pids and a startedAt 7 hours old: the earlier tool itself would take this over
    # and journal the run as interrupted; so does ours (and asks for recovery).
    earlier_sync_holds_the_lock(memory_root, dt.datetime.now(dt.UTC) - dt.timedelta(hours=7))
    assert ok("health")["activeRun"]["state"] == "interrupted"
    assert error_of(cli("write", "handbook/x.md", "-", stdin=OTHER))["code"] == "interrupted-run"
    recovered = ok("recover", "--confirmation", "RECOVER_MEMORY")
    assert (recovered["case"], recovered["interruptedRunId"]) == ("nothing-landed", SYNC_RUN)
    assert ok("write", "handbook/x.md", "-", stdin=OTHER)["status"] == "applied"


def test_the_earlier_hosts_lock_with_milliseconds_and_a_live_pid_is_held(memory_root: Path) -> None:
    # Its host process (DSH) runs a rollback: pretty JSON, toISOString, the host's own pid.
    now = dt.datetime.now(dt.UTC)
    run_id = f"{now:%Y%m%dT%H%M%SZ}-rollback-{os.getpid()}"
    (memory_root / ".sync" / "operation.lock").write_text(
        pretty(
            {"operation": "rollback", "pid": os.getpid(), "runId": run_id, "startedAt": millis(now)}
        )
    )
    before = snapshot(memory_root)
    assert error_of(cli("write", "handbook/x.md", "-", stdin=OTHER))["code"] == (
        "operation-in-progress"
    )
    assert snapshot(memory_root) == before


def _earlier_rollback_litter(root: Path, pid: int) -> str:
    """``rollback`` of the earlier host on our edit run, as it leaves the repository."""
    ok("write", "handbook/pref.md", "-", stdin=RECORD)
    target = ok("runs")["runs"][0]["run_id"]
    started = dt.datetime.now(dt.UTC)
    active_id = f"{started:%Y%m%dT%H%M%SZ}-rollback-{pid}"
    pre = git(root, "rev-parse", "HEAD").strip()
    git(root, "rm", "-q", "handbook/pref.md")
    git(root, "commit", "-q", "-m", f"DPSK memory rollback: {target}")
    rollback_commit = git(root, "rev-parse", "HEAD").strip()
    record = {
        "schema_version": 1,
        "run_id": f"{started:%Y%m%dT%H%M%SZ}-rollback",
        "operation": "rollback",
        "status": "rolled_back",
        "started_at": millis(started),
        "finished_at": millis(started),
        "candidate_sessions": 0,
        "processed_sessions": 0,
        "skipped_sessions": 0,
        "changed_paths": [],
        "recovery_commit": pre,
        "apply_commit": rollback_commit,
        "error_code": None,
    }
    (root / ".sync" / "runs" / f"{record['run_id']}.json").write_text(pretty(record))
    fields = (
        "run_id",
        "operation",
        "status",
        "started_at",
        "finished_at",
        "changed_paths",
        "recovery_commit",
        "apply_commit",
        "error_code",
    )
    last = {key: record[key] for key in fields}
    (root / ".sync" / "last-run.json").write_text(pretty(last))
    git(root, "add", "--", ".sync")
    git(root, "commit", "-q", "-m", f"DPSK memory journal: {record['run_id']}", "--", ".sync")
    (root / ".sync" / "active-run.json").write_text(
        pretty(
            {
                "schema_version": 1,
                "run_id": active_id,
                "operation": "rollback",
                "status": "running",
                "phase": "finalizing",
                "pid": pid,
                "started_at": millis(started),
            }
        )
    )
    return active_id


@pytest.mark.parametrize("host", ["exited", "still running"])
def test_the_earlier_hosts_rollback_litter_is_a_finished_run(host: str, memory_root: Path) -> None:
    pid = dead_pid() if host == "exited" else os.getpid()  # DSH keeps running after it
    _earlier_rollback_litter(memory_root, pid)
    health = ok("health")
    assert (health["activeRun"], health["interruptedRun"]) == (None, None)
    assert health["needsManualRecovery"] is False, health["recoverySteps"]
    assert ok("write", "handbook/other.md", "-", stdin=OTHER)["status"] == "applied"
    assert not (memory_root / ".sync" / "active-run.json").exists()
    assert [r["status"] for r in ok("runs")["runs"]].count("interrupted") == 0


def _earlier_clear(root: Path) -> tuple[str, str, str]:
    """``clear`` of the earlier host: "DPSK memory cleared" on HEAD, no journal, litter."""
    ok("write", "handbook/pref.md", "-", stdin=RECORD)
    started = dt.datetime.now(dt.UTC)
    pid = dead_pid()
    active_id = f"{started:%Y%m%dT%H%M%SZ}-clear-{pid}"
    recovery = git(root, "rev-parse", "HEAD").strip()
    git(root, "rm", "-q", "handbook/pref.md")
    git(root, "commit", "-q", "-m", "DPSK memory cleared")
    (root / ".sync" / "active-run.json").write_text(
        pretty(
            {
                "schema_version": 1,
                "run_id": active_id,
                "operation": "clear",
                "status": "running",
                "phase": "finalizing",
                "pid": pid,
                "started_at": millis(started),
            }
        )
    )
    return active_id, recovery, git(root, "rev-parse", "HEAD").strip()


def test_writes_go_on_after_the_earlier_hosts_clear(memory_root: Path) -> None:
    _earlier_clear(memory_root)
    assert ok("health")["activeRun"] is None
    assert ok("write", "handbook/other.md", "-", stdin=OTHER)["status"] == "applied"


def test_recover_journals_the_earlier_hosts_clear_and_rollback_undoes_it(memory_root: Path) -> None:
    active_id, recovery, clear_commit = _earlier_clear(memory_root)
    health = ok("health")
    assert health["headAheadOfJournal"] is True and health["activeRun"] is None
    (step,) = health["recoverySteps"]
    assert "DPSK memory cleared" in step and "dsh-memory recover" in step
    recovered = ok("recover", "--confirmation", "RECOVER_MEMORY")
    assert (recovered["case"], recovered["journaledRunId"]) == ("unjournaled", active_id)
    (cleared,) = ok("runs", "--operation", "clear")["runs"]
    assert (cleared["run_id"], cleared["status"]) == (active_id, "applied")
    assert (cleared["recovery_commit"], cleared["apply_commit"]) == (recovery, clear_commit)
    assert cleared["changed_paths"] == ["handbook/pref.md"]
    assert ok("health")["needsManualRecovery"] is False
    ok("rollback", "--run-id", active_id, "--confirmation", "ROLLBACK_MEMORY")
    assert (memory_root / "handbook" / "pref.md").read_text() == RECORD


def test_recover_journals_the_earlier_clis_apply_preview_so_health_and_rollback_work(
    memory_root: Path,
) -> None:
    # `dsh-memory-sync --apply-preview <id>`: apply commit named "preview", no journal.
    (memory_root / "handbook" / "pref.md").write_text(RECORD)
    recovery = git(memory_root, "rev-parse", "HEAD").strip()
    git(memory_root, "add", "handbook")
    git(memory_root, "commit", "-q", "-m", "DPSK memory sync applied: preview")
    applied = git(memory_root, "rev-parse", "HEAD").strip()
    health = ok("health")
    assert health["needsManualRecovery"] is True
    (step,) = health["recoverySteps"]
    assert "DPSK memory sync applied: preview" in step and "dsh-memory recover" in step
    recovered = ok("recover", "--confirmation", "RECOVER_MEMORY")
    assert recovered["case"] == "unjournaled"
    journaled = recovered["journaledRunId"]
    assert journaled.endswith("-preview")
    (run,) = ok("runs", "--operation", "preview")["runs"]
    assert (run["run_id"], run["status"], run["recovery_commit"], run["apply_commit"]) == (
        journaled,
        "applied",
        recovery,
        applied,
    )
    assert ok("health")["needsManualRecovery"] is False
    ok("rollback", "--run-id", journaled, "--confirmation", "ROLLBACK_MEMORY")
    assert not (memory_root / "handbook" / "pref.md").exists()


def test_recover_keeps_our_own_clear_killed_after_its_compare_and_swap(
    memory_root: Path, cli_env: dict[str, str]
) -> None:
    # The same class on our side: a landed clear was called "nothing-landed" (only a
    # "sync applied" subject counted) and its files were left as uncommitted changes.
    ok("write", "handbook/pref.md", "-", stdin=RECORD)
    killed = commands.run(
        "dsh-memory",
        "clear",
        "--confirmation",
        "DELETE_MEMORY",
        env=commands.environ(DSH_MEMORY_TEST_KILL_AT="after-cas"),
    )
    assert killed.returncode == -9, killed.stderr
    recovered = ok("recover", "--confirmation", "RECOVER_MEMORY")
    assert recovered["case"] == "kept-commits"
    assert recovered["restoredPaths"] == ["handbook/pref.md"]
    assert not (memory_root / "handbook" / "pref.md").exists()
    assert git(memory_root, "status", "--porcelain").strip() == ""
    (cleared,) = ok("runs", "--operation", "clear")["runs"]
    assert cleared["status"] == "applied"
    ok("rollback", "--run-id", cleared["run_id"], "--confirmation", "ROLLBACK_MEMORY")
    assert (memory_root / "handbook" / "pref.md").read_text() == RECORD

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from dsh_test_support.gitcmd import git

from dsh_memory.errors import OperationInProgressError
from dsh_memory.store.oplock import operation_lock, read_operation_lock


def test_lock_file_has_earlier_tools_format_and_mode(memory_root: Path) -> None:
    with operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"):
        lock = memory_root / ".sync" / "operation.lock"
        data = json.loads(lock.read_text())
        # The earlier tool's four fields first (it reads them by name), then our owner data.
        assert list(data) == ["operation", "pid", "runId", "startedAt", "startTime", "hostname"]
        assert data["operation"] == "clear"
        assert data["pid"] == os.getpid()
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600


def test_active_run_records_phase(memory_root: Path) -> None:
    with operation_lock(memory_root, "migrate", "20260101T000000Z-migrate-1") as run:
        run.set_phase("validating")
        active = json.loads((memory_root / ".sync" / "active-run.json").read_text())
        assert active["phase"] == "validating"
        assert active["status"] == "running"


def test_lock_and_active_run_removed_after_run(memory_root: Path) -> None:
    with operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"):
        pass
    assert read_operation_lock(memory_root) is None
    assert not (memory_root / ".sync" / "active-run.json").exists()


def test_second_writer_is_refused(memory_root: Path) -> None:
    with (
        operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"),
        pytest.raises(OperationInProgressError),
        operation_lock(memory_root, "migrate", "20260101T000000Z-migrate-2"),
    ):
        pass


def test_lock_and_active_run_are_git_ignored(memory_root: Path) -> None:
    with operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"):
        status = git(memory_root, "status", "--porcelain")
    assert status == ""


def _dead_pid() -> int:
    import subprocess
    import sys

    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait()
    return child.pid


def _dead_lock(root: Path, age_seconds: float) -> Path:
    lock = root / ".sync" / "operation.lock"
    owner = {"operation": "sync", "pid": _dead_pid(), "runId": "r", "startedAt": "t"}
    lock.write_text(json.dumps(owner))
    old = lock.stat().st_mtime - age_seconds
    os.utime(lock, (old, old))
    return lock


def test_dead_owners_old_lock_without_active_run_is_taken_over(memory_root: Path) -> None:
    _dead_lock(memory_root, 7 * 3600)
    with operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"):
        data = json.loads((memory_root / ".sync" / "operation.lock").read_text())
        assert data["operation"] == "clear"


def test_dead_owners_recent_lock_is_not_taken_over(memory_root: Path) -> None:
    lock = _dead_lock(memory_root, 60)
    with (
        pytest.raises(OperationInProgressError),
        operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"),
    ):
        pass
    assert json.loads(lock.read_text())["operation"] == "sync"

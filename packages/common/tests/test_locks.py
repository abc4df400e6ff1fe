from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from dsh_common.errors import LockHeldError
from dsh_common.locks import (
    acquire_lock,
    break_dead_lock,
    locked,
    owner_alive,
    process_start_time,
    read_lock_owner,
)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_lock_file_names_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with locked(path):
        owner = json.loads(path.read_text())
        assert owner["pid"] == os.getpid()
        assert owner["startTime"] == process_start_time(os.getpid())
        assert set(owner) == {"pid", "startTime", "hostname", "createdAt"}
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not path.exists()


def test_second_acquire_fails_fast_naming_a_live_holder(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with locked(path):
        started = time.monotonic()
        with pytest.raises(LockHeldError) as caught:
            acquire_lock(path)
        assert time.monotonic() - started < 1
    error = caught.value
    assert error.code == "lock-held"
    assert error.details["ownerAlive"] is True
    assert f"pid {os.getpid()}" in error.message
    assert "alive" in error.message


def test_lock_of_a_dead_owner_is_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    pid = _dead_pid()
    path.write_text(json.dumps({"pid": pid, "startTime": "2020-01-01T00:00:00.000Z"}))
    with pytest.raises(LockHeldError) as caught:
        acquire_lock(path)
    assert caught.value.details["ownerAlive"] is False
    assert "no longer running" in caught.value.message
    assert path.exists(), "a dead owner's lock is never removed implicitly"


def test_break_dead_lock_only_for_dead_owners(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with locked(path), pytest.raises(LockHeldError):
        break_dead_lock(path)
    path.write_text(json.dumps({"pid": _dead_pid()}))
    assert break_dead_lock(path) is True
    assert not path.exists()
    assert break_dead_lock(path) is False


def test_unreadable_owner_is_not_breakable(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    path.write_text("not json")
    assert read_lock_owner(path) == {}
    with pytest.raises(LockHeldError):
        break_dead_lock(path)
    assert path.exists()


def test_reused_pid_with_other_start_time_counts_as_dead() -> None:
    owner = {"pid": os.getpid(), "startTime": "2001-01-01T00:00:00.000Z"}
    assert owner_alive(owner) is False
    assert owner_alive({"pid": os.getpid(), "startTime": process_start_time(os.getpid())})
    assert owner_alive({"pid": os.getpid(), "hostname": "another-host"}) is True
    assert owner_alive({}) is None


def test_release_leaves_a_lock_it_does_not_own(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    lock = acquire_lock(path)
    path.write_text(json.dumps({"pid": 1, "note": "someone else"}))
    lock.release()
    assert path.exists()


def test_custom_owner_data_is_written_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "op.lock"
    data = {"operation": "clear", "pid": os.getpid(), "runId": "r1", "startedAt": "t"}
    with locked(path, owner_data=data):
        assert json.loads(path.read_text()) == data


def test_wait_seconds_waits_for_release(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    first = acquire_lock(path)
    threading.Timer(0.2, first.release).start()
    with acquire_lock(path, wait_seconds=3):
        assert read_lock_owner(path) is not None


_RACER = textwrap.dedent(
    """
    import sys, time, pathlib
    from dsh_common.locks import acquire_lock
    from dsh_common.errors import LockHeldError
    go = pathlib.Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    try:
        lock = acquire_lock(sys.argv[1])
    except LockHeldError:
        print("lost")
    else:
        print("won")
        time.sleep(0.5)
        lock.release()
    """
)


def test_racing_processes_exactly_one_wins(tmp_path: Path) -> None:
    lock, go = tmp_path / "race.lock", tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(lock), str(go)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    time.sleep(0.3)
    go.touch()
    results = sorted(r.communicate(timeout=30)[0].strip() for r in racers)
    assert results == ["lost", "lost", "lost", "won"]
    assert not lock.exists()

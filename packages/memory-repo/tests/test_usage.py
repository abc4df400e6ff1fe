"""The usage sidecar: format, owner-only atomic writes, the cross-process lock, validation."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsh_memory.errors import UnsafeLayoutError, UsageBusyError, UsageInvalidError
from dsh_memory.store import usage


@pytest.fixture
def root(usage_root: Path) -> Path:
    return usage_root


MOMENT = dt.datetime(2026, 8, 21, 2, 0, tzinfo=dt.UTC)


def test_first_use_writes_the_earlier_tools_format(root: Path) -> None:
    usage.record_usage(root, ["handbook/a.md"], MOMENT)
    data = json.loads((root / ".sync/usage.json").read_text())
    assert data == {
        "schema_version": 1,
        "records": {"handbook/a.md": {"usage_count": 1, "last_usage": "2026-08-21T02:00:00.000Z"}},
    }


def test_sidecar_is_owner_only(root: Path) -> None:
    usage.record_usage(root, ["handbook/a.md"])
    assert stat.S_IMODE((root / ".sync/usage.json").stat().st_mode) == 0o600


def test_repeated_use_increments_and_duplicates_count_once(root: Path) -> None:
    usage.record_usage(root, ["handbook/a.md"])
    value = usage.record_usage(root, ["handbook/a.md", "handbook/a.md"])
    assert value["records"]["handbook/a.md"]["usage_count"] == 2


def test_sidecar_names_are_added_to_git_exclude_once(root: Path) -> None:
    (root / ".git/info/exclude").write_text("# mine\n*.swp")
    usage.record_usage(root, ["handbook/a.md"])
    usage.record_usage(root, ["handbook/a.md"])
    lines = (root / ".git/info/exclude").read_text().splitlines()
    assert lines == [
        "# mine",
        "*.swp",
        ".sync/usage.json",
        ".sync/usage.lock",
        ".sync/.usage.*.tmp",
    ]


def test_write_leaves_no_lock_or_temporary(root: Path) -> None:
    (root / ".sync/.usage.123.dead.tmp").write_text("left by a crash")
    usage.record_usage(root, ["handbook/a.md"])
    assert sorted(path.name for path in (root / ".sync").iterdir()) == ["usage.json"]


@pytest.mark.parametrize("path", ["summary.md", "handbook/../x.md", "/etc/x.md", "handbook/a.txt"])
def test_non_record_paths_are_refused(root: Path, path: str) -> None:
    with pytest.raises(UsageInvalidError):
        usage.record_usage(root, [path])
    assert not (root / ".sync/usage.json").exists()


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"schema_version": 2, "records": {}}',
        '{"schema_version": 1, "records": []}',
        json.dumps({"schema_version": 1, "records": {"handbook/a.md": {"usage_count": -1}}}),
        json.dumps({"schema_version": 1, "records": {"notes.txt": {"usage_count": 1}}}),
        json.dumps({"schema_version": 1, "records": {"handbook/a.md": {"usage_count": 1.5}}}),
        json.dumps(
            {"schema_version": 1, "records": {"handbook/a.md": {"usage_count": 1, "last_usage": 5}}}
        ),
    ],
)
def test_malformed_sidecar_is_usage_invalid_and_kept(root: Path, content: str) -> None:
    (root / ".sync/usage.json").write_text(content)
    with pytest.raises(UsageInvalidError):
        usage.record_usage(root, ["handbook/a.md"])
    assert (root / ".sync/usage.json").read_text() == content


def test_oversized_sidecar_is_usage_invalid(root: Path) -> None:
    (root / ".sync/usage.json").write_text(" " * (usage.MAX_USAGE_BYTES + 1))
    with pytest.raises(UsageInvalidError):
        usage.read_usage(root)


def test_symlinked_sidecar_is_unsafe_layout(root: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text('{"schema_version": 1, "records": {}}')
    (root / ".sync/usage.json").symlink_to(target)
    with pytest.raises(UnsafeLayoutError):
        usage.record_usage(root, ["handbook/a.md"])
    assert target.read_text() == '{"schema_version": 1, "records": {}}'


def _hold_lock(root: Path, pid: int, age_seconds: float) -> Path:
    lock = root / ".sync/usage.lock"
    lock.mkdir()
    (lock / "owner.json").write_text(json.dumps({"pid": pid, "started_at": "x"}))
    old = time.time() - age_seconds
    os.utime(lock, (old, old))
    return lock


def _dead_pid() -> int:
    process = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(process.stdout)


def test_lock_held_by_a_live_process_is_usage_busy(root: Path) -> None:
    _hold_lock(root, os.getpid(), age_seconds=3600)
    with pytest.raises(UsageBusyError) as caught:
        usage.record_usage(root, ["handbook/a.md"])
    assert caught.value.code == "usage-busy"
    assert not (root / ".sync/usage.json").exists()


def test_fresh_lock_of_a_dead_process_is_not_stolen(root: Path) -> None:
    _hold_lock(root, _dead_pid(), age_seconds=1)
    with pytest.raises(UsageBusyError):
        usage.record_usage(root, ["handbook/a.md"])


def test_old_lock_of_a_dead_process_is_stolen(root: Path) -> None:
    _hold_lock(root, _dead_pid(), age_seconds=60)
    usage.record_usage(root, ["handbook/a.md"])
    assert usage.read_usage(root)["records"]["handbook/a.md"]["usage_count"] == 1
    assert not (root / ".sync/usage.lock").exists()


WORKER = """
import sys
from pathlib import Path
from dsh_memory.store.usage import record_usage
root = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    record_usage(root, ["handbook/shared.md", "rollouts/" + sys.argv[3] + ".md"])
"""


def test_concurrent_processes_lose_no_update(root: Path) -> None:
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(root), "15", f"w{index}"])
        for index in range(4)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    records = usage.read_usage(root)["records"]
    assert records["handbook/shared.md"]["usage_count"] == 60
    assert all(records[f"rollouts/w{index}.md"]["usage_count"] == 15 for index in range(4))


def test_non_utf8_git_exclude_is_kept_and_extended(root: Path) -> None:
    (root / ".git/info/exclude").write_bytes(b"caf\xe9\n")
    usage.record_usage(root, ["handbook/a.md"])
    data = (root / ".git/info/exclude").read_bytes()
    assert data.startswith(b"caf\xe9\n")
    assert b".sync/usage.json\n" in data

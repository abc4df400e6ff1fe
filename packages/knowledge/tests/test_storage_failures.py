"""Storage that fails as machines fail: a damaged database page, a read-only database file
(reads and the prompt hook still work), a genuinely full disk (a small tmpfs mounted in a
private mount namespace). Each write gets its documented code and a message, exit 1, and
leaves the database as it was."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import commands

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .command_helpers import digest, fails, ok, run


def _damaged_copy(db: Path, tmp_path: Path) -> Path:
    # Fixture data through the library (one process); the damaged file is then driven
    # through the real command.
    with KnowledgeStore(db) as store:
        KnowledgeRepository(store).create_many(
            [
                {
                    "type": "fact",
                    "content": f"Filler item {number}: " + "lorem ipsum dolor " * 200,
                    "scope": {"workspace": "/w"},
                }
                for number in range(40)
            ]
        )
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    damaged = tmp_path / "damaged.sqlite"
    shutil.copyfile(db, damaged)
    with damaged.open("r+b") as handle:
        # Garbage over a run of pages in the middle: b-tree pages of the tables and indexes.
        for page in range(2, pages, 2):
            handle.seek(page * size)
            handle.write(b"\xde\xad\xbe\xef" * (size // 4))
    return damaged


def test_damaged_database_page_is_database_corrupt(seeded_file: Path, tmp_path: Path) -> None:
    damaged = _damaged_copy(seeded_file, tmp_path)
    error = fails(
        "--db", str(damaged), "add", "--workspace", "/w", "--type", "fact", "--content", "new"
    )
    assert error["code"] == "database-corrupt"
    assert "damaged" in error["message"]
    for args in (["list"], ["search", "lorem"], ["retrieve", "lorem", "--workspace", "/w"]):
        done = run("--db", str(damaged), *args)
        if done.returncode != 0:
            assert json.loads(done.stderr)["error"]["code"] == "database-corrupt"


def _make_read_only(path: Path) -> None:
    if os.geteuid() != 0:
        path.chmod(0o444)
        return
    # root ignores permission bits; the immutable attribute stops even root from writing.
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make a file read-only for root here: {made.stderr!r}")


def _make_writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    path.chmod(0o644)


def test_add_on_a_read_only_database_is_storage_error_and_reads_still_work(
    seeded_file: Path,
) -> None:
    connection = sqlite3.connect(seeded_file)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    before = digest(seeded_file)
    _make_read_only(seeded_file)
    try:
        error = fails(
            "--db",
            str(seeded_file),
            "add",
            "--workspace",
            "/w",
            "--type",
            "fact",
            "--content",
            "new",
        )
        assert error["code"] == "storage-error"
        assert "read-only" in error["message"]
        assert [i["content"] for i in ok("--db", str(seeded_file), "list")["items"]] == [
            "The seed item."
        ]
        # The prompt hook still injects: only its per-session bookkeeping is skipped.
        payload = json.dumps({"session_id": "s1", "cwd": "/w", "prompt": "the seed item"})
        hook = commands.run(
            "dsh-knowledge", "hook", "user-prompt-submit", "--db", str(seeded_file), input=payload
        )
        assert (hook.returncode, hook.stderr) == (0, "")
        assert "The seed item." in hook.stdout
        assert digest(seeded_file) == before
    finally:
        _make_writable(seeded_file)


_DISK_FULL_DRIVER = r"""
import json, os, subprocess, sys
mount, room, cli = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
db = os.path.join(mount, "knowledge.sqlite")
def call(*args):
    done = subprocess.run([*cli, "--db", db, *args], capture_output=True, text=True)
    return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}
seed = call("add", "--workspace", "/w", "--type", "fact", "--content", "The seed item.")
# Fill the file system, with an ordinary file, to within `room` bytes of full.
stat = os.statvfs(mount)
filler = os.path.join(mount, "filler")
with open(filler, "wb") as handle:
    handle.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - room))
big = call("add", "--workspace", "/w", "--type", "fact", "--content", "x " * 60000)
os.remove(filler)  # room again, to read back what is stored
after = call("list")
print(json.dumps({"seed": seed, "big": big, "after": after}))
"""


# 16 KiB left: opening the WAL database cannot even grow its -shm file (SQLITE_IOERR_SHMSIZE).
# 80 KiB left: it opens, and writing the 120 KB item into the WAL fails (SQLITE_FULL).
@pytest.mark.parametrize("room", [16 * 1024, 80 * 1024])
def test_a_full_disk_is_storage_error_saying_disk_full_and_nothing_changes(
    tmp_path: Path, room: int
) -> None:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare(1) is not installed: no private mount namespace for a small tmpfs")
    mount = tmp_path / "small-disk"
    mount.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(_DISK_FULL_DRIVER)
    script = 'mount -t tmpfs -o size=512k tmpfs "$1" && shift && exec "$@"'
    done = subprocess.run(
        [
            unshare,
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
            str(mount),
            sys.executable,
            str(driver),
            str(mount),
            str(room),
            str(commands.program("dsh-knowledge")),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0 and "mount" in done.stderr and not done.stdout:
        pytest.skip(f"cannot mount a tmpfs in a private namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["seed"]["rc"] == 0, result["seed"]["err"]
    assert result["big"]["rc"] == 1, result["big"]
    error = json.loads(result["big"]["err"])["error"]
    assert error["code"] == "storage-error"
    assert error["message"].startswith("disk full")
    assert result["after"]["rc"] == 0, result["after"]["err"]
    items = json.loads(result["after"]["out"])["items"]
    assert [i["content"] for i in items] == ["The seed item."]


def test_read_only_database_with_the_old_origin_index_still_opens_for_reading(
    tmp_path: Path,
) -> None:
    from .test_store import _build_ours_0_1_0, _origin_index

    path = tmp_path / "old.sqlite"
    _build_ours_0_1_0(path)
    with KnowledgeStore(path):
        pass  # builds the search index once, while the file is writable
    connection = sqlite3.connect(path)
    connection.execute("DROP INDEX knowledge_origin_scope_status_idx")
    connection.execute(
        "CREATE INDEX knowledge_origin_scope_status_idx"
        " ON knowledge(creation_origin, workspace, project, status)"
    )
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.commit()
    connection.close()
    _make_read_only(path)
    try:
        assert [i["content"] for i in ok("--db", str(path), "list")["items"]] == ["Kept."]
        assert _origin_index(path)[0][0] == "creation_origin"  # left as it was
    finally:
        _make_writable(path)
    with KnowledgeStore(path):
        pass
    assert _origin_index(path)[0] == ["workspace", "project", "status", "creation_origin"]

"""Issue 8, points 11-13: input and machines that used to end in ``internal-error``.

Everything runs the real ``dsh-knowledge`` process on real files: a trailing newline in a
commit id or timestamp, arguments that are not UTF-8, a 50,000-character search, a limit of
10**23, a damaged database page, a read-only database file, and a genuinely full disk (a
small tmpfs mounted in a private mount namespace). Each must get its documented code, a
message, exit 1, and leave the database as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

CLI = [sys.executable, "-m", "dsh_knowledge.cli"]


def run(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, check=False, timeout=120)


def ok(*args: str | bytes) -> Any:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fails(*args: str | bytes) -> dict[str, str]:
    done = run(*args)
    assert done.returncode == 1, done.stdout
    assert done.stdout == b""
    error: dict[str, str] = json.loads(done.stderr)["error"]
    assert error["message"]
    assert error["code"] != "internal-error", error
    return error


def add(db: str | Path, content: str, *extra: str) -> dict[str, Any]:
    item: dict[str, Any] = ok(
        "--db", str(db), "add", "--workspace", "/w", "--type", "fact", "--content", content, *extra
    )
    return item


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def seeded(db: str) -> str:
    """A store on either backend holding one item."""
    add(db, "The seed item.")
    return db


@pytest.fixture
def seeded_file(tmp_path: Path) -> Path:
    """An SQLite file holding one item (for what only a file can suffer)."""
    path = tmp_path / "kb" / "knowledge.sqlite"
    add(path, "The seed item.")
    return path


# --- point 11: full matches ------------------------------------------------------------------


def test_commit_of_39_hex_and_a_newline_is_invalid_provenance(seeded: str) -> None:
    evidence = {"type": "file", "source": "a.py", "gitProvenance": {"commit": "a" * 39 + "\n"}}
    evidence["gitProvenance"]["path"] = "a.py"
    error = fails(
        "--db",
        str(seeded),
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "x",
        "--evidence",
        json.dumps(evidence),
    )
    assert error["code"] == "invalid-git-provenance"
    assert len(ok("--db", str(seeded), "list")["items"]) == 1


@pytest.mark.parametrize(
    "timestamp", ["2026-11-30T12:00:00.000Z\n", "\uff12\uff10\uff12\uff16-11-30T12:00:00.000Z"]
)
def test_timestamp_with_trailing_newline_or_non_ascii_digits_is_invalid(
    seeded: str, timestamp: str
) -> None:
    evidence = json.dumps({"type": "session", "source": "s-1", "timestamp": timestamp})
    error = fails(
        "--db",
        str(seeded),
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "x",
        "--evidence",
        evidence,
    )
    assert error["code"] == "invalid-input"
    assert len(ok("--db", str(seeded), "list")["items"]) == 1


# --- point 12: arguments that are not UTF-8 ----------------------------------------------------


def _tree(root: Path) -> list[tuple[str, str]]:
    return sorted(
        (os.fsdecode(p.relative_to(root)), digest(p) if p.is_file() else "dir")
        for p in root.rglob("*")
    )


@pytest.mark.parametrize(
    ("argv", "code", "shown"),
    [
        ([b"--db", b"@/\xffx", b"list"], "invalid-path", "--db '@/\\xffx'"),
        ([b"--db=@/\xffx", b"list"], "invalid-path", "--db '@/\\xffx'"),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/srv/\xffnope",
                b"--type",
                b"fact",
                b"--content",
                b"x",
            ],
            "invalid-path",
            "--workspace '/srv/\\xffnope'",
        ),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/w",
                b"--type",
                b"fact",
                b"--content",
                b"x",
                b"--repo",
                b"@/\xffrepo",
            ],
            "invalid-path",
            "--repo '@/\\xffrepo'",
        ),
        ([b"--db", b"@db", b"freshness", b"k", b"--repo", b"@/\xffr"], "invalid-path", "--repo"),
        ([b"--db", b"@db", b"health", b"k", b"--repo=@/\xffr"], "invalid-path", "--repo"),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/w",
                b"--type",
                b"fact",
                b"--content",
                b"caf\xe9",
            ],
            "invalid-arguments",
            "'caf\\xe9'",
        ),
        ([b"--db", b"@db", b"search", b"\xff\xfe"], "invalid-arguments", "'\\xff\\xfe'"),
        ([b"--db", b"@db", b"list", b"--workspace", b"\xff"], "invalid-path", "--workspace"),
        ([b"--db", b"@db", b"get", b"id-\x80"], "invalid-arguments", "'id-\\x80'"),
    ],
)
def test_undecodable_arguments_are_refused_with_bytes_escaped_and_nothing_changes(
    seeded: str, tmp_path: Path, argv: list[bytes], code: str, shown: str
) -> None:
    base = os.fsencode(tmp_path)
    # "@db" is the store (a path or a URL, which may hold "@" itself), any other "@" tmp_path.
    real = [
        os.fsencode(seeded).join(a.replace(b"@", base) for a in arg.split(b"@db")) for arg in argv
    ]
    before = _tree(tmp_path), ok("--db", seeded, "list")
    error = fails(*real)
    assert error["code"] == code
    assert shown.replace("@", str(tmp_path)) in error["message"]
    # No database, directory or file created or touched; the store holds what it held.
    assert (_tree(tmp_path), ok("--db", seeded, "list")) == before


# --- point 13: foreseeable failures ------------------------------------------------------------


def test_search_of_more_than_50000_characters_is_answered(seeded: str) -> None:
    long_text = "Ab" * 30_000
    item = add(seeded, f"prefix {long_text} suffix")
    found = ok("--db", str(seeded), "search", long_text)["items"]
    assert [i["id"] for i in found] == [item["id"]]
    # Still literal and ASCII-case-insensitive, as the LIKE search is for short queries.
    assert [i["id"] for i in ok("--db", str(seeded), "search", long_text.upper())["items"]] == [
        item["id"]
    ]
    assert ok("--db", str(seeded), "search", "%" * 50_001)["items"] == []


def test_a_limit_larger_than_sqlite_can_bind_lists_everything(seeded: str) -> None:
    add(seeded, "Second item.")
    assert len(ok("--db", str(seeded), "list", "--limit", str(10**23))["items"]) == 2
    assert len(ok("--db", str(seeded), "search", "item", "--limit", str(10**23))["items"]) == 2
    assert fails("--db", str(seeded), "list", "--limit", "1e23")["code"] == "invalid-arguments"


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
        hook = subprocess.run(
            [*CLI, "hook", "user-prompt-submit", "--db", str(seeded_file)],
            input=payload,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
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
            *CLI,
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


# --- the same through the library -------------------------------------------------------------


def test_library_database_path_with_undecodable_bytes_is_invalid_input(tmp_path: Path) -> None:
    from dsh_knowledge.errors import ValidationError

    target = tmp_path / "new" / os.fsdecode(b"\xffx.sqlite")
    with pytest.raises(ValidationError, match=r"\\xff"):
        KnowledgeStore(target)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"scope": {"workspace": "/w\udcff"}},
        {"scope": {"workspace": "/w\ud800"}},
        {"content": "caf\udce9"},
        {
            "evidence": [
                {"type": "session", "source": "s\udcff", "timestamp": "2026-01-01T00:00:00Z"}
            ]
        },
    ],
)
def test_library_text_with_lone_surrogates_is_invalid_input_and_stores_nothing(
    seeded: str, change: dict[str, Any]
) -> None:
    from dsh_knowledge.errors import ValidationError

    spec: dict[str, Any] = {"type": "fact", "content": "x", "scope": {"workspace": "/w"}}
    spec.update(change)
    with KnowledgeStore(seeded) as store:
        repository = KnowledgeRepository(store)
        with pytest.raises(ValidationError, match="undecodable"):
            repository.create(**spec)
        with pytest.raises(ValidationError, match="undecodable"):
            repository.search("\udcff")
        assert [i["content"] for i in repository.list()] == ["The seed item."]


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

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from dsh_common.errors import (
    AlreadyExistsError,
    FileTooLargeError,
    HardLinkedFileError,
    NotRegularFileError,
    SymlinkRejectedError,
)
from dsh_common.io import (
    OWNER_ONLY_FILE_MODE,
    atomic_write,
    create_exclusive,
    ensure_private_directory,
    read_bounded,
    refuse_hard_link,
)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_read_bounded_reads_up_to_the_limit(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"x" * 10)
    assert read_bounded(target, 10) == b"x" * 10


def test_read_bounded_reports_one_byte_over(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"x" * 11)
    with pytest.raises(FileTooLargeError) as caught:
        read_bounded(target, 10)
    assert caught.value.code == "file-too-large"


def test_huge_sparse_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    target = tmp_path / "huge"
    with open(target, "wb") as handle:
        handle.truncate(64 * 1024**3)  # 64 GiB sparse: reading it would take minutes
    started = time.monotonic()
    with pytest.raises(FileTooLargeError):
        read_bounded(target, 1024)
    assert time.monotonic() - started < 5


def test_read_bounded_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SymlinkRejectedError):
        read_bounded(tmp_path / "link", 100)


def test_read_bounded_refuses_directory_and_fifo_without_blocking(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFileError):
        read_bounded(tmp_path, 100)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError):
        read_bounded(fifo, 100)


def test_read_bounded_missing_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 100)


def test_create_exclusive_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "record.md"
    create_exclusive(target, b"first")
    with pytest.raises(AlreadyExistsError):
        create_exclusive(target, b"second")
    assert target.read_bytes() == b"first"


def test_create_exclusive_refuses_a_dangling_symlink(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(AlreadyExistsError):
        create_exclusive(tmp_path / "link", b"x")
    assert not (tmp_path / "elsewhere").exists()


def test_create_exclusive_applies_owner_only_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    create_exclusive(target, b"x", mode=OWNER_ONLY_FILE_MODE)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_atomic_write_replaces_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_atomic_write_creates_with_requested_mode(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write(target, b"x", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_atomic_write_refuses_hard_linked_target(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"shared")
    os.link(target, tmp_path / "other")
    with pytest.raises(HardLinkedFileError):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"shared"
    assert (tmp_path / "other").read_bytes() == b"shared"
    with pytest.raises(HardLinkedFileError):
        refuse_hard_link(target)
    assert _leftovers(tmp_path) == []


def test_atomic_write_refuses_symlink_target(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"keep")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SymlinkRejectedError):
        atomic_write(tmp_path / "link", b"new")
    assert (tmp_path / "real").read_bytes() == b"keep"


def test_atomic_write_removes_temp_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_ensure_private_directory(tmp_path: Path) -> None:
    made = ensure_private_directory(tmp_path / "a" / "b")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(SymlinkRejectedError):
        ensure_private_directory(tmp_path / "link")


def test_atomic_write_precondition_runs_last_and_can_abort(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    seen: list[list[str]] = []

    def refuse() -> None:
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        raise ValueError("changed underneath")

    with pytest.raises(ValueError, match="changed underneath"):
        atomic_write(target, b"new", precondition=refuse)
    assert len(seen[0]) == 2, "the temp file was already written when the check ran"
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []
    atomic_write(target, b"new", precondition=lambda: None)
    assert target.read_bytes() == b"new"


def test_atomic_write_rechecks_links_before_the_rename(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def another_writer_links_it() -> None:
        os.link(target, tmp_path / "sneaky")

    with pytest.raises(HardLinkedFileError):
        atomic_write(target, b"new", precondition=another_writer_links_it)
    assert target.read_bytes() == b"old"
    assert (tmp_path / "sneaky").read_bytes() == b"old"
    assert _leftovers(tmp_path) == []

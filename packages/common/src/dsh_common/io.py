"""Bounded, link-refusing reads and crash-safe writes.

Reads open with ``O_NOFOLLOW`` and check ``fstat`` on the opened descriptor, so the thing
checked is the thing read (no stat-then-open race). Writes either create exclusively or
replace atomically through a temporary file in the same directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from dsh_common.errors import (
    AlreadyExistsError,
    FileTooLargeError,
    HardLinkedFileError,
    NotRegularFileError,
    SymlinkRejectedError,
)

OWNER_ONLY_FILE_MODE = 0o600
OWNER_ONLY_DIR_MODE = 0o700

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def open_regular_nofollow(path: Path) -> int:
    """Open ``path`` read-only without following a final symlink; return the descriptor.

    Raises FileNotFoundError when absent, SymlinkRejectedError for a link, and
    NotRegularFileError for anything but a regular file (directory, FIFO, device...).
    ``O_NONBLOCK`` keeps a FIFO from blocking the open; it is harmless for regular files.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkRejectedError(f"{path} is a symbolic link") from exc
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise NotRegularFileError(f"{path} is not a regular file") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """Read a whole regular file of at most ``limit`` bytes.

    Reads at most ``limit + 1`` bytes, so an oversized file is reported as too large
    without being read in full, and a file that grows while being read is caught too.
    """
    fd = open_regular_nofollow(Path(path))
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise FileTooLargeError(
                f"{path} is larger than {limit} bytes", details={"limit": limit}
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{path} is larger than {limit} bytes", details={"limit": limit})
    return data


def refuse_hard_link(path: str | os.PathLike[str]) -> None:
    """Raise HardLinkedFileError if ``path`` (not followed) has more than one link."""
    info = os.lstat(path)
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise HardLinkedFileError(f"{path} has {info.st_nlink} hard links")


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or create inside ``directory`` durable (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def create_exclusive(
    path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644, durable: bool = True
) -> None:
    """Create ``path`` with ``data``, failing with AlreadyExistsError if anything is there.

    ``O_EXCL`` together with ``O_NOFOLLOW`` also refuses a dangling symlink at ``path``.
    A partial file left by a failed write is removed before the error propagates.
    """
    target = Path(path)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    except FileExistsError as exc:
        raise AlreadyExistsError(f"{target} already exists") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(target, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            target.unlink()
        raise
    if durable:
        fsync_directory(target.parent)


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int | None = None,
    refuse_hard_links: bool = True,
    durable: bool = True,
    precondition: Callable[[], object] | None = None,
) -> None:
    """Replace ``path`` with ``data`` so readers see the old bytes or the new, never half.

    The temporary file lives in the same directory (``os.replace`` is atomic only within a
    file system), is fsynced before the rename, and is removed on every failure. A
    hard-linked target is refused by default: replacing it would silently split the link.
    ``mode`` defaults to the existing file's permission bits, else 0o644.

    ``precondition`` is called after the new bytes are durable and immediately before the
    rename, followed by a second look at the target's type and links; an exception from
    it aborts the replacement. That is what a compare-and-swap needs: the check runs as
    late as possible, when only the rename itself is left.
    """
    target = Path(path)
    existing_mode = _replaceable_mode(target, refuse_hard_links=refuse_hard_links)
    final_mode = (
        mode if mode is not None else (existing_mode if existing_mode is not None else 0o644)
    )
    # os.urandom rather than secrets.token_hex: the same bytes, without the ~8 ms import of
    # secrets (base64, hmac, random) in every agent hook that imports this module.
    temp = target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), final_mode)
            if durable:
                os.fsync(handle.fileno())
        if precondition is not None:
            precondition()
            _replaceable_mode(target, refuse_hard_links=refuse_hard_links)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    if durable:
        fsync_directory(target.parent)


def _replaceable_mode(target: Path, *, refuse_hard_links: bool) -> int | None:
    """Permission bits of an existing regular ``target`` (None if absent); refuse the rest."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRejectedError(f"{target} is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFileError(f"{target} is not a regular file")
    if refuse_hard_links and info.st_nlink > 1:
        raise HardLinkedFileError(f"{target} has {info.st_nlink} hard links")
    return stat.S_IMODE(info.st_mode)


def ensure_private_directory(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and parents) with owner-only mode; refuse it if it is a symlink."""
    directory = Path(path)
    directory.mkdir(mode=OWNER_ONLY_DIR_MODE, parents=True, exist_ok=True)
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRejectedError(f"{directory} is a symbolic link")
    return directory

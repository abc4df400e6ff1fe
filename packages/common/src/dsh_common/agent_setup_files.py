"""The files setup edits: where they really are, reading them, and writing them safely.

Three promises live here:

- **Never outside the project.** In ``--scope project`` every folder from the project root
  down to a file, and the file itself, must be the real thing: a cloned repository whose
  ``.claude`` is a symlink to ``~/.claude`` must not get setup to edit the user's global
  settings. In the user's home, links are the user's own (a dotfiles repository): they are
  followed, and the file written is the one they point to.
- **Nothing lost to a concurrent setup.** Each file is edited under a lock file beside it
  (``<name>.dsh-setup.lock``, :mod:`dsh_common.locks`), and the caller re-reads the file
  inside the lock; the write itself is a compare-and-swap on the bytes read, so an edit by
  the host (Claude Code rewrites ``~/.claude.json`` often) between the read and the write
  is noticed rather than overwritten.
- **All or nothing.** Folders and locks are made before the first file is written; a
  failed write puts back the files already written (when they still hold our bytes).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_common.agent_setup_entries import ConfigInvalidError
from dsh_common.errors import DshError, LockHeldError, SymlinkRejectedError
from dsh_common.io import atomic_write, read_bounded
from dsh_common.locks import FileLock, acquire_lock

#: Larger than any config file a host writes (``~/.claude.json`` grows with history).
READ_LIMIT = 256 * 1024 * 1024
#: How long setup waits for another setup holding a file's lock (they take milliseconds).
LOCK_WAIT_SECONDS = 15.0
LOCK_SUFFIX = ".dsh-setup.lock"


class ConfigUnwritableError(DshError, OSError):
    """A config file or its folder cannot be written (read-only, permissions, disk full)."""

    code = "config-unwritable"


class ConfigChangedError(DshError, RuntimeError):
    """A config file kept changing between setup's read and its write."""

    code = "config-changed"


@dataclass
class FileChange:
    """One file before and after (``None``: the file does not / will not exist)."""

    path: Path
    before: str | None
    after: str | None
    #: Empty folders left by a removal are pruned up to (not including) this one.
    prune_to: Path | None = None
    #: The project root whose folders must stay real (project scope), else None.
    confined_to: Path | None = None

    @property
    def action(self) -> str:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "created"
        return "removed" if self.after is None else "updated"

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff (``/dev/null`` for a file created or removed)."""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def encoded(self) -> bytes | None:
        """The new bytes; ConfigInvalidError when the text cannot be written as UTF-8."""
        if self.after is None:
            return None
        try:
            return self.after.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigInvalidError(
                f"{self.path}: the new content cannot be written as UTF-8 ({exc.reason})"
            ) from exc


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigInvalidError(f"{path} cannot be inspected: {exc.strerror}") from exc


def _check_folders(directory: Path, root: Path) -> None:
    """Every existing folder from below ``root`` down to ``directory`` is a real folder."""
    if directory != root and root not in directory.parents:
        raise ConfigInvalidError(f"{directory} is outside the project {root}")
    chain = [directory, *directory.parents]
    for folder in reversed(chain[: chain.index(root)]):
        info = _lstat(folder)
        if info is None:
            return  # the rest will be created by setup
        if stat.S_ISLNK(info.st_mode):
            raise SymlinkRejectedError(
                f"{folder} is a symbolic link; not writing through it in a project"
            )
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigInvalidError(f"{folder} is not a directory")


def target(path: Path, confined_to: Path | None) -> Path:
    """The file to edit for ``path``, checked before anything is written.

    ``confined_to`` is the (resolved) project root in project scope: every folder below it
    and the file must be real, not links. Otherwise (the user's home) a link is followed
    and the file it points to is returned, so the link survives. A hard-linked file is
    refused everywhere: replacing one would silently split the link.
    """
    if confined_to is not None:
        _check_folders(path.parent, confined_to)
    else:
        path = Path(os.path.realpath(path.parent)) / path.name
        for folder in (path.parent, *path.parent.parents):
            info = _lstat(folder)
            if info is not None:
                if not stat.S_ISDIR(info.st_mode):
                    raise ConfigInvalidError(f"{folder} is not a directory")
                break
    info = _lstat(path)
    if info is None:
        return path
    if stat.S_ISLNK(info.st_mode):
        if confined_to is not None:
            raise SymlinkRejectedError(f"{path} is a symbolic link; not editing it in a project")
        path = Path(os.path.realpath(path))
        info = _lstat(path)
        if info is None:
            return path
    if not stat.S_ISREG(info.st_mode):
        raise ConfigInvalidError(f"{path} is not a regular file")
    if info.st_nlink > 1:
        raise ConfigInvalidError(f"{path} has {info.st_nlink} hard links; not replacing it")
    return path


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes (None when absent), without following a final link."""
    try:
        return read_bounded(path, READ_LIMIT)
    except FileNotFoundError:
        return None
    except DshError as exc:
        raise ConfigInvalidError(f"{path} cannot be read: {exc.message}") from exc
    except OSError as exc:
        raise ConfigInvalidError(f"{path} cannot be read: {exc.strerror}") from exc


def read_text(path: Path) -> str | None:
    """The file as UTF-8 text, line endings as they are (None when absent)."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalidError(f"{path} is not UTF-8 text: {exc.reason} at {exc.start}") from exc


# --- preparing: folders and locks ------------------------------------------------------


def _unwritable(path: Path, exc: OSError) -> ConfigUnwritableError:
    return ConfigUnwritableError(f"cannot write {path}: {exc.strerror or exc}; nothing was changed")


def make_folders(changes: Sequence[FileChange]) -> list[Path]:
    """Create the missing parent folders of the files to write; return those created."""
    created: list[Path] = []
    for change in changes:
        if not change.changed or change.after is None:
            continue
        missing = [p for p in (change.path.parent, *change.path.parent.parents) if not p.exists()]
        for folder in reversed(missing):
            if change.confined_to is not None:
                _check_folders(folder.parent, change.confined_to)
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                remove_empty_folders(created)
                raise _unwritable(folder, exc) from exc
            created.append(folder)
    return created


def remove_empty_folders(folders: Iterable[Path]) -> None:
    """Remove each of ``folders`` that is empty, deepest first (setup's own, after a failure)."""
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + LOCK_SUFFIX)


def _acquire(path: Path) -> FileLock:
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    delay = 0.01
    while True:
        try:
            return acquire_lock(path)
        except LockHeldError as exc:
            # A lock whose owner died will not be released: say so now, not in 15 s.
            if exc.details.get("ownerAlive") is False or time.monotonic() >= deadline:
                raise
        except OSError as exc:
            raise _unwritable(path, exc) from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


@contextlib.contextmanager
def locked(paths: Iterable[Path]) -> Iterator[None]:
    """Hold the lock of every file in ``paths``, taken in one order so setups never deadlock."""
    held: list[FileLock] = []
    try:
        for path in sorted(set(paths), key=str):
            held.append(_acquire(lock_path(path)))
        yield
    finally:
        for lock in reversed(held):
            lock.release()


# --- writing -----------------------------------------------------------------------------


class _Changed(Exception):
    """The file no longer holds the bytes it was planned from."""


def _still(change: FileChange) -> None:
    """The compare of the compare-and-swap: the file holds what the plan read."""
    if change.confined_to is not None:
        target(change.path, change.confined_to)  # the folders are still real
    current = read_bytes(change.path)
    expected = None if change.before is None else change.before.encode("utf-8")
    if current != expected:
        raise _Changed(str(change.path))


def _put(path: Path, data: bytes | None, *, check: Callable[[], object] | None = None) -> None:
    if data is None:
        if check is not None:
            check()
        path.unlink(missing_ok=True)
        return
    # ~/.claude.json and config.toml may hold credentials: new files are owner-only.
    mode = None if path.exists() else 0o600
    atomic_write(path, data, mode=mode, precondition=check)


def write_all(changes: Sequence[FileChange]) -> bool:
    """Write every changed file, each atomically and only if unchanged since it was read.

    Returns False (having put back what it wrote) when a file changed under us: the caller
    plans again. Any other failure also puts back what was written, then raises.
    """
    written: list[tuple[FileChange, bytes | None]] = []
    try:
        for change in changes:
            if not change.changed:
                continue
            data = change.encoded()
            try:
                _put(change.path, data, check=functools.partial(_still, change))
            except (DshError, _Changed):
                raise
            except OSError as exc:
                raise _unwritable(change.path, exc) from exc
            written.append((change, data))
    except _Changed:
        _put_back(written)
        return False
    except BaseException:
        _put_back(written)
        raise
    return True


def _put_back(written: Sequence[tuple[FileChange, bytes | None]]) -> None:
    """Restore each written file that still holds our bytes (best effort, newest first)."""
    for change, data in reversed(written):
        with contextlib.suppress(OSError, DshError, _Changed):
            if read_bytes(change.path) != data:
                continue  # someone wrote after us: theirs now
            old = None if change.before is None else change.before.encode("utf-8")
            _put(change.path, old)


def prune(changes: Sequence[FileChange]) -> None:
    """After a removal: remove folders left empty, up to each change's ``prune_to``."""
    for change in changes:
        if change.changed and change.after is None and change.prune_to is not None:
            directory, stop = change.path.parent, change.prune_to
            while directory != stop and stop in directory.parents:
                try:
                    directory.rmdir()  # fails on a folder that is not empty: what we want
                except OSError:
                    break
                directory = directory.parent

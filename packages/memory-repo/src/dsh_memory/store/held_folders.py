"""Record folders held open by clear, so a folder renamed away and back cannot hide records.

Every path-based listing of ``handbook/`` is a snapshot of one instant: a process that
renames the folder away and back can make each listing clear takes (the first one, the
re-check, the final one) see no folder at all, and clear would report success while the
records sit in the folder that comes back. An open directory descriptor names the folder
itself, not its path: renamed anywhere on the file system and back, it still lists what is
in it. Clear opens each record folder once, before its first listing, and after deleting
asks the held folders - not the paths - whether anything stayed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from dsh_memory.errors import UnsafeLayoutError
from dsh_memory.store.root import RECORD_DIRS, is_utf8_name

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


@contextlib.contextmanager
def hold_record_folders(root: Path, head_files: Iterable[str]) -> Iterator[dict[str, int]]:
    """``{folder: descriptor}`` of every record folder present, closed on exit.

    A record folder that HEAD has records in but that cannot be opened as a directory is
    refused (``unsafe-layout``): missing, it looks the same whether a person deleted it or
    a process has just renamed it away and will put it back after clear reports success.
    A link or a file in a folder's place is left to the payload walk, which refuses it.
    """
    tracked = {path.split("/", 1)[0] for path in head_files if "/" in path}
    held: dict[str, int] = {}
    try:
        for name in RECORD_DIRS:
            try:
                held[name] = os.open(root / name, _DIRECTORY_FLAGS)
            except FileNotFoundError:
                if name in tracked:
                    raise UnsafeLayoutError(
                        f"{name}/ is missing while HEAD holds records in it: the layout"
                        " changed. Put it back, or commit the deletion with"
                        " `dsh-memory adopt`, then clear."
                    ) from None
            except OSError:
                continue  # a link or a file where the folder should be: the walk refuses it
        yield held
    finally:
        for descriptor in held.values():
            os.close(descriptor)


def files_left(held: dict[str, int]) -> list[str]:
    """Folder-relative paths (``handbook/a.md``) of the files still in the held folders,
    wherever the folders are now; names that are not UTF-8 (which clear leaves alone, and
    reports) are not counted. A folder deleted since it was opened lists as empty."""
    left: list[str] = []
    for name, descriptor in held.items():
        left.extend(_files_below(descriptor, name))
    return sorted(left)


def _files_below(descriptor: int, prefix: str) -> list[str]:
    found: list[str] = []
    with os.scandir(descriptor) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for entry_name, is_directory in names:
        relative = f"{prefix}/{entry_name}"
        if not is_directory:
            if is_utf8_name(relative):
                found.append(relative)
            continue
        try:
            child = os.open(entry_name, _DIRECTORY_FLAGS, dir_fd=descriptor)
        except OSError:
            found.append(relative)  # a directory that cannot be opened may hold anything
            continue
        try:
            if stat.S_ISDIR(os.fstat(child).st_mode):
                found.extend(_files_below(child, relative))
        finally:
            os.close(child)
    return found

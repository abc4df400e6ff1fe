"""Which payload paths can be committed, written to disk and read back - checked up front.

A path that fails here is refused before anything is committed; found later it would be
worse than refused: HEAD would hold a record the work tree cannot (every later command
then trips over it), or the commit would silently lack it. The rules:

- **UTF-8.** Journal records, JSON answers and the earlier tool carry names as UTF-8 text.
- **Plain components.** No empty, ``.`` or ``..`` component.
- **Nothing Git leaves out.** A tree built with a component Git reserves silently drops the
  path, and Git on macOS or Windows refuses to check it out. Git's own rules
  (``is_hfs_dotgit``, ``is_ntfs_dotgit``) name ``.git`` in any letter case; with a code point
  HFS+ ignores anywhere in it (U+200C-U+200F, U+202A-U+202E, U+206A-U+206F, U+FEFF); followed
  by dots or spaces; followed by an NTFS alternate data stream (``.git::$INDEX_ALLOCATION``,
  ``.git:x``: the folder itself on NTFS); behind a backslash (NTFS reads it as a separator);
  and ``git~1`` (its NTFS short name) the same ways. Every format character (Unicode
  category Cf, which holds HFS+'s list) is ignored here, so the zero-width space, which Git
  keeps but which makes a name read as ``.git``, is refused too. The commit pipeline also
  checks that every path really entered the tree, whatever the Git version or
  configuration.
- **Names that fit.** A folder name is at most 255 bytes (the file-system limit,
  ``NAME_MAX``); a file name at most 255 - 18 = **237 bytes**, because every file is written
  as a temporary ``.<name>.<12 hex>.tmp`` renamed over the name, and that temporary name must
  fit too. In UTF-8 a Chinese character is 3 bytes: a file name of 78 Chinese characters plus
  ``.md`` fits, 79 do not. The whole path is at most 1,024 bytes.

:func:`name_problem` applies every rule (the sync's validation, ``dsh-memory write``);
:func:`write_problem` only the rules the work tree itself needs, against the memory root's
own file system (the pipeline, for every path it is about to write).
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from dsh_memory.store.fsops import TEMP_NAME_OVERHEAD
from dsh_memory.store.root import is_utf8_name

#: The file-system limit on one path component, in bytes (Linux, macOS, Windows NTFS).
MAX_COMPONENT_BYTES = 255
#: The longest file name whose temporary name still fits :data:`MAX_COMPONENT_BYTES`.
MAX_FILE_NAME_BYTES = MAX_COMPONENT_BYTES - TEMP_NAME_OVERHEAD
#: The longest payload path, in bytes.
MAX_PATH_BYTES = 1024

#: Code points HFS+ ignores when it compares names (Git's ``is_hfs_dotgit`` list): all of
#: them format characters, which :func:`git_reserved` ignores as a whole.
HFS_IGNORABLE = frozenset(
    "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
)
_RESERVED = frozenset({".git", "git~1"})


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def git_reserved(component: str) -> bool:
    """Whether ``component`` is ``.git`` (or ``git~1``) by Git's HFS+ or NTFS rules, or reads
    as it once its invisible format characters are gone (see the module docstring)."""
    for part in component.split("\\"):  # NTFS reads a backslash as a separator
        visible = "".join(c for c in part if unicodedata.category(c) != "Cf")
        stem = visible.split(":", 1)[0]  # NTFS: "<name>:<stream>:<type>" is <name> itself
        if stem.rstrip(". ").casefold() in _RESERVED:
            return True
    return False


def _length_problem(relative: str, name_max: int) -> str | None:
    parts = relative.split("/")
    if _bytes(relative) > MAX_PATH_BYTES:
        return f"the path is {_bytes(relative)} bytes long; at most {MAX_PATH_BYTES}"
    for folder in parts[:-1]:
        if _bytes(folder) > name_max:
            return f"the folder name {folder!r} is {_bytes(folder)} bytes; at most {name_max}"
    longest = name_max - TEMP_NAME_OVERHEAD
    if _bytes(parts[-1]) > longest:
        return (
            f"the file name is {_bytes(parts[-1])} bytes of UTF-8; at most {longest} (a Chinese"
            " character is 3 bytes: shorten the name)"
        )
    return None


def name_problem(relative: str) -> str | None:
    """Why ``relative`` cannot be a payload file, or None when it can (every rule above)."""
    if not is_utf8_name(relative):
        return "the name is not valid UTF-8"
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "the path has an empty, '.' or '..' component"
    reserved = next((part for part in parts if git_reserved(part)), None)
    if reserved is not None:
        return (
            f"{reserved!r} is, or reads as, a name Git reserves for itself and would leave out"
            " of a commit"
        )
    return _length_problem(relative, MAX_COMPONENT_BYTES)


def root_name_max(root: Path) -> int:
    """The memory root's file-system name limit (255 where it cannot be asked)."""
    try:
        limit = os.pathconf(root, "PC_NAME_MAX")
    except (OSError, ValueError):
        return MAX_COMPONENT_BYTES
    return min(limit, MAX_COMPONENT_BYTES) if limit > 0 else MAX_COMPONENT_BYTES


def write_problem(relative: str, name_max: int = MAX_COMPONENT_BYTES) -> str | None:
    """Why the work tree could not hold ``relative`` (lengths, reserved names), or None."""
    reserved = next((part for part in relative.split("/") if git_reserved(part)), None)
    if reserved is not None:
        return f"{reserved!r} is, or reads as, a name Git reserves for itself"
    return _length_problem(relative, name_max)

"""SQLite failures a user can meet, as the package's documented errors (never internal-error).

A damaged page, a read-only file, a full disk or an I/O error are facts about the machine,
not bugs: each becomes a :class:`~dsh_knowledge.errors.StorageError` (``storage-error``) or
a :class:`~dsh_knowledge.errors.DatabaseCorruptError` (``database-corrupt``, a damaged page)
whose message says which. Text SQLite cannot store (a lone surrogate, from undecodable bytes)
becomes a :class:`~dsh_knowledge.errors.ValidationError`. The public repository and retrieval
calls are wrapped with :func:`translate_storage_errors`; SQLite rolls back the failed
statement and our transaction wrapper the rest, so nothing is half-written.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from dsh_knowledge.errors import (
    DatabaseCorruptError,
    KnowledgeError,
    StorageError,
    ValidationError,
)

P = ParamSpec("P")
R = TypeVar("R")


def printable(text: str) -> str:
    """``text`` with undecodable bytes (lone surrogates from argv or paths) shown as ``\\xNN``.

    Other lone surrogates (``\\ud800``, from JSON or Python text) are shown as ``\\udXXX``.
    """
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _nearly_full(path: str) -> bool:
    """Whether the file system holding ``path`` has less than 64 KiB left for us."""
    try:
        info = os.statvfs(os.path.dirname(path) or ".")
    except (OSError, ValueError):
        return False
    return info.f_bavail * info.f_frsize < 64 * 1024


def storage_error(error: sqlite3.Error, path: str) -> KnowledgeError | None:
    """The documented error for ``error``, or None when it is not a storage condition."""
    name = getattr(error, "sqlite_errorname", "") or ""
    where = f"The knowledge database {printable(path)}"
    detail = printable(str(error))
    if name in ("SQLITE_FULL", "SQLITE_IOERR_SHMSIZE") or (
        name.startswith("SQLITE_IOERR") and _nearly_full(path)
    ):
        # SHMSIZE: the -shm file of a WAL database could not grow (SQLite: "probably disk
        # full"); other I/O errors on a file system with almost nothing left are the same.
        return StorageError(
            f"disk full: the knowledge database {printable(path)} could not be written "
            f"({detail}); nothing changed."
        )
    if name == "SQLITE_NOTADB":
        # Most likely --db names some other file: say so, and do not call it damaged.
        return StorageError(f"{where} is not an SQLite database ({detail}); it was not touched.")
    if name.startswith("SQLITE_CORRUPT"):
        return DatabaseCorruptError(
            f"{where} is damaged ({detail}). Restore it from a backup, or salvage it with "
            "the sqlite3 shell's .recover command."
        )
    if name.startswith("SQLITE_READONLY"):
        return StorageError(f"{where} is read-only ({detail}); nothing changed.")
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM")):
        return StorageError(f"{where} could not be read or written: {detail}")
    if name == "SQLITE_TOOBIG":
        return ValidationError(f"A value is larger than SQLite can store ({detail}).")
    return None


def translate_storage_errors(
    path_of: Callable[..., str],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator factory: ``path_of(*args)`` names the database for the message."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except sqlite3.Error as error:
                translated = storage_error(error, path_of(*args))
                if translated is None:
                    raise
                raise translated from error
            except UnicodeEncodeError as error:
                # Only lone surrogates fail to encode: text made of undecodable bytes.
                raise ValidationError(
                    "Text must be valid Unicode; it holds undecodable bytes: "
                    f"{printable(error.object[error.start : error.end + 8])!s}"
                ) from error

        return wrapper

    return decorate

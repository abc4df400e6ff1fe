"""The rules of a corpus scan, whoever reads the records: which names, what bounds, what
warnings (docs/compatibility/compound.md, Limits).

A scan lists the corpus directory's ``.md`` names, sorts them, looks at most at 500 of
them and accepts at most 4 MiB of record data; a note that cannot be read or parsed is
skipped with a warning, never fatal. :func:`assemble` applies those rules to what a
*reader* says about each name, so the cold scan (:mod:`dsh_compound.corpus`, which reads
and parses every file) and the cached one (:mod:`dsh_compound.corpus_index`, which reuses
what an earlier read of an unchanged file gave) produce the same result by construction.

Light imports only: the prompt hook imports this at every prompt.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from dsh_common import paths as common_paths
from dsh_common.errors import shown
from dsh_compound.errors import CompoundError, InvalidCorpusError, translate_common_errors
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECORD_SUFFIX = ".md"


class WarningList:
    """Warnings capped at the contract's 20; the last slot says how many were left out."""

    __slots__ = ("_cap", "_items", "_total")

    def __init__(self, cap: int = LIMITS.warnings) -> None:
        self._cap = cap
        self._items: list[str] = []
        self._total = 0

    def add(self, message: str) -> None:
        """Record one warning (kept if there is room, else only counted)."""
        self._total += 1
        if len(self._items) < self._cap:
            self._items.append(message)

    def add_first(self, message: str) -> None:
        """Record a warning that must not be among the omitted ones: it goes first."""
        self._total += 1
        self._items.insert(0, message)
        del self._items[self._cap :]

    def as_list(self) -> list[str]:
        """At most ``cap`` warnings; when more were added the last says how many are missing."""
        if self._total <= self._cap:
            return list(self._items)
        kept = self._items[: self._cap - 1]
        return [*kept, f"{self._total - len(kept)} more warnings were omitted"]


class StoredRecord:
    """One accepted record: where it is, its metadata and what reading it found.

    ``body`` is the Markdown text after the front matter when the file was just read
    (inspect shows it). The digest is the SHA-256 of the file's bytes, BOM included,
    computed only when asked for: a scan reads up to 4 MiB but reports digests for the few
    results only. A record served from the recall cache is a :class:`CachedRecord`.
    """

    __slots__ = (
        "_data",
        "_digest",
        "_metadata",
        "body",
        "content_status",
        "directory",
        "id",
        "unknown_keys",
    )

    def __init__(
        self,
        id: str,
        directory: Path,
        metadata: dict[str, Any] | None,
        content_status: str,
        unknown_keys: tuple[str, ...] = (),
        *,
        data: bytes | None = None,
        digest: str | None = None,
        body: str | None = None,
    ) -> None:
        self.id = id
        self.directory = directory
        self.content_status = content_status
        self.unknown_keys = unknown_keys
        self.body = body
        self._metadata = metadata
        self._data = data
        self._digest = digest

    @property
    def path(self) -> Path:
        """The record file (built when asked for: most scanned records are never shown)."""
        return self.directory / f"{self.id}{RECORD_SUFFIX}"

    @property
    def metadata(self) -> dict[str, Any]:
        """The record's front matter (schema 1), as parsed from the file."""
        if self._metadata is None:
            raise ValueError(f"record {self.id!r} has no metadata")
        return self._metadata

    @property
    def digest(self) -> str:
        """SHA-256 of the record file's bytes (lowercase hex)."""
        if self._digest is None:
            if self._data is None:
                raise ValueError(f"record {self.id!r} has neither bytes nor a digest")
            self._digest = hashlib.sha256(self._data).hexdigest()
        return self._digest


class CachedRecord(StoredRecord):
    """A record served from the recall cache: its metadata is decoded when first asked for
    (recall shows a few records; decoding all 500 would cost more than ranking them)."""

    __slots__ = ("_decode", "_where")

    def __init__(
        self,
        id: str,
        directory: Path,
        *,
        content_status: str,
        unknown_keys: tuple[str, ...],
        digest: str,
        decode: Callable[[Any], dict[str, Any]],
        where: Any,
    ) -> None:
        # Set directly, not through StoredRecord.__init__: a hook makes 500 of these.
        self.id = id
        self.directory = directory
        self.content_status = content_status
        self.unknown_keys = unknown_keys
        self.body = None
        self._metadata = None
        self._data = None
        self._digest = digest
        self._decode = decode
        self._where = where

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._metadata = self._decode(self._where)
        return self._metadata


class ScanResult:
    """What a bounded scan found."""

    __slots__ = ("records", "scanned", "truncated", "warnings")

    def __init__(self) -> None:
        self.records: list[StoredRecord] = []
        self.warnings = WarningList()
        self.scanned = 0
        self.truncated = False


class Outcome:
    """What reading one corpus name gave, before the scan's byte bound is applied.

    - ``size is None``: the name could not be read as a record file (a bad ID, a link, not
      a regular file, too large, unreadable); ``message`` says why.
    - ``record is None``: ``size`` bytes were read but do not parse; ``message`` says why.
    - otherwise ``record`` was read from ``size`` bytes.
    """

    __slots__ = ("message", "record", "size")

    def __init__(
        self, size: int | None, record: StoredRecord | None, message: str | None = None
    ) -> None:
        self.size = size
        self.record = record
        self.message = message


def corpus_path(workspace: common_paths.Workspace) -> Path:
    """The corpus directory under the canonical workspace root."""
    return workspace.absolute(CORPUS_DIRECTORY)


def corpus_exists(workspace: common_paths.Workspace) -> bool:
    """Whether the corpus exists; raise if a component is a link or it is not a directory."""
    try:
        with translate_common_errors():
            exists = common_paths.check_no_symlinks(workspace, CORPUS_DIRECTORY)
    except CompoundError:
        raise
    except OSError as exc:  # e.g. an unreadable docs/ directory (EACCES)
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be read: {exc.strerror}") from exc
    if exists and not corpus_path(workspace).is_dir():
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} exists but is not a directory")
    return exists


#: Identity of a file as a scan read it: ``(dev, inode, size, mtime_ns, ctime_ns)``.
FileKey = tuple[int, int, int, int, int]


def file_key(info: os.stat_result) -> FileKey:
    """The identity the recall cache keys a record file's contents by."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


SCAN_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


@contextlib.contextmanager
def open_corpus(workspace: common_paths.Workspace) -> Iterator[int]:
    """A descriptor of the corpus directory, for reading its entries relative to it."""
    try:
        directory_fd = os.open(
            corpus_path(workspace), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | SCAN_OPEN_FLAGS
        )
    except OSError as exc:
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be opened: {exc.strerror}") from exc
    try:
        yield directory_fd
    finally:
        os.close(directory_fd)


def list_names(directory_fd: int) -> list[str]:
    """The corpus's ``.md`` names, sorted (enumeration examines every name)."""
    try:
        return record_names(os.listdir(directory_fd))
    except OSError as exc:
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be listed: {exc.strerror}") from exc


def modified_warning(record_id: str) -> str:
    """The warning for a record whose body and metadata disagree."""
    return (
        f"record {record_id!r}: contentStatus modified - the Markdown body differs from its "
        "structured metadata; inspect it, then re-capture with --replace before relying on it"
    )


def unknown_keys_warning(record_id: str, keys: tuple[str, ...]) -> str:
    """The warning for a record whose metadata holds fields schema 1 does not define.

    Such a field is never written by a capture, so someone added it by hand; it may pose as
    an attestation (``verification.helperVerified``) and proves nothing.
    """
    listed = ", ".join(shown(key) for key in keys[:5])
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return (
        f"record {record_id!r}: metadata holds fields this helper never writes ({listed}{more}); "
        "they were added by hand, are not evidence and prove nothing - ignore them, or "
        "re-capture with --replace to drop them"
    )


def record_warnings(stored: StoredRecord) -> list[str]:
    """The warnings a single record carries on its own: modified content, unknown keys."""
    warnings: list[str] = []
    if stored.content_status != "consistent":
        warnings.append(modified_warning(stored.id))
    if stored.unknown_keys:
        warnings.append(unknown_keys_warning(stored.id, stored.unknown_keys))
    return warnings


def record_names(listed: Iterable[str]) -> list[str]:
    """The ``.md`` names of a directory listing, sorted as the scan reads them."""
    return sorted(name for name in listed if name.endswith(RECORD_SUFFIX))


def _undecodable(name: str) -> bool:
    # dsh_common.cli, imported for the rare name that is not ASCII: a hook does not pay
    # for the module at every prompt (record names are kebab-case ASCII).
    from dsh_common.cli import is_undecodable  # noqa: PLC0415

    return is_undecodable(name)


def assemble(names: list[str], read: Callable[[str], Outcome]) -> ScanResult:
    """The scan of ``names`` (sorted ``.md`` names), ``read`` telling what each one holds.

    ``read`` is called in order, and no more after the 4 MiB bound stops the scan.
    """
    result = ScanResult()
    if len(names) > LIMITS.scan_names:
        result.truncated = True
        result.warnings.add(
            f"the corpus holds {len(names)} Markdown names; only the first "
            f"{LIMITS.scan_names} in sorted order were scanned"
        )
        names = names[: LIMITS.scan_names]
    accepted_bytes = 0
    for name in names:
        if not name.isascii() and _undecodable(name):
            # No record ID can come from it, and the name itself cannot go into JSON as is.
            from dsh_common.cli import escape_undecodable  # noqa: PLC0415

            result.scanned += 1
            result.warnings.add(f"skipped {escape_undecodable(name)}: the name is not UTF-8")
            continue
        outcome = read(name)
        if outcome.size is None:
            result.scanned += 1
            result.warnings.add(f"skipped {name}: {outcome.message}")
            continue
        if accepted_bytes + outcome.size > LIMITS.scan_bytes:
            result.truncated = True
            result.warnings.add(
                f"stopped before {name}: the scan reached its {LIMITS.scan_bytes}-byte bound"
            )
            break
        result.scanned += 1
        if outcome.record is None:
            result.warnings.add(f"skipped {name}: {outcome.message}")
            continue
        accepted_bytes += outcome.size
        record = outcome.record
        result.records.append(record)
        if record.content_status != "consistent" or record.unknown_keys:
            for warning in record_warnings(record):
                result.warnings.add(warning)
    return result

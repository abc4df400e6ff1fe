"""Payload records as search and context see them: one walk, one loader, one shape.

Both the full scan and the search index go through :func:`load_record`, so a record the
index serves is byte-for-byte the record a scan would build: that is what keeps indexed and
scanned search results identical.

``walk_payload`` never follows a symbolic link (a linked file or folder is skipped; the
layout inspection reports it as ``unsafe-layout`` before any operation runs) and reports
each ``*.md`` record with a cheap change signature (size, mtime, ctime, inode) from
``lstat``; the signatures hashed together are the payload fingerprint that keys the index.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError
from dsh_common.io import read_bounded
from dsh_memory.errors import InvalidMetadataError
from dsh_memory.store import frontmatter

#: Folders that hold records, in the order scopes name them.
RECORD_FOLDERS = ("handbook", "rollouts", "archive")
SCOPES = {
    "active": ("handbook", "rollouts"),
    "archive": ("archive",),
    "all": RECORD_FOLDERS,
}
#: The staging limit for one payload file (docs/compatibility/memory.md, Staging limits); larger
#: files are
#: not records search or context will read.
MAX_RECORD_BYTES = 1024 * 1024


@dataclass(frozen=True)
class PayloadEntry:
    """A ``*.md`` file under a record folder and its change signature."""

    path: str
    signature: str


@dataclass
class Record:
    """What search and context need from one record file."""

    path: str
    signature: str
    valid: bool
    legacy: bool = False
    id: str | None = None
    type: str | None = None
    status: str | None = None
    updated_at: str | None = None
    expires_at: str | None = None
    tags: list[str] = field(default_factory=list)
    created_by: str | None = None
    source_hash: str | None = None
    source_rollouts: list[str] = field(default_factory=list)
    content_hash: str | None = None
    body: str = ""
    #: True for a record listed from the index without its body and metadata lists.
    partial: bool = False

    @property
    def folder(self) -> str:
        return self.path.split("/", 1)[0]

    def scoring_id(self) -> str:
        # A legacy record's id is synthetic (a hash of its path): it is shown and cited but
        # not matched, so a query for "legacy" does not hit every unmigrated file.
        return "" if self.legacy or self.id is None else self.id

    def searchable(self) -> str:
        """The earlier tool's searchable text: id, type, tags, created_by, source_hash, body."""
        parts = [
            self.scoring_id(),
            self.type or "",
            *self.tags,
            self.created_by or "",
            self.source_hash or "",
            self.body,
        ]
        return "\n".join(parts)

    def to_row(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "legacy": self.legacy,
            "id": self.id,
            "type": self.type,
            "status": self.status,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "tags": self.tags,
            "created_by": self.created_by,
            "source_hash": self.source_hash,
            "source_rollouts": self.source_rollouts,
            "content_hash": self.content_hash,
            "body": self.body,
        }

    @classmethod
    def from_row(cls, path: str, signature: str, row: dict[str, Any]) -> Record:
        return cls(path=path, signature=signature, **row)


def stat_signature(info: os.stat_result) -> str:
    """A file's change signature as the walk records it: size, mtime, ctime, inode."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


def walk_payload(root: Path, folders: Iterable[str] = RECORD_FOLDERS) -> list[PayloadEntry]:
    """Every ``*.md`` regular file under ``folders``, sorted by path, links never followed."""
    entries: list[PayloadEntry] = []
    for folder in folders:
        stack = [(root / folder, folder)]
        while stack:
            directory, relative = stack.pop()
            try:
                with os.scandir(directory) as iterator:
                    children = list(iterator)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for child in children:
                if not _utf8(child.name):
                    continue  # not UTF-8: skipped here, reported by status (invalid-name)
                child_relative = f"{relative}/{child.name}"
                if child.is_dir(follow_symlinks=False):
                    stack.append((Path(child.path), child_relative))
                elif child.name.endswith(".md") and child.is_file(follow_symlinks=False):
                    try:
                        info = child.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        entries.append(PayloadEntry(child_relative, stat_signature(info)))
    entries.sort(key=lambda entry: entry.path)
    return entries


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fingerprint(entries: Iterable[PayloadEntry]) -> str:
    """One digest over every record path and signature: changes when any record changes."""
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(entry.path.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
        digest.update(entry.signature.encode("ascii"))
        digest.update(b"\n")
    return digest.hexdigest()


def body_content_hash(body: str) -> str:
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def record_from_text(path: str, signature: str, text: str) -> Record:
    """Build the record for ``text`` (front matter parsed, body split, hashes computed)."""
    try:
        metadata = frontmatter.parse(text, path=path, complete_dates=False)
    except InvalidMetadataError:
        return Record(path=path, signature=signature, valid=False)
    body = frontmatter.body_of(text)
    if metadata is None:
        return Record(
            path=path,
            signature=signature,
            valid=True,
            legacy=True,
            id=frontmatter.legacy_id(path),
            content_hash=body_content_hash(body),
            body=body,
        )
    return Record(
        path=path,
        signature=signature,
        valid=True,
        id=metadata["id"],
        type=metadata["type"],
        status=metadata["status"],
        updated_at=metadata["updated_at"],
        expires_at=metadata["expires_at"],
        tags=list(metadata["tags"]),
        created_by=metadata["created_by"],
        source_hash=metadata["source_hash"],
        source_rollouts=list(metadata["source_rollouts"]),
        content_hash=metadata["content_hash"] or body_content_hash(body),
        body=body,
    )


def load_record(root: Path, entry: PayloadEntry) -> Record | None:
    """Read and parse one record; None when it vanished, is a link, too large or not UTF-8.

    A file that cannot be a record (binary, oversized) is treated like invalid metadata by
    the callers: excluded, never an error for the whole search.
    """
    try:
        data = read_bounded(root / entry.path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        return None
    except (DshError, OSError):
        return Record(path=entry.path, signature=entry.signature, valid=False)
    text = frontmatter.record_text(data)
    if text is None:  # not UTF-8 or binary: status counts it as invalid metadata too
        return Record(path=entry.path, signature=entry.signature, valid=False)
    return record_from_text(entry.path, entry.signature, text)


def in_scope(path: str, scope: str) -> bool:
    return path.split("/", 1)[0] in SCOPES[scope]

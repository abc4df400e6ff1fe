"""Metadata-only views of the payload: data files, legacy records, front matter validity.

Nothing here returns a record body: status, health and legacyRecords report counts, paths,
ids, dates and sizes only (the contract forbids memory documents in those answers).
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError
from dsh_memory.store import frontmatter, fsops
from dsh_memory.store.root import (
    SUMMARY_FILE,
    escape_name,
    is_record_path,
    is_utf8_name,
    live_payload_files,
)

#: Records larger than this are not parsed for status (the staging limit is 1 MiB).
MAX_RECORD_BYTES = 1024 * 1024
#: At most this many invalid-metadata entries are listed (the earlier tool's cap).
MAX_INVALID_LISTED = 20


@dataclass(frozen=True)
class LegacyRecord:
    """A Markdown record without front matter, and the front matter it would get."""

    path: str
    id: str
    front_matter: str
    day: str
    size: int
    text: str

    def describe(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.id,
            "frontMatter": self.front_matter,
            "createdAt": self.day,
            "updatedAt": self.day,
            "bytes": self.size,
        }


@dataclass
class PayloadScan:
    """One pass over the live payload."""

    files: list[str]
    data_files: list[str]
    legacy: list[LegacyRecord]
    valid_metadata: int
    invalid_metadata: list[dict[str, str]]


def _mtime_day(root: Path, relative: str) -> str:
    info = os.lstat(root / relative)
    return _dt.datetime.fromtimestamp(info.st_mtime, _dt.UTC).strftime("%Y-%m-%d")


def scan_payload(root: Path) -> PayloadScan:
    """Classify every live payload file (raises UnsafeLayoutError on a symlink)."""
    files = live_payload_files(root)
    data_files: list[str] = []
    legacy: list[LegacyRecord] = []
    valid = 0
    invalid: list[dict[str, str]] = []
    for relative in files:
        if not is_utf8_name(relative):
            # Not UTF-8: no id, no JSON, no journal can carry it. Reported, then skipped.
            data_files.append(relative)
            invalid.append({"path": escape_name(relative), "code": "invalid-name"})
            continue
        if relative == SUMMARY_FILE:
            if os.lstat(root / relative).st_size > 0:
                data_files.append(relative)
            continue
        data_files.append(relative)
        if not is_record_path(relative):
            continue
        try:
            raw = fsops.read_file_nofollow(root, relative, MAX_RECORD_BYTES)
        except OSError:
            raw = None
        text = frontmatter.record_text(raw) if raw is not None else None
        if raw is None or text is None:
            # Too large, unreadable, not UTF-8 or binary: the readers skip it, so it counts.
            invalid.append({"path": relative, "code": "invalid-metadata"})
            continue
        block, _ = frontmatter.split(text)
        if block is None:
            day = _mtime_day(root, relative)
            legacy.append(
                LegacyRecord(
                    path=relative,
                    id=frontmatter.legacy_id(relative),
                    front_matter=frontmatter.legacy_front_matter(relative, day),
                    day=day,
                    size=len(raw),
                    text=text,
                )
            )
            continue
        try:
            frontmatter.parse(text, path=relative)
        except DshError as exc:
            invalid.append({"path": relative, "code": exc.code})
            continue
        valid += 1
    return PayloadScan(files, data_files, legacy, valid, invalid)


def skipped_names(scan: PayloadScan) -> list[str]:
    """Payload names that are not UTF-8 (escaped), which every operation skips."""
    return [entry["path"] for entry in scan.invalid_metadata if entry["code"] == "invalid-name"]


def metadata_summary(scan: PayloadScan) -> dict[str, Any]:
    """The v0.8.3 metadata audit fields of ``status``."""
    return {
        "metadataValid": not scan.invalid_metadata,
        "validMetadataCount": scan.valid_metadata,
        "invalidMetadataCount": len(scan.invalid_metadata),
        "invalidMetadata": scan.invalid_metadata[:MAX_INVALID_LISTED],
    }

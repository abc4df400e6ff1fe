"""Pending sync previews under ``.sync/previews/<id>/``, in the earlier tool's exact files.

A preview directory (0700, Git-ignored) holds, as the earlier tool writes them:

- ``preview.json`` - the preview's own record, compact JSON:
  ``{"preview_id", "created_at", "expires_at", "candidate_sessions", "changed_paths",
  "status": "pending"}``;
- ``manifest.json`` - the *staging baseline* (``{"schema_version", "created_at",
  "head_sha", "entries": [...]}``): its ``created_at`` is when the staging copy was made,
  not when the preview was, and it has no ``candidate_sessions`` or ``changed_paths``;
- ``staging/`` - the staged payload after the agent's edits (plus README.md).

Only ``preview.json`` describes a preview (reading ``manifest.json`` for it reported zero
sessions, no paths and a creation time a second off). A directory without a readable
``preview.json`` whose ``preview_id`` matches its name is not a preview. A preview whose
``expires_at`` is missing, unreadable or not in the future is expired: never listed, never
applied, and removed lazily by the next listing (the earlier tool's rule; TTL 7 days).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from dsh_common.jsonio import dumps
from dsh_memory.errors import (
    PreviewExistsError,
    PreviewExpiredError,
    PreviewInvalidRequestError,
    PreviewNotFoundError,
    UnsafeLayoutError,
)
from dsh_memory.store.root import PREVIEWS_DIR
from dsh_memory.write.journal import read_json_file

PREVIEW_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$")
PREVIEW_TTL = _dt.timedelta(days=7)
PREVIEW_FILE = "preview.json"
MANIFEST_FILE = "manifest.json"
STAGING_DIR = "staging"


def validate_preview_id(preview_id: object) -> str:
    if not isinstance(preview_id, str) or not PREVIEW_ID_RE.fullmatch(preview_id):
        raise PreviewInvalidRequestError("a preview id is YYYYMMDDTHHMMSSZ-<8 hex digits>")
    return preview_id


def _expires_at_seconds(record: dict[str, Any]) -> float | None:
    value = record.get("expires_at")
    if not isinstance(value, str):
        return None
    try:
        import calendar  # noqa: PLC0415 - lazy: start-up time

        return float(calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")))
    except (ValueError, OverflowError):
        return None


def is_expired(record: dict[str, Any], now: float | None = None) -> bool:
    expires = _expires_at_seconds(record)
    return expires is None or (time.time() if now is None else now) >= expires


def preview_directory(root: Path, preview_id: str) -> Path:
    """The preview's folder; a symlink anywhere on the way is ``unsafe-layout``."""
    for path in (root / ".sync", root / PREVIEWS_DIR, root / PREVIEWS_DIR / preview_id):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise UnsafeLayoutError(f"{path.name} is not a plain folder")
    return root / PREVIEWS_DIR / preview_id


def read_preview(root: Path, preview_id: str) -> dict[str, Any] | None:
    """``preview.json`` of a preview, or None when it is absent, unreadable or foreign."""
    try:
        data = read_json_file(preview_directory(root, preview_id) / PREVIEW_FILE)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("preview_id") != preview_id:
        return None
    return data


def _listing(record: dict[str, Any]) -> dict[str, Any]:
    """The contract's list item (docs/compatibility/memory.md, Previews), field by field as
    preview.json holds it."""
    changed = record.get("changed_paths")
    candidates = record.get("candidate_sessions")
    return {
        "preview_id": record["preview_id"],
        "created_at": record.get("created_at"),
        "expires_at": record.get("expires_at"),
        "candidate_sessions": candidates if isinstance(candidates, int) else 0,
        "changed_paths": [p for p in changed if isinstance(p, str)]
        if isinstance(changed, list)
        else [],
        "status": record.get("status", "pending"),
    }


def pending_previews(
    root: Path, now: float | None = None, *, clean: bool = False
) -> list[dict[str, Any]]:
    """Non-expired previews, newest ``created_at`` first; ``clean`` removes expired ones."""
    directory = root / PREVIEWS_DIR
    try:
        names = [e.name for e in os.scandir(directory) if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[dict[str, Any]] = []
    for name in names:
        if not PREVIEW_ID_RE.fullmatch(name):
            continue
        record = read_preview(root, name)
        if record is None:
            continue
        if is_expired(record, now):
            if clean:
                import shutil  # noqa: PLC0415 - lazy: start-up time

                shutil.rmtree(directory / name, ignore_errors=True)
            continue
        found.append(_listing(record))
    found.sort(key=lambda item: (str(item["created_at"]), item["preview_id"]), reverse=True)
    return found


def pending_preview(root: Path, preview_id: object) -> tuple[dict[str, Any], Path]:
    """A preview that may be applied: its record and folder, or the contract's error."""
    identifier = validate_preview_id(preview_id)
    directory = preview_directory(root, identifier)
    record = read_preview(root, identifier)
    if record is None:
        raise PreviewNotFoundError(f"no preview {identifier}")
    if is_expired(record):
        import shutil  # noqa: PLC0415 - lazy: start-up time

        shutil.rmtree(directory, ignore_errors=True)
        raise PreviewExpiredError(f"preview {identifier} has expired")
    staging = directory / STAGING_DIR
    if not staging.is_dir() or staging.is_symlink():
        raise PreviewNotFoundError(f"preview {identifier} has no staged payload")
    return record, directory


def create_preview_directory(root: Path, preview_id: str) -> Path:
    """A new, empty preview folder (0700); ``preview-exists`` when the id is taken."""
    directory = preview_directory(root, preview_id)
    (root / PREVIEWS_DIR).mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        raise PreviewExistsError(f"preview {preview_id} already exists") from None
    return directory


def write_preview_record(
    directory: Path, preview_id: str, candidate_sessions: int, changed_paths: list[str]
) -> dict[str, Any]:
    created = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    record = {
        "preview_id": preview_id,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "expires_at": (created + PREVIEW_TTL).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "candidate_sessions": candidate_sessions,
        "changed_paths": sorted(changed_paths),
        "status": "pending",
    }
    _write_private(directory / PREVIEW_FILE, (dumps(record) + "\n").encode("utf-8"))
    return record


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    _write_private(directory / MANIFEST_FILE, (dumps(manifest) + "\n").encode("utf-8"))


def discard_preview(root: Path, preview_id: object) -> dict[str, Any]:
    """``memory.discardPreview``: remove a preview (expired ones too, they are litter)."""
    identifier = validate_preview_id(preview_id)
    directory = preview_directory(root, identifier)
    if read_preview(root, identifier) is None:
        raise PreviewNotFoundError(f"no preview {identifier}")
    import shutil  # noqa: PLC0415 - lazy: start-up time

    shutil.rmtree(directory)
    return {"removed": True, "previewId": identifier}

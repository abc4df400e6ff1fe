"""Read-only view of pending previews under ``.sync/previews/<id>/``.

Previews are created by the sync command (a later issue); status and health already report
them. A preview directory is named by its id (``YYYYMMDDTHHMMSSZ-<8 hex>``) and may hold a
``manifest.json`` with ``created_at``, ``expires_at``, ``candidate_sessions`` and
``changed_paths``. Without a manifest the creation time comes from the id and the expiry
from the seven-day TTL. Expired previews are never reported (cleaning them is the sync
command's lazy job, not a read's).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import stat
from pathlib import Path
from typing import Any

from dsh_memory.journal import read_json_file
from dsh_memory.root import PREVIEWS_DIR

PREVIEW_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$")
PREVIEW_TTL = _dt.timedelta(days=7)
_MANIFEST_NAMES = ("manifest.json", "preview.json")


def _parse_time(value: object) -> _dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=_dt.UTC)
    except (ValueError, OverflowError):
        return None


def _iso(moment: _dt.datetime) -> str:
    return moment.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(directory: Path, preview_id: str) -> dict[str, Any] | None:
    manifest: dict[str, Any] = {}
    for name in _MANIFEST_NAMES:
        try:
            data = read_json_file(directory / name)
        except (OSError, ValueError):
            return None
        if isinstance(data, dict):
            manifest = data
            break
    try:
        created = _parse_time(manifest.get("created_at")) or _dt.datetime.strptime(
            preview_id[:16], "%Y%m%dT%H%M%SZ"
        ).replace(tzinfo=_dt.UTC)
        expires = _parse_time(manifest.get("expires_at")) or created + PREVIEW_TTL
    except (ValueError, OverflowError):
        # An impossible date in the id (month 13) or a created_at whose expiry is past
        # year 9999: not a preview anyone can apply, so not a pending one either.
        return None
    candidates = manifest.get("candidate_sessions")
    changed = manifest.get("changed_paths")
    return {
        "preview_id": preview_id,
        "created_at": _iso(created),
        "expires_at": _iso(expires),
        "candidate_sessions": candidates if isinstance(candidates, int) else 0,
        "changed_paths": sorted(p for p in changed if isinstance(p, str))
        if isinstance(changed, list)
        else [],
        "status": "pending",
        "_expires": expires,
    }


def pending_previews(root: Path, now: _dt.datetime | None = None) -> list[dict[str, Any]]:
    """Non-expired previews, newest first (by ``created_at``)."""
    directory = root / PREVIEWS_DIR
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    moment = now or _dt.datetime.now(_dt.UTC)
    found: list[dict[str, Any]] = []
    for entry in entries:
        if not PREVIEW_ID_RE.fullmatch(entry.name):
            continue
        info = os.lstat(entry.path)
        if not stat.S_ISDIR(info.st_mode):
            continue
        described = _describe(Path(entry.path), entry.name)
        if described is None or described.pop("_expires") <= moment:
            continue
        found.append(described)
    found.sort(key=lambda item: (item["created_at"], item["preview_id"]), reverse=True)
    return found

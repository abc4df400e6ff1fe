"""The knowledge item model: vocabularies, validation, timestamps and JSON shapes.

An item is ``{"id", "type", "content", "scope": {"workspace", "project"?}, "status",
"creationOrigin", "replacementId"?, "evidence": [...], "createdAt", "updatedAt"}`` and an
evidence record ``{"type", "source", "locator"?, "timestamp", "gitProvenance"?: {"commit",
"path"}}``: the earlier Node tool's JSON, key for key. Validation messages are its messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from dsh_knowledge.errors import GitProvenanceError, ValidationError

KNOWLEDGE_TYPES = ("fact", "decision", "lesson")
KNOWLEDGE_STATUSES = ("candidate", "verified", "superseded", "archived")
CREATION_ORIGINS = ("explicit", "automatic")
EVIDENCE_TYPES = ("session", "file", "git")

MAX_GIT_PATH_CHARS = 4096

# Always fullmatch(): with match(), "$" also matches before a trailing newline, so a value
# ending in "\n" would pass. [0-9], not \d: \d takes any Unicode digit,
# and the earlier tool's JavaScript \d is ASCII only.
_ISO_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_DRIVE = re.compile(r"[A-Za-z]:")  # the first two characters

Item = dict[str, Any]
Evidence = dict[str, Any]


# --- timestamps ------------------------------------------------------------------------------


def format_timestamp(moment: datetime) -> str:
    """``Date.prototype.toISOString`` format: UTC, milliseconds, ``Z``."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def now_timestamp() -> str:
    """The current time as ``2026-11-30T12:00:00.000Z``."""
    return format_timestamp(datetime.now(UTC))


def parse_timestamp_ms(value: str) -> int | None:
    """Milliseconds since the epoch, or None when ``value`` is not a parseable timestamp.

    Naive values (a legacy ``2025-02-01``) are read as UTC, as ``Date.parse`` reads a
    date-only string.
    """
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def next_timestamp(previous: str) -> str:
    """``max(now, previous + 1 ms)``: updatedAt strictly increases even within one millisecond."""
    moment = datetime.now(UTC)
    now = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    previous_ms = parse_timestamp_ms(previous)
    if previous_ms is not None:
        try:
            floor = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=previous_ms + 1)
        except OverflowError:  # a stored 9999-12-31T23:59:59.999Z has no later millisecond
            floor = now
        now = max(now, floor)
    return format_timestamp(now)


def is_iso_timestamp(value: object) -> bool:
    """The earlier tool's evidence timestamp rule: the ISO shape *and* a parseable moment."""
    return (
        isinstance(value, str)
        and _ISO_TIMESTAMP.fullmatch(value) is not None
        and parse_timestamp_ms(value) is not None
    )


# --- field validation ------------------------------------------------------------------------


def validate_type(value: object) -> str:
    if not isinstance(value, str) or value not in KNOWLEDGE_TYPES:
        raise ValidationError(f"Invalid knowledge type: {value}")
    return value


def validate_status(value: object) -> str:
    if not isinstance(value, str) or value not in KNOWLEDGE_STATUSES:
        raise ValidationError(f"Invalid knowledge status: {value}")
    return value


def validate_origin(value: object) -> str:
    if not isinstance(value, str) or value not in CREATION_ORIGINS:
        raise ValidationError(f"Invalid creation origin: {value}")
    return value


def validate_content(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("Knowledge content must not be empty.")
    return value


def validate_limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("Limit must be a positive integer.")
    return value


def validate_project(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("Project scope must be a non-empty string when provided.")
    return value


def normalize_scope(scope: object) -> dict[str, str]:
    """``{"workspace", "project"?}`` with the earlier tool's checks; project None is omitted."""
    if not isinstance(scope, Mapping):
        raise ValidationError("Knowledge scope must include a non-empty workspace.")
    workspace = scope.get("workspace")
    if not isinstance(workspace, str) or not workspace.strip():
        raise ValidationError("Knowledge scope must include a non-empty workspace.")
    normalized = {"workspace": workspace}
    project = scope.get("project")
    if project is not None:
        normalized["project"] = validate_project(project)
    return normalized


def normalize_git_commit(value: object) -> str:
    """A full 40- (SHA-1) or 64-hex (SHA-256) object id, lowercased."""
    if not isinstance(value, str) or len(value) not in (40, 64) or not _HEX.fullmatch(value):
        raise GitProvenanceError("Git commit must be a full SHA-1 or SHA-256 object ID.")
    return value.lower()


def normalize_repository_relative_path(value: object) -> str:
    """A repository-relative path with ``/`` separators, no ``..``, no ``.``, no empty parts."""
    if not isinstance(value, str) or not value:
        raise GitProvenanceError("Git path must be a non-empty repository-relative path.")
    if len(value) > MAX_GIT_PATH_CHARS:
        raise GitProvenanceError(f"Git path must be at most {MAX_GIT_PATH_CHARS} characters.")
    if "\0" in value:
        raise GitProvenanceError("Git path must not contain NUL characters.")
    if value[0] in "/\\" or _DRIVE.fullmatch(value[:2]):
        raise GitProvenanceError("Git path must be repository-relative, not absolute.")
    segments = value.replace("\\", "/").split("/")
    if ".." in segments:
        raise GitProvenanceError("Git path must not contain '..' segments.")
    kept = [segment for segment in segments if segment not in ("", ".")]
    if not kept:
        raise GitProvenanceError("Git path must name a file inside the repository.")
    return "/".join(kept)


def normalize_evidence(evidence: object) -> list[Evidence]:
    """Validate caller evidence and return it in the canonical JSON shape."""
    if isinstance(evidence, (str, bytes)) or not isinstance(evidence, Sequence):
        raise ValidationError("Evidence must be an array.")
    normalized: list[Evidence] = []
    for item in evidence:
        if not isinstance(item, Mapping):
            raise ValidationError("Evidence must be an array of objects.")
        evidence_type = item.get("type")
        if evidence_type not in EVIDENCE_TYPES:
            raise ValidationError(f"Invalid evidence type: {evidence_type}")
        source = item.get("source")
        if not isinstance(source, str) or not source.strip():
            raise ValidationError("Evidence source must not be empty.")
        locator = item.get("locator")
        if locator is not None and not isinstance(locator, str):
            raise ValidationError("Evidence locator must be a string when provided.")
        if locator == "":
            raise ValidationError("Evidence locator must not be empty when provided.")
        timestamp = item.get("timestamp")
        if not is_iso_timestamp(timestamp):
            raise ValidationError(f"Evidence timestamp must be an ISO timestamp: {timestamp}")
        record: Evidence = {"type": evidence_type, "source": source}
        if locator is not None:
            record["locator"] = locator
        record["timestamp"] = timestamp
        provenance = item.get("gitProvenance")
        if provenance is not None:
            if evidence_type != "file":
                raise GitProvenanceError("Git provenance can only be attached to file evidence.")
            if not isinstance(provenance, Mapping):
                raise GitProvenanceError(
                    "Git provenance must include a commit and repository-relative path."
                )
            record["gitProvenance"] = {
                "commit": normalize_git_commit(provenance.get("commit")),
                "path": normalize_repository_relative_path(provenance.get("path")),
            }
        normalized.append(record)
    return normalized


# --- rows to JSON ----------------------------------------------------------------------------


def evidence_from_row(row: Sequence[Any]) -> Evidence:
    """``(type, source, locator, timestamp, git_commit, git_path)`` to evidence JSON."""
    evidence_type, source, locator, timestamp, git_commit, git_path = row
    record: Evidence = {"type": evidence_type, "source": source}
    if locator is not None:
        record["locator"] = locator
    record["timestamp"] = timestamp
    if git_commit is not None and git_path is not None:
        record["gitProvenance"] = {"commit": git_commit, "path": git_path}
    return record


def item_from_row(row: Sequence[Any], evidence: list[Evidence]) -> Item:
    """A ``knowledge`` row (ITEM_COLUMNS order) plus its evidence to item JSON."""
    (
        item_id,
        item_type,
        content,
        workspace,
        project,
        status,
        replacement_id,
        created_at,
        updated_at,
        creation_origin,
    ) = row
    scope: dict[str, str] = {"workspace": workspace}
    if project is not None:
        scope["project"] = project
    item: Item = {
        "id": item_id,
        "type": item_type,
        "content": content,
        "scope": scope,
        "status": status,
        "creationOrigin": creation_origin,
    }
    if replacement_id is not None:
        item["replacementId"] = replacement_id
    item["evidence"] = evidence
    item["createdAt"] = created_at
    item["updatedAt"] = updated_at
    return item


ITEM_COLUMNS = (
    "id, type, content, workspace, project, status, replacement_id, created_at, updated_at, "
    "creation_origin"
)

"""Record front matter (schema v0.4): parse, validate and render canonically.

Public functions (other modules and the partner's migration/status code use these):

- ``parse(text, *, path=None, today=None) -> dict | None`` - the normalised metadata of a
  record, or ``None`` for a legacy record (no front matter). Raises
  :class:`~dsh_memory.errors.InvalidMetadataError` (or its leaves ``invalid-schema-version``,
  ``invalid-id``, ``flow-style-metadata``).
- ``validate(metadata, *, today=None) -> dict`` - the same checks and defaults on a mapping.
- ``render(metadata) -> str`` - canonical front matter block, ending in ``"---\\n"``.
- ``split(text) -> (block | None, body)``, ``body_of(text) -> str``, ``has_front_matter(text)``.
- ``is_record_path(path)``, ``legacy_id(path)``, ``legacy_front_matter(path, day)``,
  ``record_text(data)``.
- ``is_expired(metadata, now=None)``, ``topic_key(metadata)``,
  ``resolve_topic_conflict(records, now=None)``.

The grammar is the earlier tool's flat subset of YAML (no YAML library on either side):
``key: scalar`` lines, ``key:`` followed by ``  - item`` lines, ``key: []``; comments and
blank lines are skipped; block scalars (``|``, ``>``) and flow collections (``[a, b]``) are
rejected. The block is found with the earlier tool's regular expression
``^---\\r?\\n([\\s\\S]*?)\\r?\\n---\\r?\\n?``, so CRLF files parse. A UTF-8 BOM is *not*
skipped: the earlier tool treats a BOM-prefixed file as legacy, and so do we, so both tools
classify every file the same way (docs/compatibility/memory.md, Front matter).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from dsh_common.errors import MAX_SHOWN_CHARS, shown, truncate
from dsh_memory.errors import (
    FlowStyleMetadataError,
    InvalidIdError,
    InvalidMetadataError,
    InvalidSchemaVersionError,
)

SCHEMA_VERSION = 1
TYPES = ("preference", "fact", "decision", "procedure", "constraint", "observation")
STATUSES = ("active", "candidate", "conflicted", "superseded", "archived")
CONFIDENCES = ("high", "medium", "low", "unknown")
STATUS_PRECEDENCE = {status: rank for rank, status in enumerate(STATUSES)}

ID_RE = re.compile(r"[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)?")
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
FRONT_MATTER_RE = re.compile(r"---\r?\n([\s\S]*?)\r?\n---\r?\n?")
# The earlier tool needs indentation before "-"; v0.9.3 also accepts unindented block lists.
_LIST_ITEM_RE = re.compile(r"[ \t]*-\s+(.+)")
_INT_RE = re.compile(r"-?[0-9]+")
_FLOAT_RE = re.compile(r"-?[0-9]+\.[0-9]+")
_COMMENT_RE = re.compile(r"[ \t]*#")
# JavaScript's Number.MAX_SAFE_INTEGER: larger integers stay strings, as in the earlier tool.
_MAX_SAFE_INTEGER = 2**53 - 1

PAYLOAD_RECORD_ROOTS = ("handbook", "rollouts", "archive")
PROVENANCE_STRING_FIELDS = (
    "source_hash",
    "content_hash",
    "source_session_digest",
    "created_by",
    "supersedes",
    "conflicts_with",
)
PROVENANCE_DATE_FIELDS = ("review_after", "expires_at")
# Canonical render order (docs/compatibility/memory.md, Front matter: the later provenance fields
# in the order the earlier tool's renderer writes them).
_OPTIONAL_RENDER_ORDER = (
    "source_hash",
    "content_hash",
    "source_session_digest",
    "created_by",
    "supersedes",
    "conflicts_with",
    "review_after",
    "expires_at",
)
MAX_TAG_CHARS = 64
MAX_PROVENANCE_CHARS = 128

Metadata = dict[str, Any]


def is_record_path(path: str) -> bool:
    """A payload record: ``handbook|rollouts|archive/…/*.md`` (summary.md never is)."""
    parts = path.split("/")
    return (
        len(parts) >= 2
        and parts[0] in PAYLOAD_RECORD_ROOTS
        and all(part not in ("", ".", "..") for part in parts)
        and path.endswith(".md")
    )


def legacy_id(path: str) -> str:
    """The deterministic id of a legacy record: ``legacy-`` + 16 hex of sha256(path)."""
    return "legacy-" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:16]


def legacy_front_matter(path: str, day: str) -> str:
    """The front matter ``migrateLegacy`` prepends and ``legacyRecords`` shows: the earlier
    tool's exact bytes (``migrationFrontMatter``), the body following the closing ``---``
    line directly - no blank line, so both tools migrate a record into the same blob."""
    return (
        f"---\nschema_version: {SCHEMA_VERSION}\nid: {legacy_id(path)}\n"
        f"created_at: {day}\nupdated_at: {day}\n---\n"
    )


def record_text(data: bytes) -> str | None:
    """The text of a record file, or None when the file cannot be a record: not UTF-8, or
    holding a NUL (binary). One test for every door: ``status`` counts such a file as
    invalid metadata, and search, context and migration skip it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def has_front_matter(text: str) -> bool:
    """The earlier tool's cheap test: the file starts with ``---\\n`` or ``---\\r\\n``."""
    return text.startswith(("---\n", "---\r\n"))


def split(text: str) -> tuple[str | None, str]:
    """``(block, body)``: the raw front matter block (``None`` for legacy) and the body."""
    match = FRONT_MATTER_RE.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]


def body_of(text: str) -> str:
    """The record body without its front matter (the whole text for a legacy record)."""
    return split(text)[1]


def _parse_scalar(raw: str) -> Any:
    trimmed = raw.strip()
    if len(trimmed) >= 2 and trimmed[0] == trimmed[-1] and trimmed[0] in "\"'":
        return trimmed[1:-1]
    if len(trimmed) == 1 and trimmed in "\"'":
        # JavaScript's startsWith/endsWith both hold for a lone quote: slice(1, -1) is "".
        return ""
    # At most 16 digits can be a safe integer; a longer run is a float to JavaScript (and
    # Python's int() refuses more than 4,300 digits with a ValueError).
    if _INT_RE.fullmatch(trimmed) and len(trimmed.lstrip("+-")) <= 16:
        number = int(trimmed)
        if abs(number) <= _MAX_SAFE_INTEGER:
            return number
    if _FLOAT_RE.fullmatch(trimmed):
        return float(trimmed)
    return trimmed


def _parse_block(block: str, where: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    current_list: list[Any] | None = None
    for line in re.split(r"\r?\n", block):
        if line.strip() == "" or _COMMENT_RE.match(line):
            continue
        item = _LIST_ITEM_RE.fullmatch(line)
        if item is not None and current_list is not None:
            current_list.append(_parse_scalar(item.group(1)))
            continue
        colon = line.find(":")
        if colon <= 0:
            raise InvalidMetadataError(f"{where}: unparsable front matter line: {shown(line)}")
        key = line[:colon].strip()
        value = line[colon + 1 :].strip()
        if key == "":
            raise InvalidMetadataError(f"{where}: front matter has an empty key")
        if (value.startswith("[") and value != "[]") or (value.startswith("{") and value != "{}"):
            raise FlowStyleMetadataError(
                f"{where}: {truncate(key, MAX_SHOWN_CHARS)} must be a block list, not flow style"
            )
        if value.startswith(("|", ">")):
            raise InvalidMetadataError(
                f"{where}: block scalar is not supported: {truncate(key, MAX_SHOWN_CHARS)}"
            )
        if value in ("", "[]", "{}"):
            current_list = []
            result[key] = current_list
            continue
        current_list = None
        if value == "true":
            result[key] = True
        elif value == "false":
            result[key] = False
        elif value in ("null", "~"):
            result[key] = None
        else:
            result[key] = _parse_scalar(value)
    return result


def _calendar_date(value: str) -> _dt.date | None:
    """The date a ``YYYY-MM-DD`` string means to JavaScript's ``Date.parse``, or None.

    V8 accepts any day 01-31 in any month 01-12 and rolls over ("2026-02-30" is March 2),
    so a file the earlier tool accepts is accepted here and expires on the same day.
    """
    if not DATE_RE.fullmatch(value):
        return None
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    try:
        # Year 0 (and a roll-over past 9999-12-31) has no Python date: invalid metadata,
        # never an exception that takes down the whole scan.
        return _dt.date(year, month, 1) + _dt.timedelta(days=day - 1)
    except (ValueError, OverflowError):
        return None


def _is_date(value: Any) -> bool:
    return isinstance(value, str) and _calendar_date(value) is not None


def today_utc() -> str:
    return _dt.datetime.now(_dt.UTC).date().isoformat()


def validate(
    metadata: Mapping[str, Any],
    *,
    path: str | None = None,
    today: str | None = None,
    complete_dates: bool = True,
) -> Metadata:
    """Check a raw front matter mapping and complete the documented defaults.

    Unknown keys are dropped (the earlier tool ignores them too). Provenance fields that are
    absent come back as ``None``. Missing ``created_at``/``updated_at`` default to ``today``
    (UTC) - or stay ``None`` with ``complete_dates=False``, for readers such as the search
    index whose results must not depend on the day a file was read.
    """
    where = path or "front matter"
    raw = dict(metadata)
    version = raw.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise InvalidSchemaVersionError(f"{where} has schema_version {shown(version)}")
    record_id = raw.get("id")
    if not isinstance(record_id, str) or not ID_RE.fullmatch(record_id):
        raise InvalidIdError(f"{where} has an invalid id")
    for field, allowed in (("type", TYPES), ("status", STATUSES), ("confidence", CONFIDENCES)):
        if field in raw and raw[field] not in allowed:
            raise InvalidMetadataError(f"{where} has an unknown {field}: {shown(raw[field])}")
    for field in ("created_at", "updated_at", *PROVENANCE_DATE_FIELDS):
        if field in raw and not _is_date(raw[field]):
            raise InvalidMetadataError(f"{where} has an invalid {field}")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(
        isinstance(tag, str) and 0 < len(tag) <= MAX_TAG_CHARS and _single_line(tag) for tag in tags
    ):
        raise InvalidMetadataError(f"{where} has invalid tags")
    rollouts = raw.get("source_rollouts", [])
    if not isinstance(rollouts, list) or not all(
        isinstance(item, str)
        and item.startswith("rollouts/")
        and ".." not in item
        and item.endswith(".md")
        and _single_line(item)
        for item in rollouts
    ):
        raise InvalidMetadataError(f"{where} has out-of-tree source_rollouts")
    for field in PROVENANCE_STRING_FIELDS:
        if field in raw:
            value = raw[field]
            if not (
                isinstance(value, str)
                and 0 < len(value) <= MAX_PROVENANCE_CHARS
                and _single_line(value)
            ):
                raise InvalidMetadataError(f"{where} has an invalid {field}")
    day = (today or today_utc()) if complete_dates else None
    normalised: Metadata = {
        "schema_version": SCHEMA_VERSION,
        "id": record_id,
        "type": raw.get("type", "observation"),
        "status": raw.get("status", "active"),
        "confidence": raw.get("confidence", "unknown"),
        "created_at": raw.get("created_at", day),
        "updated_at": raw.get("updated_at", day),
        "tags": list(tags),
        "source_rollouts": list(rollouts),
    }
    for field in PROVENANCE_STRING_FIELDS + PROVENANCE_DATE_FIELDS:
        normalised[field] = raw.get(field)
    return normalised


def _single_line(value: str) -> bool:
    return "\n" not in value and "\r" not in value


def parse(
    text: str, *, path: str | None = None, today: str | None = None, complete_dates: bool = True
) -> Metadata | None:
    """Normalised metadata of a record, or ``None`` when it has no front matter (legacy)."""
    block, _body = split(text)
    if block is None:
        return None
    raw = _parse_block(block, path or "front matter")
    return validate(raw, path=path, today=today, complete_dates=complete_dates)


def _render_scalar(value: str) -> str:
    # Written bare, as the earlier tool does, unless reading it back would change it
    # ("123" would become a number, " x" would lose its space): then double quotes, which
    # the parser strips without any escaping rules.
    bare = (
        _parse_scalar(value) == value
        and value not in ("true", "false", "null", "~", "[]", "{}")
        and not value.startswith(("[", "{", "|", ">", "#"))
    )
    return value if bare else f'"{value}"'


def render(metadata: Mapping[str, Any]) -> str:
    """Canonical front matter for (validated) metadata, ``---`` lines included.

    Order: schema_version, id, type, status, confidence, created_at, updated_at, the
    provenance fields that are set, then the ``tags`` and ``source_rollouts`` block lists
    (omitted when empty). Byte-identical to the earlier tool's renderer for the values it
    writes.
    """
    # Normalised metadata carries absent provenance as None; that means "not written".
    present = {
        key: value
        for key, value in metadata.items()
        if not (value is None and key in _OPTIONAL_RENDER_ORDER)
    }
    checked = validate(present, today=metadata.get("created_at") or None)
    lines = [
        "---",
        f"schema_version: {SCHEMA_VERSION}",
        f"id: {checked['id']}",
        f"type: {checked['type']}",
        f"status: {checked['status']}",
        f"confidence: {checked['confidence']}",
        f"created_at: {checked['created_at']}",
        f"updated_at: {checked['updated_at']}",
    ]
    for field in _OPTIONAL_RENDER_ORDER:
        value = checked[field]
        if value is not None:
            lines.append(f"{field}: {_render_scalar(value)}")
    for field in ("tags", "source_rollouts"):
        if checked[field]:
            lines.append(f"{field}:")
            lines.extend(f"  - {_render_scalar(item)}" for item in checked[field])
    lines.append("---")
    return "\n".join(lines) + "\n"


def _now(now: _dt.datetime | None) -> _dt.datetime:
    return now if now is not None else _dt.datetime.now(_dt.UTC)


def expiry_date(value: object) -> str | None:
    """The calendar day (ISO) an ``expires_at`` value means, or None if it is not a date.

    A record is expired exactly when this day is on or before today's UTC date.
    """
    if not isinstance(value, str):
        return None
    day = _calendar_date(value)
    return None if day is None else day.isoformat()


def expiry_instant(metadata: Mapping[str, Any]) -> _dt.datetime | None:
    """``expires_at`` as ``YYYY-MM-DDT00:00:00Z``, or None when the record never expires."""
    value = metadata.get("expires_at")
    if not isinstance(value, str):
        return None
    day = _calendar_date(value)
    if day is None:
        return None
    return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.UTC)


def is_expired(metadata: Mapping[str, Any] | None, now: _dt.datetime | None = None) -> bool:
    """Lazy expiry projection: expired once ``expires_at``T00:00:00Z <= now.

    The expiry day itself therefore already counts as expired. The file is never rewritten.
    """
    if metadata is None:
        return False
    instant = expiry_instant(metadata)
    return instant is not None and instant <= _now(now)


def topic_key(metadata: Mapping[str, Any]) -> str:
    """Conflict key ``"<type>:<namespace>"``: ``decision:project``, ``preference:``."""
    record_type = metadata.get("type") or "observation"
    record_id = metadata.get("id")
    namespace = (
        record_id.split("/", 1)[0] if isinstance(record_id, str) and "/" in record_id else ""
    )
    return f"{record_type}:{namespace}"


def resolve_topic_conflict(
    records: Iterable[Mapping[str, Any]], now: _dt.datetime | None = None
) -> Mapping[str, Any] | None:
    """The winner among records sharing a topic key, or None when all are expired.

    Expired records never win; then status precedence (active > candidate > conflicted >
    superseded > archived; a missing/unknown status ranks as candidate), newest
    ``updated_at``, and finally the smallest id.
    """
    instant = _now(now)
    eligible = [record for record in records if not is_expired(record, instant)]
    if not eligible:
        return None

    def precedence(record: Mapping[str, Any]) -> int:
        return STATUS_PRECEDENCE.get(str(record.get("status", "candidate")), 1)

    # Stable sorts: id ascending, then updated_at descending; min() keeps the first of the
    # best status, so ties on status fall to the newest date, then the smallest id.
    by_id = sorted(eligible, key=lambda record: str(record.get("id")))
    by_date = sorted(by_id, key=lambda record: str(record.get("updated_at") or ""), reverse=True)
    return min(by_date, key=precedence)

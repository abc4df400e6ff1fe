"""The record file: byte-exact rendering and tolerant-but-strict parsing.

A record is::

    ---
    dsh_compound: {"schemaVersion":1,"id":...}
    ---

    # Title
    ...

The one-line JSON is the source of truth, written as ``JSON.stringify`` writes it (compact,
insertion order, raw UTF-8) so records from the earlier Node helper and from this package
are interchangeable. Its key order is fixed here: ``schemaVersion`` first, then the draft
fields in draft order, with ``files`` entries as ``{path, sha256}``, ``verification``
extended by ``source`` and ``executedByHelper``, and ``createdAt``/``updatedAt`` last.

The Markdown body is a pure function of the metadata (:func:`render_body`), so reading a
record can tell whether someone edited one representation without the other.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from dsh_common.errors import DshError, truncate
from dsh_common.jsonio import dumps, loads
from dsh_compound.draft import DRAFT_FIELDS, strip_bom, validate_draft
from dsh_compound.errors import CompoundError, MalformedRecordError
from dsh_compound.limits import LIMITS, SCHEMA_VERSION

FRONT_MATTER_KEY = "dsh_compound"
VERIFICATION_NOTICE = (
    "> Verification below is self-reported. "
    "This helper did not execute the command or verify correctness."
)
VERIFICATION_SOURCE = "self-reported"

# Always used with fullmatch: ``match`` with ``$`` would let a trailing newline through.
# ``[0-9]``, not ``\d``: ``\d`` also matches Arabic-Indic and fullwidth digits.
_SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
_TIMESTAMP_PATTERN = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z"
)
_BACKTICK_RUN = re.compile(r"`+")


def sha256(data: bytes | str) -> str:
    """Lowercase hex SHA-256 of ``data`` (text is hashed as UTF-8)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def is_sha256(value: object) -> bool:
    """True for 64 lowercase hexadecimal characters."""
    return isinstance(value, str) and bool(_SHA256_PATTERN.fullmatch(value))


def build_metadata(
    draft: dict[str, Any], file_digests: list[str], *, created_at: str, updated_at: str
) -> dict[str, Any]:
    """The structured record for a validated draft, in the documented key order."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "id": draft["id"],
        "title": draft["title"],
        "tags": list(draft["tags"]),
        "problem": draft["problem"],
        "rootCause": draft["rootCause"],
        "resolution": draft["resolution"],
        "whenToUse": draft["whenToUse"],
        "verification": {
            "command": draft["verification"]["command"],
            "result": draft["verification"]["result"],
            "source": VERIFICATION_SOURCE,
            "executedByHelper": False,
        },
        "files": [
            {"path": path, "sha256": digest}
            for path, digest in zip(draft["files"], file_digests, strict=True)
        ],
        "createdAt": created_at,
        "updatedAt": updated_at,
    }


def _one_line(text: str) -> str:
    # A heading or list item must stay one line, or a title could inject its own sections.
    # Every character splitlines() breaks on is non-printable, so printable text is as is.
    return text if text.isprintable() else " ".join(text.splitlines())


def _fenced(text: str) -> str:
    # CommonMark: a fence longer than any backtick run inside keeps the command verbatim.
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def render_body(metadata: dict[str, Any]) -> str:
    """The human-readable Markdown for ``metadata`` (no trailing newline)."""
    verification = metadata["verification"]
    parts = [
        f"# {_one_line(metadata['title'])}",
        VERIFICATION_NOTICE,
        f"## Problem\n\n{metadata['problem']}",
        f"## Root cause\n\n{metadata['rootCause']}",
        f"## Resolution\n\n{metadata['resolution']}",
        f"## When to use\n\n{metadata['whenToUse']}",
        "## Tags\n\n" + "\n".join(f"- {_one_line(tag)}" for tag in metadata["tags"]),
        "## Verification\n\n"
        "Command (self-reported, not executed by this helper):\n\n"
        f"{_fenced(verification['command'])}\n\n"
        f"Result (self-reported):\n\n{verification['result']}",
        "## Files\n\n"
        + "\n".join(
            f"- {_one_line(entry['path'])} (sha256 {entry['sha256']})"
            for entry in metadata["files"]
        ),
    ]
    return "\n\n".join(parts)


def render_record(metadata: dict[str, Any]) -> bytes:
    """The complete record file bytes for ``metadata``: deterministic, LF, final newline."""
    text = f"---\n{FRONT_MATTER_KEY}: {dumps(metadata)}\n---\n\n{render_body(metadata)}\n"
    return text.encode("utf-8")


def _comparable(text: str) -> str:
    return (text.replace("\r\n", "\n") if "\r" in text else text).strip()


def content_status(metadata: dict[str, Any], body: str) -> str:
    """``consistent`` if ``body`` is the fresh rendering of ``metadata``, else ``modified``.

    CRLF versus LF and whitespace around the whole body are ignored; everything else counts.
    """
    same = _comparable(body) == _comparable(render_body(metadata))
    return "consistent" if same else "modified"


#: The keys schema 1 defines, per level. Anything else was added by someone else.
_KNOWN_KEYS = frozenset({"schemaVersion", *DRAFT_FIELDS, "createdAt", "updatedAt"})
_KNOWN_VERIFICATION_KEYS = frozenset({"command", "result", "source", "executedByHelper"})
_KNOWN_FILE_KEYS = frozenset({"path", "sha256"})


def unknown_keys(metadata: dict[str, Any]) -> tuple[str, ...]:
    """Dotted names of metadata keys schema 1 does not define, in file order.

    They are kept (a newer writer may add some) but never rendered, so they cannot make a
    record ``modified``: a forged ``"verification": {"helperVerified": true}`` would read
    as ``consistent``. Naming them lets every read warn about them instead.
    """
    verification = metadata["verification"]
    files = metadata["files"]
    # Set comparisons in C settle the common case (nothing unknown) for a whole scan.
    if (
        metadata.keys() <= _KNOWN_KEYS
        and verification.keys() <= _KNOWN_VERIFICATION_KEYS
        and all(entry.keys() <= _KNOWN_FILE_KEYS for entry in files)
    ):
        return ()
    found = [key for key in metadata if key not in _KNOWN_KEYS]
    found += [f"verification.{key}" for key in verification if key not in _KNOWN_VERIFICATION_KEYS]
    for index, entry in enumerate(files):
        found += [f"files[{index}].{key}" for key in entry if key not in _KNOWN_FILE_KEYS]
    return tuple(found)


@dataclass(frozen=True)
class ParsedRecord:
    """A record read from disk: its metadata, its body text and their agreement.

    ``unknown_keys`` names metadata fields schema 1 does not define (see
    :func:`unknown_keys`); readers report them as a warning.
    """

    metadata: dict[str, Any]
    body: str
    content_status: str
    unknown_keys: tuple[str, ...] = ()


def _malformed(why: str) -> MalformedRecordError:
    return MalformedRecordError(f"malformed record: {why}")


def validate_metadata(value: object, *, expected_id: str | None = None) -> dict[str, Any]:
    """Check a parsed ``dsh_compound`` object against schema 1; return it unchanged.

    Unknown extra keys are kept (a newer writer may add some); every known one must be
    valid, with the same rules as a draft.
    """
    if not isinstance(value, dict):
        raise _malformed("front matter value is not a JSON object")
    version = value.get("schemaVersion")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _malformed(f"unsupported schemaVersion {version!r}")
    verification = value.get("verification")
    files = value.get("files")
    if not isinstance(verification, dict):
        raise _malformed("verification is not an object")
    if verification.get("source") != VERIFICATION_SOURCE:
        raise _malformed('verification.source is not "self-reported"')
    if verification.get("executedByHelper") is not False:
        raise _malformed("verification.executedByHelper is not false")
    if not isinstance(files, list) or not all(isinstance(entry, dict) for entry in files):
        raise _malformed("files is not an array of {path, sha256} objects")
    for entry in files:
        if not is_sha256(entry.get("sha256")):
            raise _malformed(f"files entry {entry.get('path')!r} has no valid sha256")
    for field in ("createdAt", "updatedAt"):
        stamp = value.get(field)
        if not isinstance(stamp, str) or not _TIMESTAMP_PATTERN.fullmatch(stamp):
            raise _malformed(f"{field} is not an ISO 8601 UTC timestamp")
    as_draft = {**value, "files": [entry.get("path") for entry in files]}
    try:
        clean = validate_draft(as_draft)
    except CompoundError as exc:
        raise _malformed(exc.message) from exc
    if clean["files"] != as_draft["files"]:
        raise _malformed("files paths are not in normalised form")
    if expected_id is not None and clean["id"] != expected_id:
        raise _malformed(f"id {clean['id']!r} does not match the file name {expected_id!r}.md")
    return value


def parse_record(data: bytes, *, expected_id: str | None = None) -> ParsedRecord:
    """Parse record bytes (one leading BOM and CRLF line endings accepted) or raise."""
    # Work on bytes up to the body: orjson parses UTF-8 bytes directly (and rejects invalid
    # UTF-8), so the front matter is never decoded twice.
    lines = strip_bom(data).split(b"\n", 3)
    if len(lines) < 3:
        raise _malformed("missing front matter")
    opening, field, closing = (line.removesuffix(b"\r") for line in lines[:3])
    if opening != b"---" or closing != b"---":
        raise _malformed("front matter must be three lines between '---' markers")
    key, separator, raw_json = field.partition(b":")
    if key != FRONT_MATTER_KEY.encode() or not separator:
        raise _malformed(f"front matter must hold exactly one field, {FRONT_MATTER_KEY!r}")
    try:
        value = loads(raw_json.strip(), what="front matter")
    except DshError as exc:
        raise _malformed(exc.message) from exc
    metadata = validate_metadata(value, expected_id=expected_id)
    raw_body = lines[3] if len(lines) > 3 else b""
    # The blank line after the closing marker separates; it is not part of the body.
    if raw_body.startswith(b"\n"):
        raw_body = raw_body[1:]
    elif raw_body.startswith(b"\r\n"):
        raw_body = raw_body[2:]
    try:
        body = raw_body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed("the body is not UTF-8") from exc
    return ParsedRecord(
        metadata=metadata,
        body=body,
        content_status=content_status(metadata, body),
        unknown_keys=unknown_keys(metadata),
    )


def summary_of(metadata: dict[str, Any]) -> str:
    """A short, whitespace-collapsed summary: the problem, truncated."""
    return truncate(" ".join(metadata["problem"].split()), LIMITS.summary_length)


def self_reported_evidence(metadata: dict[str, Any], *, bounded: bool) -> dict[str, Any]:
    """The verification claim as recorded (never executed), truncated when ``bounded``."""
    verification = metadata["verification"]

    def shown(text: str) -> str:
        return truncate(text, LIMITS.evidence_string_length) if bounded else text

    return {
        "command": shown(verification["command"]),
        "result": shown(verification["result"]),
        "source": verification["source"],
        "executedByHelper": verification["executedByHelper"],
    }

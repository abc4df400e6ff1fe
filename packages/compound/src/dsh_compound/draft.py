"""Draft input: reading the JSON file, validating IDs and fields.

A draft is untrusted input (often written by an agent). Validation either returns a clean
draft - the contract's fields only, in its order (docs/compatibility/compound.md, Draft), paths
normalised to ``/`` - or raises
one error that lists every problem found, so an agent can fix its draft in one round.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from dsh_common import paths as common_paths
from dsh_common.cli import is_undecodable
from dsh_common.errors import DshError
from dsh_common.io import read_bounded
from dsh_common.jsonio import loads
from dsh_compound.errors import (
    DraftTooLargeError,
    InputNotFoundError,
    InvalidDraftError,
    InvalidIdError,
    InvalidPathError,
    SymlinkRejectedError,
    translate_common_errors,
)
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS, exceeds_js_length
from dsh_compound.workspace import require_decodable_path, select_workspace

# Always used with fullmatch: ``match`` with ``$`` accepted "evil\n", a file name with a newline.
_ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_BOM = b"\xef\xbb\xbf"

#: The draft fields schema 1 defines, in draft order (everything else is discarded).
DRAFT_FIELDS = (
    "id",
    "title",
    "tags",
    "problem",
    "rootCause",
    "resolution",
    "whenToUse",
    "verification",
    "files",
)
VERIFICATION_FIELDS = ("command", "result")

#: Text fields of a draft with their length limits (JavaScript characters), in draft order.
TEXT_FIELDS: tuple[tuple[str, int], ...] = (
    ("title", LIMITS.title_length),
    ("problem", LIMITS.problem_length),
    ("rootCause", LIMITS.root_cause_length),
    ("resolution", LIMITS.resolution_length),
    ("whenToUse", LIMITS.when_to_use_length),
)


def strip_bom(data: bytes) -> bytes:
    """Drop a single leading UTF-8 byte-order mark (Windows PowerShell writes one)."""
    return data[len(_BOM) :] if data.startswith(_BOM) else data


def validate_id(value: object) -> str:
    """Return ``value`` if it is a valid record ID, else raise InvalidIdError.

    IDs are lowercase kebab-case slugs (``a-z``, ``0-9``, single hyphens between parts) of
    at most 100 characters, and never a Windows device name (``con``, ``nul``, ``com1``...):
    the ID becomes a file name, and ``con.md`` cannot be created on Windows.
    """
    if not isinstance(value, str):
        raise InvalidIdError("id must be a string")
    if _is_valid_id(value):
        return value
    if not value:
        raise InvalidIdError("id must not be empty")
    if len(value) > LIMITS.id_length:
        raise InvalidIdError(f"id is longer than {LIMITS.id_length} characters")
    if not _ID_PATTERN.fullmatch(value):
        raise InvalidIdError(
            f"id {value!r} is not a lowercase kebab-case slug (a-z, 0-9, single hyphens)"
        )
    if common_paths.is_windows_device_name(value):
        raise InvalidIdError(f"id {value!r} is a Windows device name")
    return value


@functools.lru_cache(maxsize=4096)
def _is_valid_id(value: str) -> bool:
    # A scan validates each record's ID twice (file name and metadata); remember the good.
    return (
        len(value) <= LIMITS.id_length
        and bool(_ID_PATTERN.fullmatch(value))
        and not common_paths.is_windows_device_name(value)
    )


def _text(draft: dict[str, Any], field: str, limit: int, problems: list[str]) -> str:
    value = draft.get(field)
    if not isinstance(value, str):
        problems.append(f"{field} must be a string")
        return ""
    if not value or value.isspace():
        problems.append(f"{field} must not be empty")
    elif is_undecodable(value):
        problems.append(f"{field} is not valid UTF-8 text")
    elif exceeds_js_length(value, limit):
        problems.append(f"{field} is longer than {limit} characters")
    return value


def _tags(draft: dict[str, Any], problems: list[str]) -> list[str]:
    value = draft.get("tags")
    if not isinstance(value, list):
        problems.append("tags must be an array of strings")
        return []
    if not LIMITS.tags_min <= len(value) <= LIMITS.tags_max:
        problems.append(f"tags must have {LIMITS.tags_min} to {LIMITS.tags_max} entries")
    tags: list[str] = []
    for index, tag in enumerate(value):
        if not isinstance(tag, str) or not tag or tag.isspace():
            problems.append(f"tags[{index}] must be a nonempty string")
        elif is_undecodable(tag):
            problems.append(f"tags[{index}] is not valid UTF-8 text")
        elif exceeds_js_length(tag, LIMITS.tag_length):
            problems.append(f"tags[{index}] is longer than {LIMITS.tag_length} characters")
        else:
            tags.append(tag)
    return tags


def _verification(draft: dict[str, Any], problems: list[str]) -> dict[str, str]:
    value = draft.get("verification")
    if not isinstance(value, dict):
        problems.append("verification must be an object with command and result")
        return {"command": "", "result": ""}
    limit = LIMITS.verification_field_length
    return {
        "command": _text(value, "command", limit, problems),
        "result": _text(value, "result", limit, problems),
    }


def _file_list(draft: dict[str, Any], problems: list[str]) -> list[str]:
    value = draft.get("files")
    if not isinstance(value, list):
        problems.append("files must be an array of workspace-relative paths")
        return []
    if not LIMITS.files_min <= len(value) <= LIMITS.files_max:
        problems.append(f"files must have {LIMITS.files_min} to {LIMITS.files_max} entries")
    files: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            problems.append(f"files[{index}] must be a nonempty string")
        else:
            files.append(item)
    return files


def normalize_source_path(raw: str, workspace: common_paths.Workspace | None = None) -> str:
    """One draft path as a validated ``/``-separated workspace-relative path (lexical only).

    With a workspace, absolute spellings under its lexical or canonical root are mapped
    into it; the corpus directory and internal directories are refused either way.
    """
    require_decodable_path(raw, "source path")
    with translate_common_errors():
        if workspace is None:
            return _validated_relative_path(raw)
        return common_paths.to_relative(workspace, raw, forbidden_prefixes=[CORPUS_DIRECTORY])


@functools.lru_cache(maxsize=4096)
def _validated_relative_path(raw: str) -> str:
    # Purely lexical, so the answer for a given string never changes: a corpus scan sees
    # the same few source paths in hundreds of records and validates each once.
    return common_paths.validate_relative_path(raw, forbidden_prefixes=[CORPUS_DIRECTORY])


def validate_draft(
    draft: object, *, workspace: common_paths.Workspace | None = None
) -> dict[str, Any]:
    """Return the clean draft (the contract's fields only, in its order) or raise.

    Raises InvalidIdError for a bad ``id``, InvalidPathError for a bad path, and
    InvalidDraftError listing every other problem. Unknown fields are discarded.
    """
    if not isinstance(draft, dict):
        raise InvalidDraftError("draft must be a JSON object")
    if "id" not in draft:
        raise InvalidDraftError("draft is missing the id field")
    record_id = validate_id(draft["id"])
    problems: list[str] = []
    title = _text(draft, "title", LIMITS.title_length, problems)
    tags = _tags(draft, problems)
    texts = {field: _text(draft, field, limit, problems) for field, limit in TEXT_FIELDS[1:]}
    verification = _verification(draft, problems)
    raw_files = _file_list(draft, problems)
    if problems:
        raise InvalidDraftError(
            "invalid draft: " + "; ".join(problems), details={"problems": problems}
        )
    files = [normalize_source_path(raw, workspace) for raw in raw_files]
    duplicates = sorted({path for path in files if files.count(path) > 1})
    if duplicates:
        raise InvalidDraftError(
            f"invalid draft: files lists {', '.join(duplicates)} more than once"
        )
    return {
        "id": record_id,
        "title": title,
        "tags": tags,
        "problem": texts["problem"],
        "rootCause": texts["rootCause"],
        "resolution": texts["resolution"],
        "whenToUse": texts["whenToUse"],
        "verification": verification,
        "files": files,
    }


def read_draft_input(workspace: str | os.PathLike[str], input: str | os.PathLike[str]) -> Any:
    """Read and parse the draft JSON file ``input``, which must lie inside ``workspace``.

    A relative ``input`` is taken relative to the current directory (as a shell user
    means it) and must then fall inside the workspace; it obeys the same path rules as
    evidence paths. At most 32 KiB are read; one leading BOM is accepted.
    """
    selected = select_workspace(workspace)
    absolute = os.path.abspath(require_decodable_path(input, "the draft input path"))
    with translate_common_errors():
        relative, location = common_paths.resolve_in_workspace(
            selected, absolute, forbidden_prefixes=[CORPUS_DIRECTORY]
        )
    try:
        data = read_bounded(location, LIMITS.draft_bytes)
    except FileNotFoundError as exc:
        raise InputNotFoundError(f"draft input {relative!r} does not exist") from exc
    except DshError as exc:
        if exc.code == "file-too-large":
            raise DraftTooLargeError(
                f"draft input {relative!r} is larger than {LIMITS.draft_bytes} bytes"
            ) from exc
        if exc.code == "symlink-rejected":
            raise SymlinkRejectedError(f"draft input {relative!r} is a symbolic link") from exc
        raise InvalidPathError(f"draft input {relative!r} is not a regular file") from exc
    except OSError as exc:
        raise InvalidPathError(f"draft input {relative!r} cannot be read: {exc.strerror}") from exc
    try:
        text = strip_bom(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDraftError(f"draft input {relative!r} is not UTF-8") from exc
    try:
        return loads(text, what=f"draft input {relative!r}")
    except DshError as exc:
        raise InvalidDraftError(exc.message) from exc

"""Argument checks and result summaries shared by the agent tools.

Messages follow the earlier tool: "<field> must be at most N characters.", "<field> must
not be empty.", "evidence must contain at most 16 items.". No message echoes a value the
caller sent (it may be a secret the privacy filter has not seen yet).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dsh_knowledge.models import EVIDENCE_TYPES
from dsh_knowledge.tool_errors import ToolInputError
from dsh_knowledge.tool_schemas import (
    DEFAULT_TOOL_LIMIT,
    INPUT_SCHEMAS,
    MAX_EVIDENCE_FIELD_CHARS,
    MAX_EVIDENCE_ITEMS,
    MAX_PROJECT_CHARS,
    MAX_TOOL_LIMIT,
    MAX_WORKSPACE_CHARS,
)

__all__ = [
    "MAX_GET_EVIDENCE",
    "MAX_ITEM_CONTENT_CHARS",
    "MAX_LIST_CONTENT_CHARS",
    "check_keys",
    "clamp_limit",
    "evidence_records",
    "optional_bool",
    "optional_enum",
    "optional_text",
    "required_text",
    "summarize",
]

MAX_LIST_CONTENT_CHARS = 280  # list and search summaries
MAX_ITEM_CONTENT_CHARS = 1200  # get and add summaries
MAX_GET_EVIDENCE = 8


def check_keys(tool: str, arguments: Mapping[str, Any]) -> None:
    allowed = INPUT_SCHEMAS[tool]["properties"]
    for key in arguments:
        if key not in allowed:
            raise ToolInputError(f"{tool} does not accept that argument.")


def required_text(arguments: Mapping[str, Any], field: str, limit: int) -> str:
    value = arguments.get(field)
    if not isinstance(value, str):
        raise ToolInputError(f"{field} must be a string.")
    if not value.strip():
        raise ToolInputError(f"{field} must not be empty.")
    if len(value) > limit:
        raise ToolInputError(f"{field} must be at most {limit} characters.")
    return value


def optional_text(arguments: Mapping[str, Any], field: str, limit: int) -> str | None:
    if arguments.get(field) is None:
        return None
    return required_text(arguments, field, limit)


def optional_enum(
    arguments: Mapping[str, Any], field: str, allowed: tuple[str, ...] | list[str]
) -> str | None:
    value = arguments.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise ToolInputError(f"{field} must be one of: {', '.join(allowed)}.")
    return value


def optional_bool(arguments: Mapping[str, Any], field: str) -> bool:
    value = arguments.get(field, False)
    if not isinstance(value, bool):
        raise ToolInputError(f"{field} must be a boolean.")
    return value


def clamp_limit(value: object) -> int:
    """The earlier tool's limit rule: non-finite or absent -> 10, floor, clamp to 1..20."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if value is None:
            return DEFAULT_TOOL_LIMIT
        raise ToolInputError("limit must be a number.")
    if isinstance(value, float) and not math.isfinite(value):
        return DEFAULT_TOOL_LIMIT
    return max(1, min(MAX_TOOL_LIMIT, math.floor(value)))


def evidence_records(arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    """knowledge_add's ``evidence``: at most 16 ``{"type", "source", "locator"?}`` objects."""
    raw = arguments.get("evidence")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ToolInputError("evidence must be an array.")
    if len(raw) > MAX_EVIDENCE_ITEMS:
        raise ToolInputError(f"evidence must contain at most {MAX_EVIDENCE_ITEMS} items.")
    records = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not set(entry) <= {"type", "source", "locator"}:
            raise ToolInputError("evidence items must be objects with type, source, locator.")
        kind = optional_enum(entry, "type", EVIDENCE_TYPES)
        if kind is None:
            raise ToolInputError(f"type must be one of: {', '.join(EVIDENCE_TYPES)}.")
        record = {"type": kind, "source": required_text(entry, "source", MAX_EVIDENCE_FIELD_CHARS)}
        locator = optional_text(entry, "locator", MAX_EVIDENCE_FIELD_CHARS)
        if locator is not None:
            record["locator"] = locator
        records.append(record)
    return records


def _truncate(value: str, limit: int) -> tuple[str, bool]:
    return (value, False) if len(value) <= limit else (value[:limit], True)


def summarize(
    item: Mapping[str, Any], *, content_chars: int, evidence: bool = False
) -> dict[str, Any]:
    """The compact item shape tools return; long content/workspace/project are cut."""
    content, content_cut = _truncate(item["content"], content_chars)
    workspace, workspace_cut = _truncate(item["scope"]["workspace"], MAX_WORKSPACE_CHARS)
    summary: dict[str, Any] = {
        "id": item["id"],
        "type": item["type"],
        "content": content,
        "contentTruncated": content_cut,
        "workspace": workspace,
    }
    if workspace_cut:
        summary["workspaceTruncated"] = True
    project = item["scope"].get("project")
    if project is not None:
        summary["project"], project_cut = _truncate(project, MAX_PROJECT_CHARS)
        if project_cut:
            summary["projectTruncated"] = True
    summary["status"] = item["status"]
    summary["creationOrigin"] = item["creationOrigin"]
    if evidence:
        summary["evidence"] = [dict(record) for record in item["evidence"][:MAX_GET_EVIDENCE]]
    return summary

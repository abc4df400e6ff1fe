"""The seven agent tools as plain functions over a :class:`ToolContext` (no MCP import here).

Each tool takes the JSON arguments an agent sent and returns a JSON-ready result matching
:data:`dsh_knowledge.tool_schemas.OUTPUT_SCHEMAS`; a refused call raises a
:class:`~dsh_knowledge.errors.KnowledgeError` whose message is the one the agent sees.

Scope: ``workspace`` defaults to the session workspace (the agent's working directory);
``project`` left out means the configured project (workspace-wide when none is configured),
explicit ``null`` means workspace-wide. An item outside the resolved scope is answered as
``null``, exactly like a missing one, so no tool reveals what another scope holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dsh_common.embedding.mode import RANKINGS, InvalidRankingError, resolve_ranking
from dsh_knowledge._tool_args import (
    MAX_ITEM_CONTENT_CHARS,
    MAX_LIST_CONTENT_CHARS,
    check_keys,
    clamp_limit,
    evidence_records,
    optional_bool,
    optional_enum,
    optional_text,
    required_text,
    summarize,
)
from dsh_knowledge.authoring import add_item, capture_skip_reason
from dsh_knowledge.freshness import check_freshness
from dsh_knowledge.health import check_health
from dsh_knowledge.models import CREATION_ORIGINS, KNOWLEDGE_STATUSES, KNOWLEDGE_TYPES
from dsh_knowledge.privacy import ensure_no_secrets
from dsh_knowledge.provenance_update import provenance_guidance
from dsh_knowledge.ranked_page import ranked_page
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.tool_errors import ToolInputError, ToolUnavailableError
from dsh_knowledge.tool_schemas import (
    MAX_CONTENT_CHARS,
    MAX_HEALTH_IDS,
    MAX_ID_CHARS,
    MAX_PROJECT_CHARS,
    MAX_QUERY_CHARS,
    MAX_WORKSPACE_CHARS,
    TOOL_NAMES,
)

__all__ = ["STORAGE_UNAVAILABLE", "WORKSPACE_UNAVAILABLE", "ToolContext", "call_tool"]

WORKSPACE_UNAVAILABLE = "Workspace is unavailable; provide an explicit workspace scope."
STORAGE_UNAVAILABLE = "Knowledge storage is unavailable."


@dataclass
class ToolContext:
    """What a tool call knows about its caller: store, session workspace, project, session."""

    repository: KnowledgeRepository | None
    workspace: str | None = None
    project: str | None = None
    session_id: str | None = None
    #: The local work tree files are read from (default: the workspace, when it is a path).
    checkout: str | None = None
    #: Tries to open the store again while :attr:`repository` is None (None: it failed
    #: again). A long-lived MCP server started while its database was down, locked or not
    #: yet reachable then serves the first call after the database is back.
    reopen: Callable[[], KnowledgeRepository | None] | None = None
    #: knowledge_search's ranking when the call names none: ``lexical`` or ``hybrid``
    #: (None: ``$DSH_RANKING`` at each call, else lexical). The MCP server sets it at start.
    ranking: str | None = None

    def files(self) -> str:
        """The session's local work tree (provenance, freshness and health read it)."""
        if self.workspace is None:
            raise ToolUnavailableError(WORKSPACE_UNAVAILABLE)
        return self.checkout if self.checkout is not None else self.workspace

    def repo(self) -> KnowledgeRepository:
        if self.repository is None and self.reopen is not None:
            self.repository = self.reopen()
        if self.repository is None:
            raise ToolUnavailableError(STORAGE_UNAVAILABLE)
        return self.repository


def _workspace(context: ToolContext, arguments: Mapping[str, Any]) -> str:
    explicit = optional_text(arguments, "workspace", MAX_WORKSPACE_CHARS)
    workspace = explicit if explicit is not None else context.workspace
    if workspace is None or not workspace.strip():
        raise ToolUnavailableError(WORKSPACE_UNAVAILABLE)
    return workspace


def _project(context: ToolContext, arguments: Mapping[str, Any]) -> str | None:
    if "project" not in arguments:
        return context.project
    return optional_text(arguments, "project", MAX_PROJECT_CHARS)


def _in_scope(item: Mapping[str, Any] | None, workspace: str, project: str | None) -> bool:
    if item is None or item["scope"]["workspace"] != workspace:
        return False
    item_project = item["scope"].get("project")
    # Workspace-wide items of this workspace are visible from a project, as retrieval sees them.
    return item_project is None or item_project == project


def _scoped_item(
    context: ToolContext, arguments: Mapping[str, Any], workspace: str
) -> dict[str, Any] | None:
    item_id = required_text(arguments, "id", MAX_ID_CHARS)
    item = context.repo().get(item_id)
    return item if _in_scope(item, workspace, _project(context, arguments)) else None


def knowledge_add(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    kind = optional_enum(arguments, "type", KNOWLEDGE_TYPES)
    if kind is None:
        raise ToolInputError(f"type must be one of: {', '.join(KNOWLEDGE_TYPES)}.")
    content = required_text(arguments, "content", MAX_CONTENT_CHARS)
    records = evidence_records(arguments)
    # Refused before the scope is even read (add_item filters again, for every front end).
    ensure_no_secrets(content, records)
    workspace = _workspace(context, arguments)
    project = _project(context, arguments)
    # Provenance from the session's checkout, for an add to the session's workspace only.
    skip = capture_skip_reason(context.workspace, workspace)
    item, report = add_item(
        context.repo,
        type=kind,
        content=content,
        workspace=workspace,
        project=project,
        evidence=records,
        repo=context.files() if skip is None else None,
        skip_capture=skip,
        session_id=context.session_id,
    )
    result: dict[str, Any] = {
        "item": summarize(item, content_chars=MAX_ITEM_CONTENT_CHARS, evidence=True)
    }
    if report is not None:
        result["provenanceCapture"] = report
    return result


def knowledge_search(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    query = arguments.get("query")
    if not isinstance(query, str):
        raise ToolInputError("query must be a string.")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolInputError(f"query must be at most {MAX_QUERY_CHARS} characters.")
    workspace = _workspace(context, arguments)
    project = _project(context, arguments)
    kind = optional_enum(arguments, "type", KNOWLEDGE_TYPES)
    status = optional_enum(arguments, "status", ("candidate", "verified"))
    limit = clamp_limit(arguments.get("limit"))
    requested = optional_enum(arguments, "ranking", RANKINGS)
    wanted = _ranking(requested if requested is not None else context.ranking)
    page = ranked_page(
        context.repo(),
        query,
        ranking=wanted,
        limit=limit,
        workspace=workspace,
        project=project,
        type=kind,
        status=status,
    )
    items = []
    for r in page.results:
        summary = summarize(r["knowledge"], content_chars=MAX_LIST_CONTENT_CHARS)
        if "hybrid" in r:
            summary["hybrid"] = r["hybrid"]
        items.append(summary)
    return page.to_json("items", items)


def _ranking(name: str | None) -> str:
    """``name``, else ``$DSH_RANKING``, else lexical; a bad variable is the caller's error."""
    try:
        return resolve_ranking(name)
    except InvalidRankingError as error:
        raise ToolInputError(error.message) from None


def knowledge_list(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    workspace = _workspace(context, arguments)
    project = _project(context, arguments)
    filters = {
        "workspace": workspace,
        "project": project,
        "type": optional_enum(arguments, "type", KNOWLEDGE_TYPES),
        "status": optional_enum(arguments, "status", KNOWLEDGE_STATUSES),
        "creation_origin": optional_enum(arguments, "creationOrigin", CREATION_ORIGINS),
    }
    limit = clamp_limit(arguments.get("limit"))
    repository = context.repo()
    shown = repository.list(**filters, limit=limit)
    total = repository.count(**filters)
    return {
        "items": [summarize(i, content_chars=MAX_LIST_CONTENT_CHARS) for i in shown],
        "total": total,
        "truncated": total > len(shown),
    }


def _health_of(
    context: ToolContext, items: list[dict[str, Any]], include_guidance: bool
) -> list[dict[str, Any]]:
    if context.workspace is None:
        raise ToolUnavailableError(WORKSPACE_UNAVAILABLE)
    results = check_health(items, context.files(), include_guidance=include_guidance)
    if include_guidance:
        for item, result in zip(items, results, strict=True):
            extra = provenance_guidance(item)
            if extra is not None:
                result["guidance"].append(extra)
    return results


def knowledge_get(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    include_health = optional_bool(arguments, "includeHealth")
    item = _scoped_item(context, arguments, _workspace(context, arguments))
    result: dict[str, Any] = {
        "item": None
        if item is None
        else summarize(item, content_chars=MAX_ITEM_CONTENT_CHARS, evidence=True)
    }
    if include_health:
        result["health"] = None if item is None else _health_of(context, [item], False)[0]
    return result


def knowledge_archive(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    item = _scoped_item(context, arguments, _workspace(context, arguments))
    if item is None:
        return {"item": None}
    archived = context.repo().archive(item["id"])
    return {"item": summarize(archived, content_chars=MAX_ITEM_CONTENT_CHARS, evidence=True)}


def knowledge_check_freshness(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    if context.workspace is None:
        raise ToolUnavailableError(WORKSPACE_UNAVAILABLE)
    item = _scoped_item(context, arguments, context.workspace)
    if item is None:
        return {"report": None}
    return {"report": check_freshness(item, context.files())}


def knowledge_health(context: ToolContext, arguments: Mapping[str, Any]) -> dict[str, Any]:
    ids = arguments.get("ids")
    if not isinstance(ids, list) or not ids:
        raise ToolInputError("ids must not be empty.")
    if len(ids) > MAX_HEALTH_IDS:
        raise ToolInputError(f"ids must contain at most {MAX_HEALTH_IDS} items.")
    for value in ids:
        required_text({"id": value}, "id", MAX_ID_CHARS)
    include_guidance = optional_bool(arguments, "includeGuidance")
    if context.workspace is None:
        raise ToolUnavailableError(WORKSPACE_UNAVAILABLE)
    project = _project(context, arguments)
    found = {i["id"]: i for i in context.repo().get_many(ids)}
    visible = [
        found[i] for i in dict.fromkeys(ids) if _in_scope(found.get(i), context.workspace, project)
    ]
    healths = {}
    if visible:
        healths = {r["knowledgeId"]: r for r in _health_of(context, visible, include_guidance)}
    return {"results": [{"id": i, "health": healths.get(i)} for i in ids]}


_TOOLS: dict[str, Callable[[ToolContext, Mapping[str, Any]], dict[str, Any]]] = {
    "knowledge_add": knowledge_add,
    "knowledge_search": knowledge_search,
    "knowledge_list": knowledge_list,
    "knowledge_get": knowledge_get,
    "knowledge_archive": knowledge_archive,
    "knowledge_check_freshness": knowledge_check_freshness,
    "knowledge_health": knowledge_health,
}
assert tuple(_TOOLS) == TOOL_NAMES  # noqa: S101 - registration order is part of the contract


def call_tool(
    context: ToolContext, name: str, arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Run tool ``name``; raises a KnowledgeError carrying the message the agent should see."""
    tool = _TOOLS.get(name)
    if tool is None:
        raise ToolInputError("Unknown knowledge tool.")
    args = dict(arguments or {})
    check_keys(name, args)
    return tool(context, args)

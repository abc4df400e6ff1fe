"""The candidate review workflow: list candidates with evidence and health; verify or archive.

``review_candidates`` lists ``candidate`` items (explicit and automatic) of a scope, newest
first, each with its full evidence and - when a repository directory is given - its live
health (batches of 16, as :func:`dsh_knowledge.health.check_health` allows). Health is
observational: reviewing never changes an item. ``set_status`` verifies or archives one or
many items by id; every id is checked (exists, transition allowed) before the first change,
so a bad id in a bulk request changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dsh_knowledge.errors import NotFoundError
from dsh_knowledge.health import MAX_HEALTH_BATCH_ITEMS, check_health
from dsh_knowledge.provenance_update import provenance_guidance
from dsh_knowledge.repository import UNSET, KnowledgeRepository, _transition_error, _Unset

__all__ = ["review_candidates", "set_status"]

_ALLOWED = {
    "verified": {"candidate", "verified"},
    "archived": {"candidate", "verified", "superseded", "archived"},
}


def review_candidates(
    repository: KnowledgeRepository,
    *,
    workspace: str | None = None,
    project: str | _Unset | None = UNSET,
    creation_origin: str | None = None,
    repo_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """``[{"item", "health"}]`` for candidates in scope; health is None without ``repo_dir``."""
    items = repository.list(
        workspace=workspace,
        project=project,
        status="candidate",
        creation_origin=creation_origin,
        limit=limit,
    )
    healths: dict[str, dict[str, Any]] = {}
    if repo_dir is not None:
        # A health batch must be one workspace: group before slicing into batches of 16.
        by_workspace: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            by_workspace.setdefault(item["scope"]["workspace"], []).append(item)
        for group in by_workspace.values():
            for start in range(0, len(group), MAX_HEALTH_BATCH_ITEMS):
                batch = group[start : start + MAX_HEALTH_BATCH_ITEMS]
                results = check_health(batch, repo_dir, include_guidance=True)
                for item, result in zip(batch, results, strict=True):
                    extra = provenance_guidance(item)
                    if extra is not None:
                        result["guidance"].append(extra)
                    healths[result["knowledgeId"]] = result
    return [{"item": item, "health": healths.get(item["id"])} for item in items]


def set_status(
    repository: KnowledgeRepository, item_ids: Sequence[str], status: str
) -> list[dict[str, Any]]:
    """Verify or archive every id, after checking all of them first."""
    wanted = list(dict.fromkeys(item_ids))
    found = {item["id"]: item for item in repository.get_many(wanted)}
    for item_id in wanted:
        item = found.get(item_id)
        if item is None:
            raise NotFoundError(f"Knowledge item not found: {item_id}")
        if item["status"] not in _ALLOWED[status]:
            raise _transition_error(item["status"], status)
    return [repository.update(item_id, status=status) for item_id in wanted]

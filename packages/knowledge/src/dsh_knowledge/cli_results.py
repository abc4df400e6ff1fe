"""What the frequent read commands print, without the argument parser.

``dsh-knowledge search`` and ``retrieve`` build their output here, so the Typer command
line (:mod:`dsh_knowledge.cli`) and the launcher's fast path (:mod:`dsh_knowledge.launcher`)
print the same bytes. Also the command line's spelling rules for scopes and queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from dsh_knowledge.repository import KnowledgeRepository


def missing(message: str) -> NoReturn:
    """Refuse an incomplete command line with the parser's own code (invalid-arguments)."""
    from dsh_common.cli import USAGE_ERROR_CODE  # noqa: PLC0415
    from dsh_common.errors import DshError  # noqa: PLC0415

    raise DshError(message, code=USAGE_ERROR_CODE)


def scope_workspace(value: str | None) -> str:
    """--workspace as stored and matched: a directory's canonical absolute path.

    Omitted, it is the checkout's workspace identity (``$DSH_KNOWLEDGE_WORKSPACE``, or the
    repository's committed ``.dsh-knowledge.toml``; see :mod:`dsh_knowledge.workspace_identity`)
    when one is configured, else the git top level of the current directory (else the
    directory), so ``--workspace .``, a trailing slash and the default name the same scope.
    """
    from dsh_common.locate import canonical_directory, default_workspace  # noqa: PLC0415

    if value is not None:
        return canonical_directory(value)
    from dsh_knowledge.workspace_identity import workspace_identity  # noqa: PLC0415

    return workspace_identity() or default_workspace()


def filter_workspace(value: str | None) -> str | None:
    """A --workspace filter (list, search): canonical when it names a directory."""
    from dsh_common.locate import canonical_directory  # noqa: PLC0415

    return None if value is None else canonical_directory(value)


def one_query(positional: str | None, option: str | None, command: str) -> str:
    """The query, given positionally or as --query (not two different ones)."""
    from dsh_common.cli import one_query as shared  # noqa: PLC0415

    return shared(
        positional,
        option,
        required=f"A query is required: dsh-knowledge {command} QUERY (or --query QUERY).",
        twice="Give the query once: positionally or as --query, not both.",
    )


def search_output(
    repository: KnowledgeRepository,
    phrase: str,
    *,
    workspace: str | None,
    project: str | None,
    limit: int | None,
) -> dict[str, Any]:
    """``{"items", "total", "truncated"}`` of a literal search."""
    from dsh_common.cli import list_counts  # noqa: PLC0415
    from dsh_knowledge.models import validate_limit  # noqa: PLC0415
    from dsh_knowledge.repository import UNSET  # noqa: PLC0415

    if limit is not None:
        validate_limit(limit)
    items = repository.search(
        phrase,
        workspace=filter_workspace(workspace),
        project=project if project is not None else UNSET,
        limit=None,
    )
    shown = items if limit is None else items[:limit]
    return {"items": shown, **list_counts(len(shown), len(items))}


def retrieve_output(
    repository: KnowledgeRepository,
    phrase: str,
    *,
    workspace: str | None,
    project: str | None,
    limit: int | None,
    prefer: Sequence[str] | None,
    status: str | None,
    ranking: str | None = None,
) -> dict[str, Any]:
    """``{"results", "total", "truncated"[, "ranking"][, "warnings"]}`` of a ranked retrieval.

    ``ranking`` is ``--ranking`` (None: ``$DSH_RANKING``, else lexical). Lexical output is
    exactly what it always was; a hybrid request adds ``"ranking"`` (``hybrid``, or
    ``lexical`` when it could not run here, with the reason among the warnings).
    """
    from dsh_common.embedding.mode import resolve_ranking  # noqa: PLC0415
    from dsh_knowledge.ranked_page import ranked_page  # noqa: PLC0415
    from dsh_knowledge.scoring import DEFAULT_RESULT_LIMIT  # noqa: PLC0415

    scope = scope_workspace(workspace)
    page = ranked_page(
        repository,
        phrase,
        ranking=resolve_ranking(ranking),
        limit=limit if limit is not None else DEFAULT_RESULT_LIMIT,
        workspace=scope,
        project=project,
        preferred_types=list(prefer) if prefer is not None else None,
        status=status,
    )
    if not page.results:
        from dsh_knowledge.bulk import scope_higher_up_warning  # noqa: PLC0415

        warning = scope_higher_up_warning(repository, scope)
        if warning is not None:
            page.warnings.append(warning)
    return page.to_json("results")

"""The item commands: add, get, verify, archive, supersede, update, list, search, retrieve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dsh_common.cli import emit_json
from dsh_common.cli.typer_commands import command
from dsh_knowledge.cli._app import app, repository_of, usage

# The command line's spelling rules live beside the fast path's (no typer there).
from dsh_knowledge.cli_results import filter_workspace, missing, one_query, scope_workspace
from dsh_knowledge.cli_spec import PROGRAM


@command(
    app,
    PROGRAM["add"],
    epilog="\b\nExample:\n  dsh-knowledge add --type fact --content 'The API runs on port 8080.' "
    '--evidence \'{"type": "file", "source": "config/app.toml"}\'',
)
def add(
    ctx: typer.Context,
    workspace: str | None,
    knowledge_type: str | None,
    content: str | None,
    project: str | None,
    evidence: list[str] | None,
    repo: str | None,
    jsonl: Path | None,
) -> None:
    """Add a knowledge item (status candidate, origin explicit); print it."""
    from dsh_knowledge.authoring import add_item, default_provenance_repo, evidence_from_json

    named = workspace is None  # the default: a configured workspace identity may name it
    workspace = scope_workspace(workspace)
    if jsonl is not None:
        from dsh_knowledge.bulk import add_jsonl

        if knowledge_type is not None or content is not None or evidence:
            usage("--jsonl cannot be combined with --type, --content or --evidence.")
        emit_json(add_jsonl(repository_of(ctx), jsonl, workspace=workspace, project=project))
        return
    if knowledge_type is None or content is None:
        missing("--type and --content are required (or --jsonl FILE).")
    records = evidence_from_json(evidence or [])
    if repo is None and records:
        repo = default_provenance_repo(workspace, identity=named)
    item, report = add_item(
        lambda: repository_of(ctx),
        type=knowledge_type,
        content=content,
        workspace=workspace,
        project=project,
        evidence=records,
        repo=repo,
    )
    # With a work tree (named or the default), the capture report is printed, even null.
    emit_json(item if repo is None else {**item, "provenanceCapture": report})


@command(app, PROGRAM["get"], epilog="\b\nExample:\n  dsh-knowledge get ID")
def get(ctx: typer.Context, item_id: str) -> None:
    """Print one item (error not-found for an unknown id)."""
    emit_json(repository_of(ctx).require(item_id))


def _set_status(ctx: typer.Context, item_ids: list[str], status: str) -> None:
    from dsh_knowledge.review import set_status

    items = set_status(repository_of(ctx), item_ids, status)
    # One id prints the item (as before); several print {"items": [...]}.
    emit_json(items[0] if len(item_ids) == 1 else {"items": items})


@command(app, PROGRAM["verify"], epilog="\b\nExample:\n  dsh-knowledge verify ID1 ID2")
def verify(ctx: typer.Context, item_ids: list[str]) -> None:
    """Mark candidates verified (all ids are checked before any change); print them."""
    _set_status(ctx, item_ids, "verified")


@command(app, PROGRAM["archive"], epilog="\b\nExample:\n  dsh-knowledge archive ID")
def archive(ctx: typer.Context, item_ids: list[str]) -> None:
    """Archive items (all ids are checked before any change); print them."""
    _set_status(ctx, item_ids, "archived")


@command(
    app, PROGRAM["supersede"], epilog="\b\nExample:\n  dsh-knowledge supersede OLD_ID --by NEW_ID"
)
def supersede(ctx: typer.Context, item_id: str, by: str) -> None:
    """Mark a verified item superseded by a verified item in the same scope; print it."""
    emit_json(repository_of(ctx).supersede(item_id, by))


@command(
    app,
    PROGRAM["update"],
    epilog="\b\nExample:\n  dsh-knowledge update ID --content 'The API runs on port 9090.'",
)
def update(
    ctx: typer.Context,
    item_id: str,
    content: str | None,
    knowledge_type: str | None,
    evidence: list[str] | None,
) -> None:
    """Change an item's content, type or evidence (the repository's rules apply); print it."""
    from dsh_knowledge.authoring import evidence_from_json, update_item

    if content is None and knowledge_type is None and not evidence:
        missing("Nothing to update: give --content, --type or --evidence.")
    records = evidence_from_json(evidence) if evidence else None
    item = update_item(
        lambda: repository_of(ctx),
        item_id,
        type=knowledge_type,
        content=content,
        evidence=records,
    )
    emit_json(item)


@command(
    app, PROGRAM["list"], epilog="\b\nExample:\n  dsh-knowledge list --status verified --limit 10"
)
def list_items(
    ctx: typer.Context,
    workspace: str | None,
    project: str | None,
    workspace_wide: bool,
    knowledge_type: str | None,
    status: str | None,
    origin: str | None,
    limit: int | None,
) -> None:
    """List items, newest updatedAt first: {"items": [...], "total", "truncated"}."""
    from dsh_knowledge.repository import UNSET

    if project is not None and workspace_wide:
        usage("--project and --workspace-wide cannot be used together.")
    from dsh_common.cli import list_counts
    from dsh_knowledge.models import validate_limit

    if limit is not None:
        validate_limit(limit)
    repository = repository_of(ctx)
    filters: dict[str, Any] = {
        "workspace": filter_workspace(workspace),
        "project": None if workspace_wide else (project if project is not None else UNSET),
        "type": knowledge_type,
        "status": status,
        "creation_origin": origin,
    }
    shown = repository.list(**filters, limit=limit)
    total = len(shown) if limit is None else repository.count(**filters)
    emit_json({"items": shown, **list_counts(len(shown), total)})


@command(
    app, PROGRAM["search"], epilog="\b\nExample:\n  dsh-knowledge search 'port 8080' --limit 5"
)
def search(
    ctx: typer.Context,
    text: str | None,
    query: str | None,
    workspace: str | None,
    project: str | None,
    limit: int | None,
) -> None:
    """Literal substring search: {"items": [...], "total", "truncated"}."""
    from dsh_knowledge.cli_results import search_output

    phrase = one_query(text, query, "search")
    repository = repository_of(ctx)
    emit_json(search_output(repository, phrase, workspace=workspace, project=project, limit=limit))


@command(
    app,
    PROGRAM["retrieve"],
    epilog="\b\nExample:\n  dsh-knowledge retrieve 'which port does the API use' --limit 3",
)
def retrieve(
    ctx: typer.Context,
    text: str | None,
    query: str | None,
    workspace: str | None,
    project: str | None,
    limit: int | None,
    prefer: list[str] | None,
    status: str | None,
    ranking: str | None,
) -> None:
    """Ranked retrieval with explanations: {"results": [{"knowledge","score","explanation"}]}."""
    from dsh_knowledge.cli_results import retrieve_output

    phrase = one_query(text, query, "retrieve")
    output = retrieve_output(
        repository_of(ctx),
        phrase,
        workspace=workspace,
        project=project,
        limit=limit,
        prefer=prefer,
        status=status,
        ranking=ranking,
    )
    emit_json(output)

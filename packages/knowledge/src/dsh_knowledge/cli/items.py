"""The item commands: add, get, verify, archive, supersede, update, list, search, retrieve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dsh_common.cli import emit_json
from dsh_knowledge.cli._app import app, repository_of, usage

# The command line's spelling rules live beside the fast path's (no typer there).
from dsh_knowledge.cli_results import filter_workspace, missing, one_query, scope_workspace


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge add --type fact --content 'The API runs on port 8080.' "
    '--evidence \'{"type": "file", "source": "config/app.toml"}\''
)
def add(
    ctx: typer.Context,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            help="Workspace scope; a directory is stored as its canonical path "
            "(default: the git top level of the current directory, else the directory).",
        ),
    ] = None,
    knowledge_type: Annotated[
        str | None, typer.Option("--type", help="fact, decision or lesson.")
    ] = None,
    content: Annotated[str | None, typer.Option("--content", help="The knowledge text.")] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project scope (omit: workspace-wide).")
    ] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option(
            "--evidence",
            help='One evidence object as JSON, repeatable: {"type","source","locator"?,'
            '"timestamp"?,"gitProvenance"?}. timestamp defaults to now.',
        ),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="Git repository of the file evidence: attach gitProvenance (commit and path) "
            "to each file evidence whose source is a clean, tracked file present in HEAD, "
            "and add a provenanceCapture report to the output (default: the workspace, "
            "when it is the top level of a git work tree and file evidence is given).",
        ),
    ] = None,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl",
            help="Add many items in one transaction: one JSON object per line with "
            '"type", "content" and optional "project", "evidence" (- reads stdin).',
        ),
    ] = None,
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


@app.command(epilog="\b\nExample:\n  dsh-knowledge get ID")
def get(
    ctx: typer.Context, item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")]
) -> None:
    """Print one item (error not-found for an unknown id)."""
    emit_json(repository_of(ctx).require(item_id))


def _set_status(ctx: typer.Context, item_ids: list[str], status: str) -> None:
    from dsh_knowledge.review import set_status

    items = set_status(repository_of(ctx), item_ids, status)
    # One id prints the item (as before); several print {"items": [...]}.
    emit_json(items[0] if len(item_ids) == 1 else {"items": items})


@app.command(epilog="\b\nExample:\n  dsh-knowledge verify ID1 ID2")
def verify(
    ctx: typer.Context,
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Item ids.")],
) -> None:
    """Mark candidates verified (all ids are checked before any change); print them."""
    _set_status(ctx, item_ids, "verified")


@app.command(epilog="\b\nExample:\n  dsh-knowledge archive ID")
def archive(
    ctx: typer.Context,
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Item ids.")],
) -> None:
    """Archive items (all ids are checked before any change); print them."""
    _set_status(ctx, item_ids, "archived")


@app.command(epilog="\b\nExample:\n  dsh-knowledge supersede OLD_ID --by NEW_ID")
def supersede(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="The verified item to replace.")],
    by: Annotated[str, typer.Option("--by", help="The verified replacement item id.")],
) -> None:
    """Mark a verified item superseded by a verified item in the same scope; print it."""
    emit_json(repository_of(ctx).supersede(item_id, by))


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge update ID --content 'The API runs on port 9090.'"
)
def update(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")],
    content: Annotated[str | None, typer.Option("--content", help="New knowledge text.")] = None,
    knowledge_type: Annotated[
        str | None, typer.Option("--type", help="New type: fact, decision or lesson.")
    ] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option("--evidence", help="Replace all evidence: one JSON object, repeatable."),
    ] = None,
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


@app.command(name="list", epilog="\b\nExample:\n  dsh-knowledge list --status verified --limit 10")
def list_items(
    ctx: typer.Context,
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    workspace_wide: Annotated[
        bool, typer.Option("--workspace-wide", help="Only items without a project.")
    ] = False,
    knowledge_type: Annotated[str | None, typer.Option("--type", help="Type filter.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Status filter.")] = None,
    origin: Annotated[str | None, typer.Option("--origin", help="explicit or automatic.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N items.")] = None,
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


@app.command(epilog="\b\nExample:\n  dsh-knowledge search 'port 8080' --limit 5")
def search(
    ctx: typer.Context,
    text: Annotated[
        str | None, typer.Argument(metavar="[QUERY]", help="Literal text to find in content.")
    ] = None,
    query: Annotated[str | None, typer.Option("--query", help="The same, as an option.")] = None,
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N items.")] = None,
) -> None:
    """Literal substring search: {"items": [...], "total", "truncated"}."""
    from dsh_knowledge.cli_results import search_output

    phrase = one_query(text, query, "search")
    repository = repository_of(ctx)
    emit_json(search_output(repository, phrase, workspace=workspace, project=project, limit=limit))


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge retrieve 'which port does the API use' --limit 3"
)
def retrieve(
    ctx: typer.Context,
    text: Annotated[
        str | None, typer.Argument(metavar="[QUERY]", help="What you are looking for, in words.")
    ] = None,
    query: Annotated[str | None, typer.Option("--query", help="The same, as an option.")] = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            help="Workspace (default: the git top level of the current directory, else it).",
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project: its items rank first.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N (<= 100).")] = None,
    prefer: Annotated[
        list[str] | None, typer.Option("--prefer", help="Preferred type, repeatable, in order.")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="candidate or verified only.")
    ] = None,
    ranking: Annotated[
        str | None,
        typer.Option(
            "--ranking",
            help="lexical (default) or hybrid: by meaning too, across languages (needs the "
            "[semantic] extra; default $DSH_RANKING).",
        ),
    ] = None,
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

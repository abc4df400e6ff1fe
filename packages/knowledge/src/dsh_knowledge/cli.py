"""``dsh-knowledge``: the command line over the library. Parses, calls, prints JSON.

Every result goes to stdout as JSON; every foreseeable failure prints
``{"error": {"code", "message"}}`` to stderr and exits 1 (dsh_common.cli.run_app).
Library modules are imported inside the commands so that ``--help`` starts fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dsh_common.cli import emit_json, run_app

if TYPE_CHECKING:
    from dsh_knowledge.repository import KnowledgeRepository

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: rendering it with rich costs ~170 ms of imports at every `--help`.
    rich_markup_mode=None,
    help="Local, evidence-backed project knowledge: store, lifecycle, ranked retrieval, "
    "Git freshness and health. Output is JSON.",
)

_state: dict[str, Any] = {}


def default_database_path() -> Path:
    """``$DSH_HOME/knowledge/knowledge.sqlite``; ``~/.dsh`` when DSH_HOME is unset or blank."""
    home = os.environ.get("DSH_HOME", "").strip()
    base = Path(home) if home else Path.home() / ".dsh"
    return base / "knowledge" / "knowledge.sqlite"


@app.callback()
def main_options(
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="SQLite file (default $DSH_HOME/knowledge/knowledge.sqlite, ~/.dsh when unset).",
        ),
    ] = None,
) -> None:
    """Local, evidence-backed project knowledge for coding agents."""
    _state["db"] = db if db is not None else default_database_path()


def _repository() -> KnowledgeRepository:
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.store import KnowledgeStore

    store = KnowledgeStore(_state.get("db") or default_database_path())
    _state["store"] = store
    return KnowledgeRepository(store)


def _close() -> None:
    store = _state.pop("store", None)
    if store is not None:
        store.close()


def _usage(message: str) -> None:
    from dsh_knowledge.errors import ValidationError

    raise ValidationError(message)


@app.command()
def add(
    workspace: Annotated[str, typer.Option("--workspace", help="Workspace scope (required).")],
    knowledge_type: Annotated[str, typer.Option("--type", help="fact, decision or lesson.")],
    content: Annotated[str, typer.Option("--content", help="The knowledge text.")],
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
            "and add a provenanceCapture report to the output.",
        ),
    ] = None,
) -> None:
    """Add a knowledge item (status candidate, origin explicit); print it."""
    from dsh_common.jsonio import loads
    from dsh_knowledge.models import now_timestamp

    records = []
    for raw in evidence or []:
        record = loads(raw, what="--evidence")
        if not isinstance(record, dict):
            _usage("--evidence must be one JSON object.")
        record.setdefault("timestamp", now_timestamp())
        records.append(record)
    report = None
    if repo is not None:
        from dsh_knowledge.provenance import attach_git_provenance

        # Opportunistic: a file that is dirty, untracked or outside HEAD is stored without
        # provenance and named in the report; it never blocks the add.
        records, report = attach_git_provenance(records, repo)
    scope = {"workspace": workspace, "project": project}
    try:
        item = _repository().create(
            type=knowledge_type, content=content, scope=scope, evidence=records
        )
    finally:
        _close()
    emit_json(item if repo is None else {**item, "provenanceCapture": report})


@app.command()
def get(item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")]) -> None:
    """Print one item (error not-found for an unknown id)."""
    try:
        emit_json(_repository().require(item_id))
    finally:
        _close()


@app.command()
def verify(item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")]) -> None:
    """Mark a candidate verified; print the item."""
    try:
        emit_json(_repository().verify(item_id))
    finally:
        _close()


@app.command()
def archive(item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")]) -> None:
    """Archive an item; print it."""
    try:
        emit_json(_repository().archive(item_id))
    finally:
        _close()


@app.command()
def supersede(
    item_id: Annotated[str, typer.Argument(metavar="ID", help="The verified item to replace.")],
    by: Annotated[str, typer.Option("--by", help="The verified replacement item id.")],
) -> None:
    """Mark a verified item superseded by a verified item in the same scope; print it."""
    try:
        emit_json(_repository().supersede(item_id, by))
    finally:
        _close()


@app.command(name="list")
def list_items(
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
    """List items, newest updatedAt first: {"items": [...]}."""
    from dsh_knowledge.repository import UNSET

    if project is not None and workspace_wide:
        _usage("--project and --workspace-wide cannot be used together.")
    try:
        items = _repository().list(
            workspace=workspace,
            project=None if workspace_wide else (project if project is not None else UNSET),
            type=knowledge_type,
            status=status,
            creation_origin=origin,
            limit=limit,
        )
        emit_json({"items": items})
    finally:
        _close()


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Literal text to find in content.")],
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N items.")] = None,
) -> None:
    """Literal substring search: {"items": [...]}."""
    from dsh_knowledge.repository import UNSET

    try:
        items = _repository().search(
            query,
            workspace=workspace,
            project=project if project is not None else UNSET,
            limit=limit,
        )
        emit_json({"items": items})
    finally:
        _close()


@app.command()
def retrieve(
    query: Annotated[str, typer.Argument(help="What you are looking for, in words.")],
    workspace: Annotated[str, typer.Option("--workspace", help="Workspace (required).")],
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
) -> None:
    """Ranked retrieval with explanations: {"results": [{"knowledge","score","explanation"}]}."""
    from dsh_knowledge.retrieval import retrieve_relevant_knowledge

    try:
        results = retrieve_relevant_knowledge(
            _repository(),
            query,
            workspace=workspace,
            project=project,
            limit=limit,
            preferred_types=prefer,
            status=status,
        )
        emit_json({"results": results})
    finally:
        _close()


@app.command()
def freshness(
    item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")],
    repo: Annotated[Path, typer.Option("--repo", help="The Git work tree to compare with.")],
) -> None:
    """Compare an item's Git-backed file evidence with the repository: the freshness report."""
    from dsh_knowledge.freshness import check_freshness

    try:
        item = _repository().require(item_id)
    finally:
        _close()
    emit_json(check_freshness(item, repo))


@app.command()
def health(
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="1 to 16 item ids.")],
    repo: Annotated[Path, typer.Option("--repo", help="The Git work tree to check against.")],
    guidance: Annotated[
        bool, typer.Option("--guidance", help="Add advisory guidance per result.")
    ] = False,
) -> None:
    """Health of 1-16 items of one workspace: {"results": [...]}."""
    from dsh_knowledge.health import check_health

    try:
        repository = _repository()
        items = [repository.require(item_id) for item_id in item_ids]
    finally:
        _close()
    emit_json({"results": check_health(items, repo, include_guidance=guidance)})


def main() -> None:
    """Console-script entry point."""
    from dsh_knowledge import __version__

    sys.exit(run_app(app, prog_name="dsh-knowledge", global_options=("--db",), version=__version__))


if __name__ == "__main__":
    main()

"""The store as a whole: import from another store, and the vectors of hybrid ranking."""

from __future__ import annotations

import typer

from dsh_common.cli import emit_json
from dsh_common.cli.typer_commands import command
from dsh_knowledge.cli._app import app, repository_of
from dsh_knowledge.cli_spec import PROGRAM


@command(
    app,
    PROGRAM["import"],
    epilog="\b\nExamples:\n"
    "  dsh-knowledge --db postgresql://kb.internal/team import --from ~/.dsh/knowledge/"
    "knowledge.sqlite --dry-run\n"
    "  dsh-knowledge --db postgresql://kb.internal/team import --from ~/.dsh/knowledge/"
    "knowledge.sqlite --workspace-map /home/alice/payments=acme/payments",
)
def import_command(
    ctx: typer.Context, source: str, dry_run: bool, workspace_map: list[str] | None
) -> None:
    """Copy every item of another store into this one (ids, evidence, status, supersede
    links, provenance and timestamps kept; ids already here are skipped), in one
    transaction."""
    from dsh_knowledge.transfer import import_store, parse_workspace_map

    mapping = parse_workspace_map(workspace_map or [])
    emit_json(import_store(repository_of(ctx), source, dry_run=dry_run, workspace_map=mapping))


vectors_app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="The stored sentence vectors hybrid ranking (--ranking hybrid) compares queries with.",
    epilog="\b\nExample:\n  dsh-knowledge vectors status",
)
app.add_typer(vectors_app, name="vectors")


@command(
    vectors_app,
    PROGRAM["vectors build"],
    epilog="\b\nExample:\n  dsh-knowledge vectors build   # once, after an import",
)
def vectors_build(ctx: typer.Context) -> None:
    """Encode every item that has no current vector (progress on stderr; needs the
    [semantic] extra): {"items", "encoded", "current", "model"}."""
    from dsh_knowledge.progress import ProgressBar
    from dsh_knowledge.vectors import build_vectors

    bar = ProgressBar("vectors", "items encoded")
    try:
        emit_json(build_vectors(repository_of(ctx).store, progress=bar))
    finally:
        bar.close()


@command(
    vectors_app, PROGRAM["vectors status"], epilog="\b\nExample:\n  dsh-knowledge vectors status"
)
def vectors_status(ctx: typer.Context) -> None:
    """How many candidate and verified items have a current, missing or stale vector:
    {"items", "current", "missing", "stale", "model", "semanticAvailable"}."""
    from dsh_knowledge.vectors import vector_status

    emit_json(vector_status(repository_of(ctx).store))

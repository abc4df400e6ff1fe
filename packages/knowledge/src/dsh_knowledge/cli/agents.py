"""Agent delivery: ``mcp`` and ``hook`` (the launcher routes both before typer loads; they
are here for ``--help`` and ``python -m dsh_knowledge.cli``) and ``setup``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from dsh_common.cli import add_setup_command
from dsh_knowledge.cli._app import CommandStore, app

if TYPE_CHECKING:
    from dsh_common.agent_setup import Integration


@app.command(
    name="mcp", epilog="\b\nExample:\n  dsh-knowledge mcp --db ~/.dsh/knowledge/knowledge.sqlite"
)
def mcp_command(
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="SQLite file or postgresql:// URL (else $DSH_KNOWLEDGE_DB, else default)."
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Default project (else $DSH_KNOWLEDGE_PROJECT).")
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="Session workspace (default: the cwd).")
    ] = None,
    session_id: Annotated[
        str | None,
        typer.Option("--session-id", help="Session evidence id (else $DSH_KNOWLEDGE_SESSION_ID)."),
    ] = None,
) -> NoReturn:
    """Serve the seven knowledge tools over MCP stdio (needs dsh-knowledge[mcp])."""
    from dsh_knowledge.launcher import _mcp

    args = []
    for flag, value in (
        ("--db", db),
        ("--project", project),
        ("--workspace", workspace),
        ("--session-id", session_id),
    ):
        if value is not None:
            args += [flag, value]
    raise typer.Exit(_mcp(args))


@app.command(
    name="hook",
    epilog='\b\nExample:\n  echo \'{"cwd": ".", "prompt": "which port"}\' | '
    "dsh-knowledge hook user-prompt-submit",
)
def hook_command(
    event: Annotated[str, typer.Argument(help="user-prompt-submit or stop")],
    db: Annotated[
        str | None, typer.Option("--db", help="SQLite file or postgresql:// URL.")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    auto_extract: Annotated[
        bool, typer.Option("--auto-extract", help="stop: extract candidates (opt-in).")
    ] = False,
) -> NoReturn:
    """Agent hook: payload JSON on stdin, hookSpecificOutput on stdout; silent on any error."""
    from dsh_knowledge.hooks import main as hook_main

    args = [event, *(["--auto-extract"] if auto_extract else [])]
    for flag, value in (("--db", db), ("--project", project)):
        if value is not None:
            args += [flag, value]
    raise typer.Exit(hook_main(args))


def _knowledge_integration(store: CommandStore) -> Integration:
    from dsh_common.agent_setup import Integration
    from dsh_knowledge.store_location import display_location, has_password, is_default

    # The database the CLI uses right now (--db, else $DSH_KNOWLEDGE_DB, else the default),
    # written as an absolute --db into the server's and the hook's arguments, so the agent
    # reads the store `add` writes whatever directory and environment the host starts in.
    database = store.database
    if has_password(database):
        from dsh_knowledge.errors import ValidationError

        # Agent config files are often committed (project scope) or synced: no secrets there.
        raise ValidationError(
            "setup does not write a password into agent configuration files: keep it in "
            "~/.pgpass (or PGPASSFILE) and give the URL without it: "
            f"{display_location(database)}"
        )
    db_args: tuple[str, ...] = () if is_default(database) else ("--db", database)
    return Integration(
        server="dsh-knowledge",
        program="dsh-knowledge",
        mcp_args=("mcp", *db_args),
        hooks=(("UserPromptSubmit", ("hook", "user-prompt-submit", *db_args)),),
        env_names=("DSH_HOME", "DSH_KNOWLEDGE_PROJECT", "DSH_KNOWLEDGE_WORKSPACE"),
    )


add_setup_command(
    app,
    _knowledge_integration,
    summary="Register the MCP server and the prompt hook in Claude Code or Codex (merging).",
    examples=["dsh-knowledge setup claude-code --dry-run"],
    pass_obj=True,
)

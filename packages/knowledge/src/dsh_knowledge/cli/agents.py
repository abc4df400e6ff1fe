"""Agent delivery: ``mcp`` and ``hook`` (the launcher routes both before typer loads; they
are here for ``--help`` and ``python -m dsh_knowledge.cli``) and ``setup``."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

from dsh_common.cli import add_setup_command
from dsh_common.cli.typer_commands import command
from dsh_knowledge.cli._app import CommandStore, app
from dsh_knowledge.cli_spec import PROGRAM

if TYPE_CHECKING:
    from dsh_common.agent_setup import Integration


@command(
    app,
    PROGRAM["mcp"],
    epilog="\b\nExample:\n  dsh-knowledge mcp --db ~/.dsh/knowledge/knowledge.sqlite",
)
def mcp_command(
    db: str | None, project: str | None, workspace: str | None, session_id: str | None
) -> NoReturn:
    """Serve the seven knowledge tools over MCP stdio (needs dsh-knowledge[mcp])."""
    from dsh_knowledge.launcher import _mcp

    # The server parses the same declared options itself (dsh_knowledge.agent_config).
    values = {"db": db, "project": project, "workspace": workspace, "session_id": session_id}
    raise typer.Exit(_mcp(PROGRAM["mcp"].words(values)))


@command(
    app,
    PROGRAM["hook"],
    epilog='\b\nExample:\n  echo \'{"cwd": ".", "prompt": "which port"}\' | '
    "dsh-knowledge hook user-prompt-submit",
)
def hook_command(event: str, db: str | None, project: str | None, auto_extract: bool) -> NoReturn:
    """Agent hook: payload JSON on stdin, hookSpecificOutput on stdout; silent on any error."""
    from dsh_knowledge.hooks import main as hook_main

    # The hook parses the same declared options itself (dsh_knowledge.hooks).
    values = {"db": db, "project": project, "auto_extract": auto_extract}
    raise typer.Exit(hook_main([event, *PROGRAM["hook"].words(values)]))


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
    # Each command's own --db, as declared (nothing for the default store).
    given = {"db": None if is_default(database) else database}
    return Integration(
        server="dsh-knowledge",
        program="dsh-knowledge",
        mcp_args=("mcp", *PROGRAM["mcp"].words(given)),
        hooks=(
            ("UserPromptSubmit", ("hook", "user-prompt-submit", *PROGRAM["hook"].words(given))),
        ),
        env_names=("DSH_HOME", "DSH_KNOWLEDGE_PROJECT", "DSH_KNOWLEDGE_WORKSPACE"),
    )


add_setup_command(
    app,
    _knowledge_integration,
    summary="Register the MCP server and the prompt hook in Claude Code or Codex (merging).",
    examples=["dsh-knowledge setup claude-code --dry-run"],
    pass_obj=True,
)

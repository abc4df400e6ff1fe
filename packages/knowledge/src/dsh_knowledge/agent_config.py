"""How an agent process (MCP server, hook) finds its store, project, workspace and session.

Database: ``--db``, else ``$DSH_KNOWLEDGE_DB``, else ``$DSH_HOME/knowledge/knowledge.sqlite``
(``~/.dsh`` when DSH_HOME is unset), resolved by :mod:`dsh_knowledge.store_location` as every
other front end resolves it. Project: ``--project``, else ``$DSH_KNOWLEDGE_PROJECT``,
else none (workspace-wide knowledge only). Workspace: the hook payload's ``cwd``, or the MCP
server's working directory unless ``--workspace`` is given. Session id (MCP only; the hook
reads it from the payload): ``--session-id``, else ``$DSH_KNOWLEDGE_SESSION_ID``.

This module imports neither typer nor the store: the hook path must start fast.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.store_location import DB_ENV, default_database_path, resolve_database

__all__ = [
    "DB_ENV",
    "AgentOptions",
    "default_database_path",
    "parse_agent_options",
    "resolve_project",
]

PROJECT_ENV = "DSH_KNOWLEDGE_PROJECT"
SESSION_ENV = "DSH_KNOWLEDGE_SESSION_ID"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value if value.strip() else None


def resolve_project(explicit: str | None) -> str | None:
    if explicit is not None and explicit.strip():
        return explicit
    return _env(PROJECT_ENV)


@dataclass(frozen=True)
class AgentOptions:
    db: str  # the resolved database (see dsh_knowledge.store_location)
    project: str | None
    workspace: str | None
    session_id: str | None


def parse_agent_options(
    argv: Sequence[str], *, allowed: Sequence[str] | None = None
) -> AgentOptions:
    """``--db X --project P --workspace W --session-id S`` (also ``--name=value``).

    ``allowed``: the option names to accept, by default those declared for ``mcp``
    (:mod:`dsh_knowledge.cli_spec`); the hook passes its own.
    """
    if allowed is None:
        from dsh_knowledge.cli_spec import PROGRAM  # noqa: PLC0415 - the hook passes its own

        allowed = PROGRAM["mcp"].value_names
    values: dict[str, str] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, _, inline = arg.partition("=")
        if name not in allowed:
            raise ValidationError(
                f"Unknown option {arg.split('=')[0][:40]}; expected {', '.join(allowed)}."
            )
        if inline or "=" in arg:
            value = inline
        else:
            index += 1
            if index >= len(argv):
                raise ValidationError(f"Option {name} needs a value.")
            value = argv[index]
        if not value.strip():
            raise ValidationError(f"Option {name} must not be empty.")
        values[name] = value
        index += 1
    return AgentOptions(
        db=resolve_database(values.get("--db")),
        project=resolve_project(values.get("--project")),
        workspace=values.get("--workspace"),
        session_id=values.get("--session-id") or _env(SESSION_ENV),
    )

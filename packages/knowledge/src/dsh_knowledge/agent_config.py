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
from typing import TYPE_CHECKING

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.store_location import DB_ENV, default_database_path, resolve_database

if TYPE_CHECKING:
    from dsh_common.cli_spec import Command

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
    auto_extract: bool = False  # the hook's --auto-extract (the MCP server has none)


def parse_agent_options(argv: Sequence[str], command: Command | None = None) -> AgentOptions:
    """``--db X --project P --workspace W --session-id S`` (also ``--name=value``).

    ``command``: the declaration whose options to accept (:mod:`dsh_knowledge.cli_spec`),
    by default ``mcp``'s; the hook passes its own. Stricter than the Typer parser on
    purpose: an unknown option, a missing or blank value is a ``ValidationError``.
    """
    if command is None:
        from dsh_knowledge.cli_spec import PROGRAM  # noqa: PLC0415 - the hook passes its own

        command = PROGRAM["mcp"]
    options = {option.name: option for option in command.options}
    values: dict[str, str | bool] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, equals, inline = arg.partition("=")
        option = options.get(name)
        if option is None:
            raise ValidationError(
                f"Unknown option {arg.split('=')[0][:40]}; expected {', '.join(options)}."
            )
        if not option.takes_value:
            if equals:
                raise ValidationError(f"Option {name} takes no value.")
            values[option.dest] = True
            index += 1
            continue
        if equals:
            value = inline
        else:
            index += 1
            if index >= len(argv):
                raise ValidationError(f"Option {name} needs a value.")
            value = argv[index]
        if not value.strip():
            raise ValidationError(f"Option {name} must not be empty.")
        values[option.dest] = value
        index += 1
    return AgentOptions(
        db=resolve_database(_text(values.get("db"))),
        project=resolve_project(_text(values.get("project"))),
        workspace=_text(values.get("workspace")),
        session_id=_text(values.get("session_id")) or _env(SESSION_ENV),
        auto_extract=values.get("auto_extract") is True,
    )


def _text(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None

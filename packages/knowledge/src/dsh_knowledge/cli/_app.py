"""The Typer app, its global ``--db`` option and the store a command works on.

What every command takes is declared in :mod:`dsh_knowledge.cli_spec`; the command modules
build their parameters from it (:func:`dsh_common.cli.typer_commands.command`).

The command modules register their commands on :data:`app`; a command that reads or writes
knowledge takes the Typer context and asks :func:`repository_of` for the store, which the
callback opened for it (on first use) and closes when the command ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

from dsh_common.cli.typer_commands import callback
from dsh_knowledge.cli_spec import PROGRAM

if TYPE_CHECKING:
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.store import KnowledgeStore

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: rendering it with rich costs ~170 ms of imports at every `--help`.
    rich_markup_mode=None,
    help="Local, evidence-backed project knowledge: store, lifecycle, ranked retrieval, "
    "Git freshness and health. Output is JSON.",
)


class CommandStore:
    """The knowledge store of one command: the database ``--db`` names (else the default),
    opened when the command first asks for it and closed when the command ends."""

    def __init__(self, database: str) -> None:
        self.database = database
        self._store: KnowledgeStore | None = None

    def repository(self) -> KnowledgeRepository:
        from dsh_knowledge.repository import KnowledgeRepository
        from dsh_knowledge.store import KnowledgeStore

        if self._store is None:
            self._store = KnowledgeStore(self.database)
        return KnowledgeRepository(self._store)

    def __enter__(self) -> CommandStore:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


@callback(app, PROGRAM)
def main_options(ctx: typer.Context, db: str | None) -> None:
    """Local, evidence-backed project knowledge for coding agents."""
    from dsh_knowledge.store_location import resolve_database

    # Resolved here, once, by the resolver the hook, the MCP server and setup use. The one
    # place the store is opened (on a command's first use) and closed (when it ends).
    ctx.obj = ctx.with_resource(CommandStore(resolve_database(db)))


def repository_of(ctx: typer.Context) -> KnowledgeRepository:
    """The command's repository (see :class:`CommandStore`)."""
    store: CommandStore = ctx.obj
    return store.repository()


def usage(message: str) -> NoReturn:
    """Refuse a combination of options (``invalid-input``)."""
    from dsh_knowledge.errors import ValidationError

    raise ValidationError(message)

"""``dsh-knowledge``: the command line over the library. Parses, calls, prints JSON.

Every result goes to stdout as JSON; every foreseeable failure prints
``{"error": {"code", "message"}}`` to stderr and exits 1 (dsh_common.cli.run_app).
Library modules are imported inside the commands so that ``--help`` starts fast. This
package is the only part of dsh-knowledge that imports typer: the app, ``--db`` and the
command's store in :mod:`._app`; the commands by job in :mod:`.items`, :mod:`.curation`,
:mod:`.store_admin` and :mod:`.agents`. What each command takes (and which options are
paths, or may come before the command) is declared in :mod:`dsh_knowledge.cli_spec`.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

from dsh_common.cli import run_app
from dsh_knowledge.cli._app import app
from dsh_knowledge.cli_spec import PROGRAM

__all__ = ["app", "main"]

# Each module registers its commands on `app` when imported: in this order, the order of
# `dsh-knowledge --help`.
for _module in ("items", "curation", "store_admin", "agents"):
    importlib.import_module(f"{__name__}.{_module}")


def _undecodable_url_with_password(arguments: list[str]) -> str | None:
    """The refusal of an undecodable URL holding a password, shown without the password.

    (The general undecodable-argument refusal echoes the value; a password must not be.)
    """
    from dsh_common.cli import is_undecodable
    from dsh_knowledge._storage_errors import printable
    from dsh_knowledge.store_location import has_password, redact_url

    previous = ""
    for argument in arguments:
        name, equals, value = argument.partition("=")
        option, shown = (name, value) if equals and name.startswith("--") else (previous, argument)
        previous = argument
        if is_undecodable(argument) and has_password(shown):
            where = f"{option} " if option.startswith("--") else ""
            return (
                f"{where}'{printable(redact_url(shown))}' is not valid UTF-8; nothing was changed."
            )
    return None


def main() -> NoReturn:
    """Console-script entry point."""
    from dsh_knowledge import __version__

    refused = _undecodable_url_with_password(sys.argv[1:])
    if refused is not None:
        from dsh_common.cli import emit_error

        sys.exit(emit_error("invalid-path", refused))
    # Undecodable arguments are refused before anything is opened.
    sys.exit(
        run_app(
            app,
            # hook and mcp pass their own --db on to the hook or the MCP server.
            program=PROGRAM,
            version=__version__,
        )
    )

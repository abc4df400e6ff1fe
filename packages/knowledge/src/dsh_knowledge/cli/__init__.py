"""``dsh-knowledge``: the command line over the library. Parses, calls, prints JSON.

Every result goes to stdout as JSON; every foreseeable failure prints
``{"error": {"code", "message"}}`` to stderr and exits 1 (dsh_common.cli.run_app).
Library modules are imported inside the commands so that ``--help`` starts fast. This
package is the only part of dsh-knowledge that imports typer: the app, ``--db`` and the
command's store in :mod:`._app`; the commands by job in :mod:`.items`, :mod:`.curation`,
:mod:`.store_admin` and :mod:`.agents`.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

from dsh_common.cli import run_app
from dsh_knowledge.cli._app import app

__all__ = ["COMMAND_OPTIONS", "PATH_OPTIONS", "app", "main"]

# Each module registers its commands on `app` when imported: in this order, the order of
# `dsh-knowledge --help`.
for _module in ("items", "curation", "store_admin", "agents"):
    importlib.import_module(f"{__name__}.{_module}")

#: Options whose value is a path: undecodable bytes there are invalid-path.
PATH_OPTIONS = ("--db", "--repo", "--workspace", "--from")

#: The scope options most commands define; written before the subcommand they still work.
COMMAND_OPTIONS = ("--workspace", "--project")


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
            prog_name="dsh-knowledge",
            path_options=PATH_OPTIONS,
            global_options=("--db",),
            # These pass their own --db on to the hook or the MCP server.
            local_options={"hook": ("--db",), "mcp": ("--db",)},
            # Defined by each command, also accepted before it: --workspace W search q.
            command_options=COMMAND_OPTIONS,
            version=__version__,
        )
    )

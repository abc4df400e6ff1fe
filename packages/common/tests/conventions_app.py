"""A small Typer app using every convention ``dsh_common.cli.run_app`` switches on.

``--root`` before or after the command, ``--version``, bare-command help, ``--dry-run``
taking a word or standing alone. ``main()`` is what a product's console script runs;
``python conventions_app.py ARGS`` runs it as a real process (for a real terminal).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from dsh_common.cli import emit_json, run_app

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="A demo tool.",
)
state: dict[str, Any] = {}


@app.callback()
def options(root: Annotated[str | None, typer.Option("--root")] = None) -> None:
    state["root"] = root


@app.command()
def status(limit: Annotated[int, typer.Option("--limit")] = 2) -> None:
    """Show the state."""
    items = [{"id": f"r{i}", "title": f"record {i}"} for i in range(5)]
    emit_json({"root": state["root"], "items": items[:limit], "total": 5, "ok": True})


@app.command()
def migrate(dry_run: Annotated[str | None, typer.Option("--dry-run")] = None) -> None:
    """Take --dry-run true|false as a word."""
    emit_json({"dryRun": dry_run, "root": state["root"]})


@app.command()
def other(dry_run: Annotated[bool, typer.Option("--dry-run")] = False) -> None:
    """A real boolean flag of the same name, left alone."""
    emit_json({"dryRun": dry_run})


def main() -> None:
    sys.exit(
        run_app(
            app,
            prog_name="demo",
            global_options=("--root",),
            version="1.2.3",
            flag_values={"migrate": {"--dry-run": "--apply"}},
        )
    )


if __name__ == "__main__":
    main()

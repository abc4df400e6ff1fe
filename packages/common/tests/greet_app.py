"""A small Typer app on ``dsh_common.cli.run_app``, for the JSON convention's tests.

``main()`` is what a product's console script runs; ``python greet_app.py ARGS`` runs it as
a real process (for what only a process shows: argv bytes that are not UTF-8). A first
argument ``--envelope`` switches to a product's own error envelope.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from dsh_common.cli import emit_json, run_app
from dsh_common.errors import DshError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def greet(
    name: Annotated[str, typer.Option("--name")],
    times: Annotated[int, typer.Option(min=1, max=3)] = 1,
) -> None:
    """Say hello."""
    if name == "bad":
        raise DshError("bad name", code="bad-name")
    if name == "crash":
        raise RuntimeError("boom")
    emit_json({"hello": name, "times": times})


@app.command()
def other() -> None:
    """Another command."""


@app.command()
def touch(path: Annotated[str, typer.Option("--path")]) -> None:
    """Create a file (to show that a refused argument changes nothing)."""
    open(path, "w").close()
    emit_json({"created": path})


@app.command()
def listing(directory: Annotated[str, typer.Option("--dir")]) -> None:
    """Fail naming the first file of a directory, as a library error quoting a name."""
    name = sorted(os.listdir(directory))[0]
    raise DshError(f"cannot use {name}", code="bad-name")


def envelope_error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code}}


def main() -> None:
    envelope = len(sys.argv) > 1 and sys.argv[1] == "--envelope"
    args = sys.argv[2:] if envelope else sys.argv[1:]
    kwargs: dict[str, Any] = {"render_error": envelope_error} if envelope else {}
    sys.exit(run_app(app, args=args, prog_name="demo", **kwargs))


if __name__ == "__main__":
    main()

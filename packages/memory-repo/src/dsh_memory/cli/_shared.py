"""What both command lines share: the ``--root`` option and how an envelope is printed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dsh_common.cli import emit_json

RootOption = Annotated[
    str | None,
    typer.Option(
        "--root",
        help="Memory root (default $DSH_MEMORY_ROOT, $DSH_HOME/storages/memory,"
        " ~/.dsh/storages/memory).",
    ),
]


def emit(service: Any, envelope: dict[str, Any]) -> None:
    """Print ``envelope``: a success to stdout; a failure to stderr, then exit 1."""
    if envelope.get("ok"):
        emit_json(envelope)
        return
    from dsh_memory.cli_output import emit_envelope

    # Printed by the module the fast path uses too (option names, the init hint).
    if emit_envelope(service, envelope):
        raise typer.Exit(1)

"""Console entry point of ``dsh-memory``: the frequent read commands start without typer.

``hook <event>`` goes straight to :mod:`dsh_memory.hooks` (agent hosts run it at every
session start). ``status``, ``search`` and ``context`` with plain options run here
(:mod:`dsh_common.fastpath`), ~100 ms sooner than through the parser, and so do ``pull`` and
``push`` (an up-to-date pull is mostly that start-up); everything else, and anything
unusual, is the Typer command line in :mod:`dsh_memory.cli.memory`. Both print through
:mod:`dsh_memory.cli_output`, so the bytes are the same either way.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn


def _run(values: dict[str, Any], command: str) -> int:
    from dsh_common.cli import one_query  # noqa: PLC0415 - lazy: start-up time
    from dsh_memory import cli_output  # noqa: PLC0415
    from dsh_memory.service import MemoryService  # noqa: PLC0415

    # The values of the declared parameters (dsh_memory.cli_spec), as the Typer command
    # receives them.
    if command in ("status", "pull", "push"):
        service = MemoryService(values["root"])
        method = {"status": service.status, "pull": service.pull, "push": service.push}[command]
        return cli_output.emit_envelope(service, method())
    query = one_query(values["text"], values["query"])
    # As the Typer command line builds it: hybrid ranking shows a progress bar for many.
    service = MemoryService(values["root"], progress=cli_output.vector_progress())
    method = service.search if command == "search" else service.context
    envelope = method(
        query,
        cli_output.integer_or_raw(values["limit"]),
        values["scope"],
        values["ranking"],
    )
    return cli_output.emit_envelope(service, envelope)


def _fast(argv: list[str]) -> int | None:
    from dsh_common.fastpath import run_fast  # noqa: PLC0415
    from dsh_memory.cli_spec import PROGRAM  # noqa: PLC0415
    from dsh_memory.errors import render_error  # noqa: PLC0415

    runners = {
        name: (lambda values, name=name: _run(values, name))
        for name in ("status", "pull", "push", "search", "context")
    }
    return run_fast(argv, PROGRAM, runners, render_error=render_error)


def main() -> NoReturn:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        # Agent hooks run at every session start and prompt: straight to the hook module,
        # before the fast path's or the CLI's imports.
        from dsh_memory.hooks import main as hook_main  # noqa: PLC0415

        sys.exit(hook_main(argv[1:]))
    from dsh_common.quick_exit import answer_or_continue  # noqa: PLC0415

    answer_or_continue(lambda: _fast(argv))
    from dsh_memory.cli.memory import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


if __name__ == "__main__":
    main()

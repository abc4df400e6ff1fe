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

    if command in ("status", "pull", "push"):
        service = MemoryService(values.get("--root"))
        method = {"status": service.status, "pull": service.pull, "push": service.push}[command]
        return cli_output.emit_envelope(service, method())
    query = one_query(values.get("query"), values.get("--query"))
    # As the Typer command line builds it: hybrid ranking shows a progress bar for many.
    service = MemoryService(values.get("--root"), progress=cli_output.vector_progress())
    method = service.search if command == "search" else service.context
    envelope = method(
        query,
        cli_output.integer_or_raw(values.get("--limit")),
        values.get("--scope"),
        values.get("--ranking"),
    )
    return cli_output.emit_envelope(service, envelope)


def _fast(argv: list[str]) -> int | None:
    from dsh_common.fastpath import FastCommand, run_fast  # noqa: PLC0415
    from dsh_memory.errors import render_error  # noqa: PLC0415

    reads = {"--query": "str", "--limit": "str", "--scope": "str", "--ranking": "str"}
    commands = {
        "status": FastCommand({}, lambda v: _run(v, "status")),
        "pull": FastCommand({}, lambda v: _run(v, "pull")),
        "push": FastCommand({}, lambda v: _run(v, "push")),
        "search": FastCommand(reads, lambda v: _run(v, "search"), "query"),
        "context": FastCommand(reads, lambda v: _run(v, "context"), "query"),
    }
    return run_fast(argv, commands, global_options=("--root",), render_error=render_error)


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

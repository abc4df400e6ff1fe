"""Console entry point of ``dsh-compound``: hooks and the frequent reads start without typer.

``hook <event>`` goes straight to :mod:`dsh_compound.hooks` (agent hosts run it at every
session start and prompt). ``recall`` with plain options runs here
(:mod:`dsh_common.fastpath`), ~100 ms sooner than through the parser; everything else, and
anything unusual, is the Typer command line in :mod:`dsh_compound.cli`, with identical
output either way.
"""

from __future__ import annotations

import gc
import sys
from typing import Any


def _recall(values: dict[str, Any]) -> int:
    from dsh_common.cli import emit_json  # noqa: PLC0415 - lazy: start-up time
    from dsh_common.locate import default_workspace  # noqa: PLC0415
    from dsh_compound.draft_extras import recall_result  # noqa: PLC0415

    workspace = values.get("--workspace")
    emit_json(
        recall_result(
            workspace if workspace is not None else default_workspace(),
            values.get("query"),
            values.get("--query"),
            values.get("--limit", "5"),
        )
    )
    return 0


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        # Agent hooks run at every session start and prompt: straight to the hook module,
        # before the fast path's or the CLI's imports.
        from dsh_compound.hooks import main as hook_main  # noqa: PLC0415

        sys.exit(hook_main(argv[1:]))
    gc.disable()  # see dsh_common.quick_exit: a short read needs no cyclic collector
    from dsh_common.fastpath import FastCommand, run_fast  # noqa: PLC0415

    commands = {
        "recall": FastCommand(
            {"--workspace": "str", "--query": "str", "--limit": "str"}, _recall, "query"
        )
    }
    code = run_fast(sys.argv[1:], commands)
    if code is not None:
        from dsh_common.quick_exit import exit_now  # noqa: PLC0415

        exit_now(code)  # answered: skip the interpreter's ~8 ms teardown
    gc.enable()  # the parser's commands may run long (sync, clear): collect as usual
    from dsh_compound.cli import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


if __name__ == "__main__":
    main()

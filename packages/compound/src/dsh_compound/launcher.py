"""Console entry point of ``dsh-compound``: hooks and the frequent reads start without typer.

``hook <event>`` goes straight to :mod:`dsh_compound.hooks` (agent hosts run it at every
session start and prompt). ``recall`` with plain options runs here
(:mod:`dsh_common.fastpath`), ~100 ms sooner than through the parser; everything else, and
anything unusual, is the Typer command line in :mod:`dsh_compound.cli`, with identical
output either way.
"""

from __future__ import annotations

import sys

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _recall(values: dict[str, Any]) -> int:
    from dsh_common.cli import emit_json  # noqa: PLC0415 - lazy: start-up time
    from dsh_compound.draft_extras import recall_result  # noqa: PLC0415

    # The values of the declared parameters, as the Typer command receives them.
    emit_json(
        recall_result(
            values["workspace"],
            values["text"],
            values["query"],
            values["limit"],
            values["ranking"],
        )
    )
    return 0


def _fast(argv: list[str]) -> int | None:
    from dsh_common.fastpath import run_fast  # noqa: PLC0415
    from dsh_compound.cli_spec import PROGRAM  # noqa: PLC0415

    return run_fast(argv, PROGRAM, {"recall": _recall})


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        # Agent hooks run at every session start and prompt: straight to the hook module,
        # before the fast path's or the CLI's imports.
        from dsh_compound.hooks import main as hook_main  # noqa: PLC0415

        sys.exit(hook_main(argv[1:]))
    from dsh_common.quick_exit import answer_or_continue  # noqa: PLC0415

    answer_or_continue(lambda: _fast(argv))
    from dsh_compound.cli import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


if __name__ == "__main__":
    main()

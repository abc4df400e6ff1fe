"""The ``dsh-memory`` console script: hooks start without typer, the rest goes to the CLI.

An agent host runs ``dsh-memory hook <event>`` at every session start and every prompt;
importing typer alone costs more than the whole hook should take, so ``hook`` is dispatched
here, before :mod:`dsh_memory.cli` is imported.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point."""
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from dsh_memory.hooks import main as hook_main  # noqa: PLC0415

        sys.exit(hook_main(argv[1:]))
    from dsh_memory.cli import main as cli_main  # noqa: PLC0415

    cli_main()


if __name__ == "__main__":
    main()

"""Console entry point of ``dsh-knowledge``: route agent commands before typer loads.

``hook <event>`` runs before every agent prompt, so it goes straight to
:mod:`dsh_knowledge.hooks` (no typer, no MCP SDK: ~100 ms saved per prompt); ``mcp`` goes to
:mod:`dsh_knowledge.mcp_server`. Everything else is the typer CLI in :mod:`dsh_knowledge.cli`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and "--help" not in argv:
        from dsh_knowledge.hooks import main as hook_main  # noqa: PLC0415 - lazy: start-up time

        sys.exit(hook_main(argv[1:]))
    if argv[:1] == ["mcp"] and "--help" not in argv:
        sys.exit(_mcp(argv[1:]))
    from dsh_knowledge.cli import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


def _mcp(argv: list[str]) -> int:
    try:
        from dsh_knowledge.mcp_server import main as mcp_main  # noqa: PLC0415 - optional extra
    except ImportError:
        from dsh_common.cli import emit_error  # noqa: PLC0415 - only on this failure

        return emit_error(
            "mcp-unavailable",
            "The MCP server needs the optional extra: pip install 'dsh-knowledge[mcp]'.",
        )
    return mcp_main(argv)


if __name__ == "__main__":
    main()

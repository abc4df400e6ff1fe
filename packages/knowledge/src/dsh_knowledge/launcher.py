"""Console entry point of ``dsh-knowledge``: route agent commands before typer loads.

``hook <event>`` runs before every agent prompt, so it goes straight to
:mod:`dsh_knowledge.hooks` (no typer, no MCP SDK: ~100 ms saved per prompt); ``mcp`` goes to
:mod:`dsh_knowledge.mcp_server`. ``search`` and ``retrieve`` with plain options run here
too (:mod:`dsh_common.fastpath`), printing through :mod:`dsh_knowledge.cli_results` the same
bytes the parser path prints. Everything else, and anything unusual, is the typer CLI in
:mod:`dsh_knowledge.cli`.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"] and "--help" not in argv:
        from dsh_knowledge.hooks import main as hook_main  # noqa: PLC0415 - lazy: start-up time

        sys.exit(hook_main(argv[1:]))
    if argv[:1] == ["mcp"] and "--help" not in argv:
        sys.exit(_mcp(argv[1:]))
    from dsh_common.quick_exit import answer_or_continue  # noqa: PLC0415

    answer_or_continue(lambda: _fast(argv))
    from dsh_knowledge.cli import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


def _mcp(argv: list[str]) -> int:
    from dsh_common.mcp_stdio import McpUnavailableError, import_server  # noqa: PLC0415

    try:
        server = import_server("dsh_knowledge.mcp_server", "dsh-knowledge")
    except McpUnavailableError as exc:
        from dsh_common.cli import emit_error  # noqa: PLC0415 - only on this failure

        return emit_error(exc.code, exc.message)
    code: int = server.main(argv)
    return code


def _fast(argv: list[str]) -> int | None:
    from dsh_common.fastpath import FastCommand, run_fast  # noqa: PLC0415

    common = {"--query": "str", "--workspace": "str", "--project": "str", "--limit": "int"}
    commands = {
        "search": FastCommand(common, lambda v: _run(v, "search"), "query"),
        "retrieve": FastCommand(
            {**common, "--status": "str", "--ranking": "str"},
            lambda v: _run(v, "retrieve"),
            "query",
        ),
    }
    # The same rewrites as the parser (dsh_knowledge.cli.COMMAND_OPTIONS, not imported:
    # that package loads typer).
    return run_fast(
        argv, commands, global_options=("--db",), command_options=("--workspace", "--project")
    )


def _run(values: dict[str, Any], command: str) -> int:
    from dsh_common.cli import emit_json  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge import cli_results  # noqa: PLC0415
    from dsh_knowledge.repository import KnowledgeRepository  # noqa: PLC0415
    from dsh_knowledge.store import KnowledgeStore  # noqa: PLC0415
    from dsh_knowledge.store_location import resolve_database  # noqa: PLC0415

    phrase = cli_results.one_query(values.get("query"), values.get("--query"), command)
    with KnowledgeStore(resolve_database(values.get("--db"))) as store:
        repository = KnowledgeRepository(store)
        if command == "search":
            output = cli_results.search_output(
                repository,
                phrase,
                workspace=values.get("--workspace"),
                project=values.get("--project"),
                limit=values.get("--limit"),
            )
        else:
            output = cli_results.retrieve_output(
                repository,
                phrase,
                workspace=values.get("--workspace"),
                project=values.get("--project"),
                limit=values.get("--limit"),
                prefer=None,
                status=values.get("--status"),
                ranking=values.get("--ranking"),
            )
    emit_json(output)
    return 0


if __name__ == "__main__":
    main()

"""Console entry point of ``dsh-knowledge``: the frequent read commands start without typer.

``search`` and ``retrieve`` with plain options run here (:mod:`dsh_common.fastpath`),
~100 ms sooner than through the parser; everything else, and anything unusual, is the
Typer command line in :mod:`dsh_knowledge.cli`. Both print through
:mod:`dsh_knowledge.cli_results`, so the output is the same bytes either way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def _database(values: dict[str, Any]) -> Path:
    given = values.get("--db")
    if given is not None:
        return Path(given)
    # The same default as dsh_knowledge.cli.default_database_path (which imports typer).
    home = os.environ.get("DSH_HOME", "").strip()
    base = Path(home) if home else Path.home() / ".dsh"
    return base / "knowledge" / "knowledge.sqlite"


def _run(values: dict[str, Any], command: str) -> int:
    from dsh_common.cli import emit_json  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge import cli_results  # noqa: PLC0415
    from dsh_knowledge.repository import KnowledgeRepository  # noqa: PLC0415
    from dsh_knowledge.store import KnowledgeStore  # noqa: PLC0415

    phrase = cli_results.one_query(values.get("query"), values.get("--query"), command)
    store = KnowledgeStore(_database(values))
    try:
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
            )
    finally:
        store.close()
    emit_json(output)
    return 0


def main() -> None:
    """Console-script entry point."""
    from dsh_common.fastpath import FastCommand, run_fast  # noqa: PLC0415

    common = {"--query": "str", "--workspace": "str", "--project": "str", "--limit": "int"}
    commands = {
        "search": FastCommand(common, lambda v: _run(v, "search"), "query"),
        "retrieve": FastCommand(
            {**common, "--status": "str"}, lambda v: _run(v, "retrieve"), "query"
        ),
    }
    code = run_fast(sys.argv[1:], commands, global_options=("--db",))
    if code is not None:
        sys.exit(code)
    from dsh_knowledge.cli import main as cli_main  # noqa: PLC0415 - lazy: start-up time

    cli_main()


if __name__ == "__main__":
    main()

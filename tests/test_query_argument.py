"""``QUERY`` or ``--query``: the rule every search-like command shares, in each CLI's words.

Run through the console script (the launcher's fast path, a process) and through the
Typer command line in process (the parser): one implementation, the same bytes either way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dsh_test_support import commands, in_process

TWICE = "give the query once: positionally or as --query, not both"
CASES = [
    ("dsh-compound", ["recall", "a", "--query", "b"], TWICE),
    (
        "dsh-compound",
        ["recall"],
        "a query is required: dsh-compound recall QUERY (or --query QUERY)",
    ),
    (
        "dsh-knowledge",
        ["search", "a", "--query", "b"],
        "Give the query once: positionally or as --query, not both.",
    ),
    (
        "dsh-knowledge",
        ["retrieve"],
        "A query is required: dsh-knowledge retrieve QUERY (or --query QUERY).",
    ),
    ("dsh-memory", ["search", "a", "--query", "b"], TWICE),
    ("dsh-memory", ["context", "a", "--query", "b"], TWICE),
]


@pytest.mark.parametrize(("program", "args", "message"), CASES)
def test_the_query_is_given_once(
    program: str, args: list[str], message: str, tmp_path: Path
) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("DSH_HOME", None)
    outputs = set()
    for run in (commands.run, in_process.run):
        done = run(program, *args, env=env, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (1, "")
        error = json.loads(done.stderr)
        assert error["error"] == {"code": "invalid-arguments", "message": message}
        assert ("ok" in error) == (program == "dsh-memory")  # dsh-memory's own envelope
        outputs.add(done.stderr)
    assert len(outputs) == 1
    assert list(tmp_path.iterdir()) == []  # refused before any store was opened

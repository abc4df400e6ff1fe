"""``QUERY`` or ``--query``: the rule every search-like command shares, in each CLI's words.

Run as real processes through the console script (the launcher's fast path) and through
``python -m dsh_<pkg>.cli`` (the parser): one implementation, the same bytes either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
TWICE = "give the query once: positionally or as --query, not both"
CASES = [
    ("dsh-compound", ["recall", "a", "--query", "b"], TWICE),
    ("dsh-compound", ["recall"],
     "a query is required: dsh-compound recall QUERY (or --query QUERY)"),
    ("dsh-knowledge", ["search", "a", "--query", "b"],
     "Give the query once: positionally or as --query, not both."),
    ("dsh-knowledge", ["retrieve"],
     "A query is required: dsh-knowledge retrieve QUERY (or --query QUERY)."),
    ("dsh-memory", ["search", "a", "--query", "b"], TWICE),
    ("dsh-memory", ["context", "a", "--query", "b"], TWICE),
]  # fmt: skip


@pytest.mark.parametrize(("program", "args", "message"), CASES)
def test_the_query_is_given_once(
    program: str, args: list[str], message: str, tmp_path: Path
) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("DSH_HOME", None)
    module = program.replace("-", "_") + ".cli"
    outputs = set()
    for command in ([str(BIN / program)], [sys.executable, "-m", module]):
        done = subprocess.run(
            [*command, *args], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (1, "")
        error = json.loads(done.stderr)
        assert error["error"] == {"code": "invalid-arguments", "message": message}
        assert ("ok" in error) == (program == "dsh-memory")  # dsh-memory's own envelope
        outputs.add(done.stderr)
    assert len(outputs) == 1
    assert list(tmp_path.iterdir()) == []  # refused before any store was opened

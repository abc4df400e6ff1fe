"""One workspace rule for every front end, checked from a sub-project of a monorepo.

The repository's top level holds ``.git``; ``services/api`` has its own lesson corpus;
everything runs from ``services/api/src``. The full command line, its fast path, both
hooks and the MCP server must all find the sub-project's lesson: each looks in the nearest
corpus, never only at the git top level (which has none).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from dsh_test_support import commands

from dsh_compound.project_root import find_workspace


@pytest.fixture
def monorepo(tmp_path: Path, write_record: Callable[..., Path]) -> Path:
    top = tmp_path / "mono"
    (top / ".git").mkdir(parents=True)
    api = top / "services" / "api"
    (api / "src").mkdir(parents=True)
    (api / "tests").mkdir()
    (api / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
    (api / "tests" / "login.test.js").write_text("test('login', () => {});\n")
    write_record(api, id="api-login-timeout", title="API login times out", tags=["login"])
    (api / "src" / "login.js").write_text("changed\n")  # so session-start has a line
    return top


def dsh_compound(*args: str, cwd: Path, stdin: str = "") -> str:
    """The console script's stdout, checking success (every front end is a process here)."""
    done = commands.run("dsh-compound", *args, cwd=cwd, input=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_rule(tmp_path: Path, monorepo: Path) -> None:
    api = monorepo / "services" / "api"
    assert find_workspace(api / "src") == api.resolve()  # the nearest corpus
    (monorepo / "services" / "web").mkdir()
    assert find_workspace(monorepo / "services" / "web") == monorepo.resolve()  # git top
    outside = tmp_path / "plain" / "deep"
    outside.mkdir(parents=True)
    assert find_workspace(outside) == outside.resolve()  # no repository: the directory
    # A corpus above the git top level belongs to another project.
    nested = tmp_path / "plain" / "inner"
    (nested / ".git").mkdir(parents=True)
    (tmp_path / "plain" / "docs" / "solutions" / "dsh-compound").mkdir(parents=True)
    assert find_workspace(nested) == nested.resolve()
    # Outside any repository, a corpus above is found, as git finds .git.
    assert find_workspace(outside) == (tmp_path / "plain").resolve()


def test_every_front_end_finds_the_sub_projects_lesson(monorepo: Path) -> None:
    src = monorepo / "services" / "api" / "src"
    fast = json.loads(dsh_compound("recall", "login", cwd=src))
    parser = json.loads(dsh_compound("recall", "--", "login", cwd=src))  # "--": the parser
    assert [hit["id"] for hit in fast["results"]] == ["api-login-timeout"]
    assert parser == fast
    check = json.loads(dsh_compound("check", cwd=src))
    assert [item["id"] for item in check["needsReview"]] == ["api-login-timeout"]
    payload = json.dumps({"cwd": str(src), "prompt": "login is slow"})
    prompt = json.loads(dsh_compound("hook", "user-prompt-submit", cwd=src, stdin=payload))
    assert "id: api-login-timeout" in prompt["hookSpecificOutput"]["additionalContext"]
    start = json.loads(dsh_compound("hook", "session-start", cwd=src, stdin=payload))
    assert "- api-login-timeout [changed" in start["hookSpecificOutput"]["additionalContext"]


def test_the_mcp_server_finds_the_sub_projects_lesson(monorepo: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(commands.program("dsh-compound")),
        args=["mcp"],
        cwd=str(monorepo / "services" / "api" / "src"),
        env=dict(os.environ),
    )
    found: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("compound_recall", {"query": "login"})
                found.update(result.structured_content or {})

    anyio.run(main)
    assert [hit["id"] for hit in found["results"]] == ["api-login-timeout"]

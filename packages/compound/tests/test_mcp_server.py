"""``dsh-compound mcp`` driven by the real MCP SDK client over stdio (a real process)."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from dsh_test_support import commands

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

Session = Callable[[ClientSession], Awaitable[Any]]


def run_session(workspace: Path, body: Session) -> Any:
    """Start the installed server for ``workspace`` and run ``body`` in an MCP session."""
    params = StdioServerParameters(
        command=str(commands.program("dsh-compound")),
        args=["mcp"],
        cwd=str(workspace / "src"),  # a sub-directory: the server widens to the project
        env=dict(os.environ),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / ".git").mkdir()  # marks the project root for the server
    return workspace


def test_lists_four_tools_with_schemas_and_truthful_annotations(project: Path) -> None:
    async def body(session: ClientSession) -> types.ListToolsResult:
        return await session.list_tools()

    tools = {tool.name: tool for tool in run_session(project, body).tools}
    assert sorted(tools) == [
        "compound_capture",
        "compound_check",
        "compound_inspect",
        "compound_recall",
    ]
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        hints = tool.annotations
        assert hints is not None
        assert hints.open_world_hint is False
        assert hints.destructive_hint is False
    for name in ("compound_recall", "compound_inspect", "compound_check"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools[name].annotations.idempotent_hint is True  # type: ignore[union-attr]
    capture = tools["compound_capture"].annotations
    assert capture is not None
    assert capture.read_only_hint is False
    assert capture.idempotent_hint is False
    assert "replace" in tools["compound_capture"].input_schema["properties"]


def test_every_tool_runs_capture_recall_inspect_replace_check(
    project: Path, make_draft: Callable[..., dict[str, Any]]
) -> None:
    draft = make_draft(resolution="Raise the login timeout. " * 60)

    async def body(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["capture"] = await session.call_tool("compound_capture", draft)
        out["recall"] = await session.call_tool(
            "compound_recall", {"query": "login timeout", "limit": 3}
        )
        out["inspect"] = await session.call_tool("compound_inspect", {"id": "login-timeout"})
        digest = out["inspect"].structured_content["digest"]
        changed = {**draft, "title": "Login requests time out (updated)", "replace": digest}
        out["replace"] = await session.call_tool("compound_capture", changed)
        (project / "src" / "login.js").write_text("export const timeoutMs = 60000;\n")
        out["check"] = await session.call_tool("compound_check", {})
        return out

    results = run_session(project, body)
    for result in results.values():
        assert result.is_error is False
        # The text content is the same JSON as the structured content.
        assert json.loads(result.content[0].text) == result.structured_content
    captured = results["capture"].structured_content
    assert captured["id"] == "login-timeout" and captured["replaced"] is False
    assert (project / "docs/solutions/dsh-compound/login-timeout.md").is_file()

    hit = results["recall"].structured_content["results"][0]
    assert hit["id"] == "login-timeout"
    assert hit["resolutionTruncated"] is True and len(hit["resolution"]) <= 600
    assert hit["resolution"].startswith("Raise the login timeout.")
    assert hit["whenToUse"] == draft["whenToUse"] and hit["whenToUseTruncated"] is False
    assert "untrusted" in results["recall"].structured_content["notice"]
    recalled = results["recall"].structured_content
    assert (recalled["total"], recalled["resultsTruncated"], recalled["truncated"]) == (
        1,
        False,
        False,
    )

    inspected = results["inspect"].structured_content
    assert inspected["metadata"]["title"] == draft["title"]
    assert inspected["body"] is None  # consistent: the body is only a rendering
    assert inspected["contentStatus"] == "consistent"

    assert results["replace"].structured_content["replaced"] is True
    check = results["check"].structured_content
    assert [item["id"] for item in check["needsReview"]] == ["login-timeout"]
    assert (check["needsReviewTotal"], check["needsReviewTruncated"]) == (1, False)
    assert check["needsReview"][0]["changedFiles"] == ["src/login.js"]


def _error(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error is True
    document: dict[str, Any] = json.loads(result.content[0].text)
    return document["error"]


def test_refused_calls_are_tool_errors_with_the_library_codes(
    project: Path, make_draft: Callable[..., dict[str, Any]]
) -> None:
    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("compound_capture", make_draft(tags=[])),
            await session.call_tool("compound_capture", make_draft(files=["../outside.js"])),
            await session.call_tool("compound_inspect", {"id": "no-such-lesson"}),
            await session.call_tool("compound_recall", {"query": "x", "limit": 11}),
            await session.call_tool("compound_capture", {**make_draft(), "replace": "0" * 64}),
            await session.call_tool("compound_capture", make_draft(problem="x" * 40_000)),
        ]

    codes = [_error(result)["code"] for result in run_session(project, body)]
    assert codes == [
        "invalid-draft",
        "invalid-path",
        "record-not-found",
        "invalid-limit",
        "record-not-found",
        "draft-too-large",
    ]
    # Refusals changed nothing: no corpus was created.
    assert not (project / "docs").exists()


def test_capture_twice_is_record_exists_and_keeps_the_first(
    project: Path, make_draft: Callable[..., dict[str, Any]]
) -> None:
    async def body(session: ClientSession) -> list[types.CallToolResult]:
        first = await session.call_tool("compound_capture", make_draft())
        second = await session.call_tool("compound_capture", make_draft(title="Other"))
        return [first, second]

    first, second = run_session(project, body)
    assert first.is_error is False
    assert _error(second)["code"] == "record-exists"
    record = (project / "docs/solutions/dsh-compound/login-timeout.md").read_text()
    assert "Other" not in record


def test_recall_takes_the_ranking_and_explains_hybrid_hits(
    project: Path, write_record: Callable[..., Path], home_with_weights: Path
) -> None:
    write_record(
        project,
        id="pool-exhausted",
        title="数据库连接池耗尽导致请求超时",
        problem="夜间任务从不归还连接，连接池耗尽，请求超时。",
        tags=["运维"],
        rootCause="见上。",
        resolution="见上。",
        whenToUse="见上。",
    )
    write_record(
        project,
        id="disk-full",
        title="Build agents ran out of disk space",
        tags=["ci"],
        problem="Docker layers filled the disk.",
    )
    query = "database connection pool ran dry"

    async def body(session: ClientSession) -> list[Any]:
        listed = await session.list_tools()
        return [
            next(t for t in listed.tools if t.name == "compound_recall"),
            await session.call_tool("compound_recall", {"query": query, "ranking": "hybrid"}),
            await session.call_tool("compound_recall", {"query": query, "ranking": "lexical"}),
            await session.call_tool("compound_recall", {"query": query, "ranking": "bm25"}),
        ]

    tool, hybrid, lexical, bogus = run_session(project, body)
    assert tool.input_schema["properties"]["ranking"]["enum"] == ["lexical", "hybrid"]
    assert tool.input_schema["required"] == ["query"]
    found = hybrid.structured_content
    assert hybrid.is_error is False and found["ranking"] == "hybrid"
    assert found["results"][0]["id"] == "pool-exhausted"
    assert found["results"][0]["hybrid"]["channels"] == ["semantic"]
    assert json.loads(hybrid.content[0].text) == found
    plain = lexical.structured_content
    assert "ranking" not in plain and all("hybrid" not in hit for hit in plain["results"])
    assert _error(bogus)["code"] == "invalid-ranking"

"""``dsh-memory mcp`` driven by the real MCP SDK client over stdio (a real process)."""

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

from dsh_memory.tools import UNTRUSTED_NOTICE

Session = Callable[[ClientSession], Awaitable[Any]]


def run_session(body: Session, *args: str) -> Any:
    params = StdioServerParameters(
        command=str(commands.program("dsh-memory")),
        args=[*args, "mcp"],
        env=dict(os.environ),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def add_record(root: Path) -> None:
    target = root / "handbook/project.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "---\nschema_version: 1\nid: project/codegen\ntype: decision\n---\n"
        "We chose TypeScript for the codegen pipeline.\n",
        encoding="utf-8",
    )


def test_lists_both_tools_with_schemas_and_truthful_annotations(memory_root: Path) -> None:
    async def body(session: ClientSession) -> types.ListToolsResult:
        return await session.list_tools()

    tools = {tool.name: tool for tool in run_session(body).tools}
    assert sorted(tools) == ["memory_context", "memory_search"]
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
        assert tool.annotations is not None
        assert tool.annotations.open_world_hint is False
        assert tool.annotations.destructive_hint is False
    search = tools["memory_search"].annotations
    context = tools["memory_context"].annotations
    assert search is not None and context is not None
    assert search.read_only_hint is True and search.idempotent_hint is True
    # memory_context counts usage in .sync/usage.json: it writes, and repeats differ.
    assert context.read_only_hint is False and context.idempotent_hint is False


def test_search_and_context_return_the_spec_results_with_the_notice(memory_root: Path) -> None:
    add_record(memory_root)

    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("memory_search", {"query": "codegen"}),
            await session.call_tool("memory_context", {"query": "codegen", "limit": 3}),
        ]

    search, context = run_session(body)
    for result in (search, context):
        assert result.is_error is False
        assert json.loads(result.content[0].text) == result.structured_content
        assert result.structured_content["notice"] == UNTRUSTED_NOTICE
        assert str(memory_root) not in result.content[0].text
    hit = search.structured_content["results"][0]
    assert hit["citation"] == "[source: handbook/project.md · id: project/codegen]"
    record = context.structured_content["records"][0]
    assert record["content"].startswith("We chose TypeScript")
    assert record["truncated"] is False
    usage = json.loads((memory_root / ".sync/usage.json").read_text())
    assert usage["records"]["handbook/project.md"]["usage_count"] == 1


def test_context_says_how_many_matched_before_its_limit(memory_root: Path) -> None:
    for index in range(3):
        target = memory_root / f"handbook/n{index}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"---\nschema_version: 1\nid: n{index}\ntype: fact\n---\ncache note {index}\n",
            encoding="utf-8",
        )

    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("memory_context", {"query": "cache", "limit": 1}),
            await session.call_tool("memory_context", {"limit": 1}),
            await session.call_tool("memory_context", {"query": "cache", "limit": 20}),
        ]

    counts = []
    for result in run_session(body):
        assert result.is_error is False
        value = result.structured_content
        assert json.loads(result.content[0].text) == value
        counts.append((value["count"], value["total"], value["truncated"]))
    assert counts == [(1, 3, True), (1, 3, True), (3, 3, False)]


def test_refused_calls_are_tool_errors(memory_root: Path) -> None:
    async def body(session: ClientSession) -> list[types.CallToolResult]:
        return [
            await session.call_tool("memory_search", {"query": "  "}),
            await session.call_tool("memory_context", {"limit": 99}),
            await session.call_tool("memory_delete", {}),
        ]

    codes = []
    for result in run_session(body):
        assert result.is_error is True
        codes.append(json.loads(result.content[0].text)["error"]["code"])
    assert codes == ["search-invalid-request", "context-invalid-request", "unknown-tool"]


def test_a_missing_repository_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    async def body(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("memory_search", {"query": "codegen"})

    result = run_session(body, "--root", str(tmp_path / "nowhere"))
    assert result.is_error is True
    assert json.loads(result.content[0].text)["error"]["code"] == "repo-unavailable"

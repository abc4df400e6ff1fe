"""What the three MCP servers share: a local tool's listing, results, and the stdio loop.

Only the products' ``mcp_server`` modules import this module, and they need their ``[mcp]``
extra; dsh-common itself does not depend on the ``mcp`` SDK (importing this module without
it raises ``ImportError``, which each product reports as ``mcp-unavailable``).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from dsh_common.mcp_guard import clip_nesting


def local_tool(
    *,
    name: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any],
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    title: str | None = None,
) -> types.Tool:
    """A tool listing with all four annotations.

    ``open_world_hint`` is always false: every dsh tool reads or writes the user's own files,
    SQLite database or Git repository, never a network service.
    """
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        ),
    )


def tool_from_definition(definition: Mapping[str, Any]) -> types.Tool:
    """The listing of a tool published as ``{name, title, description, inputSchema,
    outputSchema, annotations: {readOnly, destructive, idempotent}}`` (the shape of the
    products' MCP-free tool modules)."""
    hints = definition["annotations"]
    return local_tool(
        name=definition["name"],
        title=definition.get("title"),
        description=definition["description"],
        input_schema=definition["inputSchema"],
        output_schema=definition["outputSchema"],
        read_only=hints["readOnly"],
        destructive=hints["destructive"],
        idempotent=hints["idempotent"],
    )


ListTools = Callable[[Any, types.PaginatedRequestParams | None], Awaitable[types.ListToolsResult]]


def list_tools_handler(tools: Sequence[types.Tool]) -> ListTools:
    """A ``tools/list`` handler answering with ``tools`` (fixed when the server is built)."""
    result = types.ListToolsResult(tools=list(tools))

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return result

    return list_tools


def structured_result(value: Any, text: str) -> types.CallToolResult:
    """A successful call: ``value`` as ``structuredContent`` and ``text`` for text-only clients."""
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=value)


def error_result(text: str) -> types.CallToolResult:
    """A refused or failed call: a tool error (``isError``) the model can read."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


class _ClippedLines:
    """The protocol's input lines, each through :func:`~dsh_common.mcp_guard.clip_nesting`
    (what the SDK's reader iterates over)."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            yield clip_nesting(line)


def _claim_stdin() -> tuple[Any, Callable[[], None]]:
    """The protocol input on a private descriptor, fd 0 pointed at the null device (as the
    SDK does for its own reader): a child we start can never read the client's messages."""
    try:
        private = os.dup(0)
    except OSError:
        return anyio.wrap_file(sys.stdin), lambda: None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        pass  # fd 0 still carries the protocol; reading the duplicate is as safe as before
    # closefd=False: a worker thread may still block on the descriptor after the transport
    # exits, so it is never closed (and never recycled under that thread).
    text = io.TextIOWrapper(
        os.fdopen(private, "rb", closefd=False), encoding="utf-8", errors="replace"
    )

    def restore() -> None:
        try:
            os.dup2(private, 0)
        except OSError:
            pass

    return anyio.wrap_file(text), restore


async def _serve(server: Server[Any]) -> None:
    stdin, restore = _claim_stdin()
    try:
        lines: Any = _ClippedLines(stdin)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        restore()


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client closes the connection."""
    anyio.run(_serve, server)

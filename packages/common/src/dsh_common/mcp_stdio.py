"""What the three MCP servers share: a local tool's listing, results, and the stdio loop.

Only the products' ``mcp_server`` modules import this module, and they need their ``[mcp]``
extra; dsh-common itself does not depend on the ``mcp`` SDK (importing this module without
it raises ``ImportError``, which each product reports as ``mcp-unavailable``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


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


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client closes the connection."""
    anyio.run(_serve, server)

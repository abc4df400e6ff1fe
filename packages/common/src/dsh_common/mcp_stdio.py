"""What the three MCP servers share: a local tool's listing, results, and the stdio loop.

dsh-common does not depend on the ``mcp`` SDK: the products' ``mcp_server`` modules need
their ``[mcp]`` extra. This module can be imported without it - the SDK is imported by the
functions that use it - so that :func:`import_server` can tell a missing extra
(``mcp-unavailable``, in each product's own error envelope) from any other import failure.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dsh_common.errors import DshError
from dsh_common.mcp_guard import clip_nesting

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    ListTools = Callable[
        [Any, types.PaginatedRequestParams | None], Awaitable[types.ListToolsResult]
    ]

#: The SDK's top-level modules: an ImportError naming one of them means the extra is missing.
_SDK_MODULES = ("mcp", "mcp_types")


class McpUnavailableError(DshError, ImportError):
    """The product's ``[mcp]`` extra (the ``mcp`` SDK) is not installed."""

    code = "mcp-unavailable"


def import_server(module: str, distribution: str) -> ModuleType:
    """Import a product's MCP server module (``dsh_memory.mcp_server``).

    Raises McpUnavailableError - ``the MCP server needs the mcp extra: pip install
    'dsh-memory[mcp]'`` - when the SDK is missing; any other ImportError is a real bug and
    propagates as it is. A command raising it inside ``run_app`` gets the product's own
    envelope (dsh-memory's ``{"ok": false, "error": {...}}``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in _SDK_MODULES:
            raise
        raise McpUnavailableError(
            f"the MCP server needs the mcp extra: pip install '{distribution}[mcp]'"
        ) from exc


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
    import mcp_types as types  # noqa: PLC0415 - the SDK, only where it is used

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


def list_tools_handler(tools: Sequence[types.Tool]) -> ListTools:
    """A ``tools/list`` handler answering with ``tools`` (fixed when the server is built)."""
    import mcp_types as types  # noqa: PLC0415

    result = types.ListToolsResult(tools=list(tools))

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return result

    return list_tools


def structured_result(value: Any, text: str) -> types.CallToolResult:
    """A successful call: ``value`` as ``structuredContent`` and ``text`` for text-only clients."""
    import mcp_types as types  # noqa: PLC0415

    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=value)


def error_result(text: str) -> types.CallToolResult:
    """A refused or failed call: a tool error (``isError``) the model can read."""
    import mcp_types as types  # noqa: PLC0415

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
    import anyio  # noqa: PLC0415 - the [mcp] extra's dependency, loaded with the server

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
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    stdin, restore = _claim_stdin()
    try:
        lines: Any = _ClippedLines(stdin)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        restore()


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until the client closes the connection."""
    import anyio  # noqa: PLC0415

    anyio.run(_serve, server)

"""One scripted model on 127.0.0.1 for the real Claude Code and Codex CLIs.

The agent tests drive the real CLIs; the model is the only fake, so nothing leaves the
machine and every turn is known. The server speaks just enough of two streaming APIs:
Anthropic Messages (``POST /v1/messages``, server-sent events, for ``claude -p``; its
``count_tokens`` too) and OpenAI Responses (``POST /v1/responses``, for ``codex exec``).

It is stateless: the turn to play is the number of tool results already in the request,
so turn 0 answers the first request, turn 1 the one carrying the first tool result, and so
on (the last turn repeats). A turn of the script is

- ``("tool", name, arguments)``: a function call (for Codex, ``mcp__<server>__<tool>``
  becomes the namespace ``mcp__<server>`` and the tool name);
- ``("custom", name, text)``: a Codex custom tool call with free-form input (its
  ``apply_patch``); Claude Code gets it as a tool call with ``{"input": text}``;
- ``("text", text)``: a final answer;
- or a function of the request body returning one of these, for a turn that depends on
  what the CLI sent (a path named in the prompt, the tools it offers).

Every request body and path is recorded for the test to inspect. :func:`serve` runs the
server in a daemon thread of the test's process; :func:`running` is the same as a context
manager that shuts it down.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A scripted turn: ("tool", name, arguments), ("custom", name, text) or ("text", text).
Turn = tuple[Any, ...]
#: A turn, or a function choosing the turn from the request body.
Step = Turn | Callable[[dict[str, Any]], Turn]


@dataclass
class FakeModel:
    """The script and what the CLIs sent."""

    script: Sequence[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    port: int = 0

    def turn(self, done: int, body: dict[str, Any]) -> Turn:
        """The turn after ``done`` tool results, for the request ``body``."""
        step = self.script[min(done, len(self.script) - 1)]
        return step(body) if callable(step) else step

    @property
    def url(self) -> str:
        """The base URL of the running server (``ANTHROPIC_BASE_URL``; Codex adds /v1)."""
        return f"http://127.0.0.1:{self.port}"


def offered_tools(body: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers the model (both APIs)."""
    return [str(tool.get("name")) for tool in body.get("tools", []) if isinstance(tool, dict)]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def count_anthropic_tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return count


def count_openai_tool_results(body: dict[str, Any]) -> int:
    items = body.get("input", [])
    kinds = ("function_call_output", "custom_tool_call_output")
    return sum(1 for item in items if isinstance(item, dict) and item.get("type") in kinds)


def anthropic_events(turn: Turn, number: int) -> Iterator[bytes]:
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    )
    if turn[0] in ("tool", "custom"):
        arguments = turn[2] if turn[0] == "tool" else {"input": turn[2]}
        block = {"type": "tool_use", "id": f"toolu_{number}", "name": turn[1], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn[1]}
        stop = "end_turn"
    yield _sse(
        "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    )
    yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def openai_events(turn: Turn, number: int) -> Iterator[bytes]:
    if turn[0] == "tool":
        # Codex shows the tools of MCP server "dsh-x" as namespace "mcp__dsh_x" (hyphens
        # become underscores) and calls them by namespace and bare tool name.
        prefix, _, name = turn[1].rpartition("__")
        namespace = prefix.replace("-", "_")
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": name,
            "arguments": json.dumps(turn[2]),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
    elif turn[0] == "custom":
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{number}",
            "call_id": f"call_{number}",
            "name": turn[1],
            "input": turn[2],
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{number}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": turn[1], "annotations": []}],
        }
    yield _sse(
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    yield _sse(
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                "id": f"resp_{number}",
                "object": "response",
                "status": "completed",
                "usage": usage,
            },
        },
    )


def serve(model: FakeModel) -> ThreadingHTTPServer:
    """Start serving ``model`` on a free port of 127.0.0.1 (a daemon thread)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with lock:
                model.requests.append(body)
                model.paths.append(self.path)
                number = len(model.requests)
            if self.path.startswith("/v1/messages"):
                if "count_tokens" in self.path:
                    self._json({"input_tokens": 10})
                    return
                turn = model.turn(count_anthropic_tool_results(body), body)
                events = anthropic_events(turn, number)
            elif self.path.startswith("/v1/responses"):
                events = openai_events(model.turn(count_openai_tool_results(body), body), number)
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            for chunk in events:
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True

        def _json(self, value: dict[str, Any]) -> None:
            data = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    model.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def running(model: FakeModel) -> Iterator[FakeModel]:
    """``model`` served (see :func:`serve`) for the ``with`` block, then shut down."""
    server = serve(model)
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()

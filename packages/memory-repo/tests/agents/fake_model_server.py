#!/usr/bin/env python3
"""A scripted fake model server on 127.0.0.1 for the real Claude Code and Codex CLIs.

It speaks just enough of each API to make the agent write one memory record in the
staging folder named in the sync's prompt, then finish:

- Anthropic Messages (``POST /v1/messages``, streamed): turn 1 answers with a ``Write``
  tool call; once a ``tool_result`` comes back it ends the turn with a short text.
- OpenAI Responses (``POST /v1/responses``, SSE): turn 1 answers with an ``apply_patch``
  custom tool call adding the record; once its output comes back it says "done".

The turn is picked by counting the tool results in the request (the server keeps no
state). Prints its port on the first stdout line; runs until killed.
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CLAUDE_RECORD = (
    "---\nschema_version: 1\nid: agent/claude-fact\ntype: fact\n---\n"
    "Written by Claude Code through the sync.\n"
)
CODEX_RECORD_LINES = [
    "---", "schema_version: 1", "id: agent/codex-fact", "type: fact", "---",
    "Written by Codex through the sync.",
]  # fmt: skip
STAGING_RE = re.compile(r"staging memory repository (\S+) \(read")


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def _find_staging(payload: Any) -> str | None:
    match = STAGING_RE.search(json.dumps(payload))
    return match.group(1) if match else None


def _claude_reply(request: dict[str, Any]) -> bytes:
    text = json.dumps(request.get("messages", []))
    staging = _find_staging(request.get("messages", []))
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = ("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})  # fmt: skip
    has_write = any(t.get("name") == "Write" for t in request.get("tools", []))
    if '"tool_result"' in text or staging is None or not has_write:
        return _sse([
            start,
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "done"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                               "stop_sequence": None}, "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])  # fmt: skip
    arguments = {"file_path": f"{staging}/handbook/claude-fact.md", "content": CLAUDE_RECORD}
    return _sse([
        start,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_fake1", "name": "Write", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(arguments)}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                           "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


def _codex_reply(request: dict[str, Any]) -> bytes:
    items = request.get("input", [])
    done = any(isinstance(i, dict) and i.get("type", "").endswith("_output") for i in items)
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 11}  # fmt: skip
    if done:
        item: dict[str, Any] = {"type": "message", "role": "assistant", "id": "msg_fake",
                                "content": [{"type": "output_text", "text": "done"}]}  # fmt: skip
    else:
        patch = "*** Begin Patch\n*** Add File: handbook/codex-fact.md\n"
        patch += "".join(f"+{line}\n" for line in CODEX_RECORD_LINES) + "*** End Patch\n"
        item = {"type": "custom_tool_call", "name": "apply_patch", "input": patch,
                "call_id": "call_fake1", "id": "ctc_fake1", "status": "completed"}  # fmt: skip
    return _sse([
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": "resp_fake", "usage": usage}}),
    ])  # fmt: skip


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._send(404, b"{}", "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}
        if self.path.startswith("/v1/messages") and "count_tokens" not in self.path:
            self._send(200, _claude_reply(request), "text/event-stream")
        elif self.path.startswith("/v1/responses"):
            self._send(200, _codex_reply(request), "text/event-stream")
        else:
            self._send(404, b"{}", "application/json")


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every tool of the three MCP servers answers extreme argument values with a result.

Driven over raw stdio JSON-RPC against the installed servers, because the SDK's client
cannot send what any other client can: integers beyond 64 bits, ``1e400`` (infinity), ``NaN``,
and arguments nested hundreds of levels deep. Each value goes into every argument of every
tool (and into an argument no tool has), as itself and inside an array and an object.
Every request must get an answer with its own id that is a result, never a JSON-RPC error:
a success, or ``isError`` with the product's error document (compound and memory:
``{"error": {"code", "message"}}``; knowledge: the refusal message).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

BIN = commands.BIN
EXTREME = {
    "int beyond 64 bits": str(2**70),
    "negative int beyond 64 bits": str(-(2**80)),
    "1e400": "1e400",
    "-1e400": "-1e400",
    "NaN": "NaN",
    "nested 300 deep": "[" * 300 + "]" * 300,
    "objects 300 deep": '{"a":' * 300 + "1" + "}" * 300,
    "nested 100000 deep": "[" * 100_000 + "]" * 100_000,
}


class RawSession:
    """A real server process spoken to in newline-delimited JSON-RPC."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "extreme-values-test", "version": "1"},
            },
        )
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], raw: str | None = None) -> Any:
        self.next_id += 1
        body = raw if raw is not None else json.dumps(params)
        self.send(f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"{method}","params":{body}}}')
        try:
            answer = json.loads(self.lines.get(timeout=60))
        except queue.Empty:
            raise AssertionError(f"no answer to {method} {body[:80]}") from None
        assert answer["id"] == self.next_id
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


def servers(tmp_path: Path) -> dict[str, tuple[list[str], Path]]:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    memory = tmp_path / "memory"
    initialized = in_process.run("dsh-memory", "--root", str(memory), "init")
    assert initialized.returncode == 0, initialized.stderr
    return {
        "compound": ([str(BIN / "dsh-compound"), "mcp"], workspace),
        "memory": ([str(BIN / "dsh-memory"), "--root", str(memory), "mcp"], workspace),
        "knowledge": (
            [
                str(BIN / "dsh-knowledge"),
                "mcp",
                "--db",
                str(tmp_path / "k.db"),
                "--workspace",
                str(workspace),
            ],
            workspace,
        ),
    }


def check_answer(product: str, answer: dict[str, Any], what: str) -> None:
    assert "error" not in answer, f"{what}: JSON-RPC error {answer['error']}"
    result = answer["result"]
    if not result.get("isError"):
        return
    text = result["content"][0]["text"]
    if product == "knowledge":
        assert text.strip(), what
        return
    error = json.loads(text)["error"]
    assert isinstance(error["code"], str) and error["code"], what
    assert isinstance(error["message"], str) and error["message"], what


@pytest.mark.parametrize("product", ["compound", "memory", "knowledge"])
def test_every_tool_answers_every_extreme_value(product: str, tmp_path: Path) -> None:
    argv, cwd = servers(tmp_path)[product]
    env = {**os.environ, "DSH_HOME": str(tmp_path / "home")}
    session = RawSession(argv, cwd, env)
    try:
        tools = session.request("tools/list", {})["result"]["tools"]
        assert tools
        for tool in tools:
            names = [*tool["inputSchema"].get("properties", {}), "notAnArgument"]
            for argument in names:
                for label, raw in EXTREME.items():
                    # The value itself, and (for the scalars) one level down in an array
                    # and in an object, where a tool's own validation looks last.
                    shapes = [raw] if "deep" in label else [raw, f"[{raw}]", f'{{"k":{raw}}}']
                    for shape in shapes:
                        body = f'{{"name":"{tool["name"]}","arguments":{{"{argument}":{shape}}}}}'
                        answer = session.request("tools/call", {}, raw=body)
                        check_answer(product, answer, f"{tool['name']}.{argument} = {shape[:40]}")
        # The session is still usable afterwards.
        assert session.request("tools/list", {})["result"]["tools"] == tools
    finally:
        session.close()


def test_a_capture_with_a_huge_integer_is_invalid_draft(tmp_path: Path) -> None:
    argv, cwd = servers(tmp_path)["compound"]
    session = RawSession(argv, cwd, dict(os.environ))
    try:
        body = '{"name":"compound_capture","arguments":{"id":"x","title":' + str(2**70) + "}}"
        result = session.request("tools/call", {}, raw=body)["result"]
        assert result["isError"] is True
        assert json.loads(result["content"][0]["text"])["error"]["code"] == "invalid-draft"
        deep = '{"name":"compound_recall","arguments":{"query":' + "[" * 500 + "]" * 500 + "}}"
        refused = json.loads(
            session.request("tools/call", {}, raw=deep)["result"]["content"][0]["text"]
        )["error"]
        assert refused["code"] == "invalid-arguments"
        assert "nested too deeply" in refused["message"]
    finally:
        session.close()

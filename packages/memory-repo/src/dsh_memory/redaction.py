#!/usr/bin/env python3
"""Turn an agent session log into a compact, redacted Markdown transcript.

This module is deliberately standard-library only: ``dsh-memory init`` copies its source
verbatim to ``<root>/scripts/filter_session.py`` (mode 0700), where the earlier tool's sync
expects an executable session filter. One implementation serves both the sync command and
that script, so they can never disagree about what is redacted.

Rules (the earlier tool's filter, docs/sync-facts.md):

- every string is redacted *before* it is truncated (a secret cut in half by truncation
  would otherwise escape the patterns): bearer tokens, ``sk-`` keys, GitHub and AWS key
  shapes, secret query parameters, and absolute home prefixes (``/home/<user>``,
  ``/Users/<user>``, ``/root`` become ``$HOME``);
- a JSON field whose *name* is sensitive (``token``, ``password``, ``api_key`` ...) loses
  its whole value;
- injected ``<system-reminder>`` and "Current runtime context." blocks are dropped;
- limits: tool arguments 200 characters, tool results 400, messages 2000, metadata 400.

Three log formats are read: DSH session logs (``session`` / ``turn/start`` /
``user/message`` / ``assistant/message`` / ``tool/call`` / ``tool/result`` events), Claude
Code transcripts (``{"type": "user"|"assistant", "message": {...}}`` lines) and Codex
rollouts (``{"type": "session_meta"|"response_item", "payload": {...}}`` lines).

Usage as a script: ``filter_session.py <log>`` (plain or zstd JSON lines) or ``-`` for stdin.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from typing import Any

ARG_MAX = 200
RESULT_MAX = 400
MESSAGE_MAX = 2000
METADATA_MAX = 400
REDACTION = "[REDACTED]"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

BEARER_RE = re.compile(r"(?i)\bbearer[ \t]+[A-Za-z0-9._~+/=-]{3,}")
SK_KEY_RE = re.compile(r"\bsk-[A-Za-z0-9_-]{3,}", re.IGNORECASE)
GITHUB_KEY_RE = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{4,}|github_pat_[A-Za-z0-9_]{20,})\b", re.IGNORECASE
)
AWS_KEY_RE = re.compile(r"\b(?:A3T|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA)[A-Z0-9]{16}\b")
QUERY_SECRET_RE = re.compile(
    r"(?i)([?&](?:access_token|api[_-]?key|auth|password|passwd|pwd|token)=)([^&#\s\"']+)"
)
HOME_PREFIX_RE = re.compile(r"(?<![A-Za-z0-9_])(?:/Users/[^/\s]+|/home/[^/\s]+|/root)(?=/|\b)")
SENSITIVE_FIELD_RE = re.compile(
    r"(?i)^(?:access[_-]?token|api[_-]?key|authorization|auth|password|passwd|pwd|secret|token)$"
)


def redact_text(value: str) -> str:
    """Redact credential shapes and normalise absolute home prefixes to ``$HOME``."""
    value = HOME_PREFIX_RE.sub("$HOME", value)
    value = QUERY_SECRET_RE.sub(lambda match: f"{match.group(1)}{REDACTION}", value)
    value = BEARER_RE.sub(f"Bearer {REDACTION}", value)
    value = SK_KEY_RE.sub(REDACTION, value)
    value = GITHUB_KEY_RE.sub(REDACTION, value)
    return AWS_KEY_RE.sub(REDACTION, value)


def redact_value(value: Any, field_name: object = None) -> Any:
    """Recursively redact parsed data; a sensitive field name hides its whole value."""
    if field_name is not None and SENSITIVE_FIELD_RE.match(str(field_name)):
        return REDACTION
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item, key) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    return value


def truncate(value: str, limit: int) -> str:
    value = value.strip()
    if len(value) <= limit:
        return value
    return value[:limit] + f" …[truncated {len(value) - limit} chars]"


def summarize_arguments(raw: Any) -> str:
    """Tool arguments: parsed JSON is redacted field by field, then serialised, then cut."""
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return truncate(redact_text(str(raw)), ARG_MAX)
    return truncate(json.dumps(redact_value(parsed), ensure_ascii=False), ARG_MAX)


def is_injected(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith(("<system-reminder>", "Current runtime context."))


def _texts(content: Any) -> list[str]:
    """Text of a message ``content`` (a string or a list of typed blocks), redacted."""
    if isinstance(content, str):
        return [] if is_injected(content) else [redact_text(content)]
    found: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") in ("text", "input_text", "output_text") and block.get("text"):
                text = str(block["text"])
                if not is_injected(text):
                    found.append(redact_text(text))
    return found


def _nested_texts(node: Any) -> Iterator[str]:
    """Text blocks of arbitrarily nested tool-result containers, redacted."""
    if isinstance(node, str):
        yield redact_text(node)
    elif isinstance(node, dict):
        if node.get("type") == "text" and node.get("text") is not None:
            yield redact_text(str(node["text"]))
            return
        for key, value in node.items():
            if SENSITIVE_FIELD_RE.match(str(key)):
                yield REDACTION
            else:
                yield from _nested_texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nested_texts(value)


def metadata(value: Any) -> str:
    return truncate(redact_text(str(value)), METADATA_MAX)


def _message(out: list[str], heading: str, texts: list[str]) -> None:
    if texts:
        out.extend([heading, truncate("\n".join(texts), MESSAGE_MAX), ""])


def _tool_call(out: list[str], name: Any, arguments: Any) -> None:
    out.append(f"- tool: {metadata(name)}({summarize_arguments(arguments)})")


def _tool_result(out: list[str], node: Any) -> None:
    results = list(_nested_texts(node))
    if results:
        out.append(f"- result: {truncate(' '.join(results), RESULT_MAX)}")


def render_dsh(events: list[dict[str, Any]]) -> str:
    """A DSH session log (the earlier tool's event names)."""
    header = next((e for e in events if e.get("type") == "session"), {})
    title = None
    for event in events:
        title_data = event.get("data")
        if event.get("type") == "session/title" and isinstance(title_data, dict):
            message = title_data.get("message")
            title = title_data.get("title") or (
                message.get("title") if isinstance(message, dict) else None
            )
    out = [
        f"# Session {metadata(header.get('id', '?'))}",
        f"- cwd: {metadata(header.get('cwd', '?'))}",
        f"- preset: {metadata(header.get('agentPreset', '?'))}",
    ]
    if title:
        out.append(f"- title: {metadata(title)}")
    out.append("")
    turn: Any = None
    for event in events:
        kind = event.get("type")
        raw_data = event.get("data")
        data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        if kind == "turn/start":
            turn = data.get("turn")
        elif kind == "user/message":
            _message(out, f"## Turn {turn or '?'} · user", _texts(data.get("content")))
        elif kind == "assistant/message":
            message = data.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            _message(out, f"## Turn {turn or '?'} · assistant", _texts(content))
        elif kind == "tool/call":
            _tool_call(out, data.get("name", "?"), data.get("arguments", ""))
        elif kind == "tool/result":
            _tool_result(out, data.get("message", {}))
    return "\n".join(out)


def render_claude(events: list[dict[str, Any]]) -> str:
    """A Claude Code transcript (``~/.claude/projects/<project>/<session>.jsonl``)."""
    first = next((e for e in events if e.get("sessionId")), {})
    out = [f"# Session {metadata(first.get('sessionId', '?'))}",
           f"- cwd: {metadata(first.get('cwd', '?'))}", "- agent: claude-code", ""]  # fmt: skip
    for event in events:
        role = event.get("type")
        message = event.get("message")
        if role not in ("user", "assistant") or not isinstance(message, dict):
            continue
        content = message.get("content")
        _message(out, f"## {role}", _texts(content))
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                _tool_call(out, block.get("name", "?"), block.get("input", {}))
            elif block.get("type") == "tool_result":
                _tool_result(out, block.get("content"))
    return "\n".join(out)


def render_codex(events: list[dict[str, Any]]) -> str:
    """A Codex rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``)."""
    meta: dict[str, Any] = {}
    for event in events:
        if event.get("type") == "session_meta" and isinstance(event.get("payload"), dict):
            meta = event["payload"]
            break
    out = [f"# Session {metadata(meta.get('id', '?'))}",
           f"- cwd: {metadata(meta.get('cwd', '?'))}", "- agent: codex", ""]  # fmt: skip
    for event in events:
        payload = event.get("payload")
        if event.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            _message(out, f"## {payload['role']}", _texts(payload.get("content")))
        elif kind in ("function_call", "custom_tool_call"):
            _tool_call(out, payload.get("name", "?"),
                       payload.get("arguments", payload.get("input", "")))  # fmt: skip
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _tool_result(out, payload.get("output"))
    return "\n".join(out)


def detect_format(events: list[dict[str, Any]]) -> str:
    """``dsh``, ``claude`` or ``codex``, from the event shapes."""
    for event in events:
        kind = event.get("type")
        if kind in ("session_meta", "response_item", "turn_context", "event_msg"):
            return "codex"
        if kind in ("user", "assistant") and isinstance(event.get("message"), dict):
            return "claude"
    return "dsh"


def parse_lines(raw: bytes) -> list[dict[str, Any]]:
    """JSON lines as objects; malformed lines are skipped (a log may end mid-write)."""
    events: list[dict[str, Any]] = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def render(events: list[dict[str, Any]], log_format: str | None = None) -> str:
    kind = log_format or detect_format(events)
    if kind == "claude":
        return render_claude(events)
    if kind == "codex":
        return render_codex(events)
    return render_dsh(events)


def filter_lines(lines: Iterable[bytes]) -> str:
    return render(parse_lines(b"\n".join(lines)))


def _decompress(raw: bytes) -> bytes:
    """zstd by its magic bytes: the ``zstandard`` module when present, else ``zstd -dc``."""
    try:
        import zstandard  # noqa: PLC0415 - optional at script run time

        return zstandard.ZstdDecompressor().stream_reader(raw).read()
    except ImportError:
        pass
    from dsh_common.programs import resolve_program  # noqa: PLC0415 - only for zstd input

    program = resolve_program("zstd")  # never a zstd in the working directory
    if program is None:
        raise SystemExit("filter_session.py: zstd input needs the zstandard module or zstd")
    return subprocess.run([program, "-dc"], input=raw, capture_output=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stdout.write(__doc__ or "")
        return 2
    if args[0] == "-":
        raw = sys.stdin.buffer.read()
    else:
        with open(args[0], "rb") as handle:
            raw = handle.read()
    if raw.startswith(ZSTD_MAGIC):
        raw = _decompress(raw)
    sys.stdout.write(render(parse_lines(raw)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Turn an agent session log into a compact, redacted Markdown transcript.

This module is deliberately standard-library only, apart from :mod:`dsh_common.secrets`
(itself standard-library only): ``dsh-memory init`` writes this source, with the detector's
source inlined in place of its import line, to ``<root>/scripts/filter_session.py`` (mode
0700), where the earlier tool's sync expects an executable session filter. One
implementation serves both the sync command and that script, so they can never disagree
about what is redacted.

Rules (the earlier tool's filter, docs/memory/sync.md, with the shared detector's shapes):

- every string is redacted *before* it is truncated (a secret cut in half by truncation
  would otherwise escape the patterns): every secret
  :func:`dsh_common.secrets.find_secrets` reports in its eager (redacting) sensitivity -
  vendor tokens (``sk-``, GitHub, AWS, Slack, Stripe, Google ...), bearer and basic
  credentials, JWTs, private-key blocks, URL passwords, secret query parameters and
  assignments (``DB_PASSWORD=…``, ``"client_secret": "…"``), also glued to Chinese text -
  becomes ``[REDACTED]`` (``Bearer [REDACTED]`` for a bearer token; the name of an
  assignment, a URL's user and its host stay); then absolute home prefixes
  (``/home/<user>``, ``/Users/<user>``, ``/root``, not right after ``://``) become
  ``$HOME``;
- a JSON field whose *name* is sensitive (``token``, ``password``, ``api_key``,
  ``db_password``, ``AWS_SECRET_ACCESS_KEY`` ... :func:`dsh_common.secrets.is_secret_name`)
  loses its whole value;
- injected ``<system-reminder>`` and "Current runtime context." blocks are dropped;
- limits: tool arguments 200 characters, tool results 400, messages 2000, metadata 400;
- a log line (or a tool's JSON arguments) nested more than 100 arrays/objects deep is
  skipped and counted, like a malformed line: every walk over it would exhaust the stack.
  (``dsh_common.jsonlines`` applies the same rule to the same bytes for the sync itself;
  this copy exists because the script must run with the standard library alone.)

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

from dsh_common.programs import resolve_program  # inlined into filter_session.py
from dsh_common.secrets import Span, is_secret_name, redact  # inlined into filter_session.py

ARG_MAX = 200
RESULT_MAX = 400
MESSAGE_MAX = 2000
METADATA_MAX = 400
REDACTION = "[REDACTED]"
#: Deepest nesting of arrays/objects read from a log (dsh_common.jsonlines.MAX_DEPTH).
MAX_DEPTH = 100
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# The earlier filter's home prefixes, except right after "://": "mysql://root:pw@db" names
# a user, not a folder.
HOME_PREFIX_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?<!:/)(?:/Users/[^/\s]+|/home/[^/\s]+|/root)(?=/|\b)"
)


def _replacement(span: Span) -> str:
    return f"Bearer {REDACTION}" if span.kind == "bearer" else REDACTION


def redact_text(value: str) -> str:
    """Replace every secret, then normalise absolute home prefixes to ``$HOME``.

    Secrets go first, so that nothing the home rule rewrites can break a secret's shape
    before the detector sees it.
    """
    return HOME_PREFIX_RE.sub("$HOME", redact(value, _replacement, eager=True))


def sensitive_field(name: object) -> bool:
    """A JSON field whose value is dropped whole: its name says it holds a secret."""
    return is_secret_name(str(name), eager=True)


def redact_value(value: Any, field_name: object = None) -> Any:
    """Recursively redact parsed data; a sensitive field name hides its whole value."""
    if field_name is not None and sensitive_field(field_name):
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


def _nesting_exceeds(value: Any) -> bool:
    """Whether ``value`` nests arrays/objects deeper than :data:`MAX_DEPTH` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads_bounded(text: str) -> tuple[Any, bool]:
    """``(value, True)`` for JSON nested at most :data:`MAX_DEPTH` deep, else ``(None, False)``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, False
    if text.count("[") + text.count("{") > MAX_DEPTH and _nesting_exceeds(value):
        return None, False
    return value, True


def summarize_arguments(raw: Any) -> str:
    """Tool arguments: parsed JSON is redacted field by field, then serialised, then cut."""
    parsed, ok = loads_bounded(raw) if isinstance(raw, str) else (raw, True)
    if not ok:
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
            if sensitive_field(key):
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
    out = [
        f"# Session {metadata(first.get('sessionId', '?'))}",
        f"- cwd: {metadata(first.get('cwd', '?'))}",
        "- agent: claude-code",
        "",
    ]
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
    out = [
        f"# Session {metadata(meta.get('id', '?'))}",
        f"- cwd: {metadata(meta.get('cwd', '?'))}",
        "- agent: codex",
        "",
    ]
    for event in events:
        payload = event.get("payload")
        if event.get("type") != "response_item" or not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            _message(out, f"## {payload['role']}", _texts(payload.get("content")))
        elif kind in ("function_call", "custom_tool_call"):
            _tool_call(
                out, payload.get("name", "?"), payload.get("arguments", payload.get("input", ""))
            )
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


def read_lines(raw: bytes) -> tuple[list[dict[str, Any]], int]:
    """JSON lines as objects, and how many lines were skipped as malformed (a log may end
    mid-write) or nested too deep. Lines split on ``\n`` only (a string may hold U+2028)."""
    events: list[dict[str, Any]] = []
    skipped = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        event, ok = loads_bounded(line.decode("utf-8", errors="replace"))
        if not ok:
            skipped += 1
        elif isinstance(event, dict):
            events.append(event)
    return events, skipped


def parse_lines(raw: bytes) -> list[dict[str, Any]]:
    """The objects of :func:`read_lines`."""
    return read_lines(raw)[0]


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

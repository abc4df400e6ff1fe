"""Reading the user turns of a session transcript for extraction: Claude Code or DSH.

Both are JSON lines; each line is detected on its own:

* **Claude Code** (``~/.claude/projects/…/<session>.jsonl``): lines with ``"type": "user"``
  and ``"message": {"role": "user", "content": …}``. ``content`` is a string or a list of
  blocks; only ``text`` blocks count, a message holding only ``tool_result`` blocks (a tool's
  output the host stores as a user line) is skipped, and so are ``isMeta`` lines (host
  notes) and command echoes (text starting with ``<command-`` or ``<local-command-``). Every
  user message starts a new turn. ``sessionId`` and ``cwd`` are read when present.
* **DSH session log**: event lines ``{"type": "user/message", "seq"?, "source": {"kind":
  "user"}, "content": <string or text blocks>, "timestamp"?}`` and ``{"type": "turn/end"}``
  closing a turn; only ``source.kind == "user"`` counts (not ``user-approval`` or assistant
  events). A ``{"type": "session/header", "id", "cwd"?}`` line names the session.

``seq`` is the event's own ``seq`` when it has one, else its 1-based line number in the file,
so the ``seq=<n>`` evidence locator always points back into the transcript. Unreadable lines
(not UTF-8, not JSON, not an object, or nested more than 100 arrays/objects deep) are counted
and skipped, through ``dsh_common.jsonlines`` - the reader dsh-memory's sync uses too. At
most 64 MiB are read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dsh_common.jsonlines import iter_json_lines
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.extraction import UserMessage

__all__ = ["MAX_TRANSCRIPT_BYTES", "Transcript", "read_transcript"]

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
_COMMAND_ECHO = ("<command-", "<local-command-")


@dataclass
class Transcript:
    turns: list[list[UserMessage]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    unreadable_lines: int = 0


def _text_of(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def _claude_message(line: dict[str, Any]) -> str | None:
    if line.get("isMeta") or line.get("isSidechain"):
        return None
    message = line.get("message")
    if not isinstance(message, dict) or message.get("role", "user") != "user":
        return None
    text = _text_of(message.get("content"))
    if text is None or text.lstrip().startswith(_COMMAND_ECHO):
        return None
    return text


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """The user turns of the transcript at ``path`` (Claude Code or DSH lines)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TRANSCRIPT_BYTES + 1)
    except OSError as error:
        raise ValidationError(f"Cannot read the transcript: {error.strerror}") from None
    if len(data) > MAX_TRANSCRIPT_BYTES:
        raise ValidationError("The transcript is larger than 64 MiB.")
    transcript = Transcript()
    current: list[UserMessage] = []
    for parsed in iter_json_lines(data, errors="strict"):
        line, number = parsed.value, parsed.number
        if parsed.problem is not None or not isinstance(line, dict):
            transcript.unreadable_lines += 1
            continue
        kind = line.get("type")
        if transcript.session_id is None:
            session = line.get("sessionId") if kind == "user" else None
            if kind == "session/header":
                session = line.get("id")
            if isinstance(session, str) and session.strip():
                transcript.session_id = session
        if transcript.cwd is None and isinstance(line.get("cwd"), str):
            transcript.cwd = line["cwd"]
        timestamp = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
        seq = line.get("seq")
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else number
        if kind == "user":
            text = _claude_message(line)
            if text is not None:
                transcript.turns.append([UserMessage(seq, text, timestamp)])
        elif kind == "user/message":
            source = line.get("source")
            if isinstance(source, dict) and source.get("kind") == "user":
                text = _text_of(line.get("content"))
                if text is not None:
                    current.append(UserMessage(seq, text, timestamp))
        elif kind == "turn/end" and current:
            transcript.turns.append(current)
            current = []
    if current:
        transcript.turns.append(current)
    return transcript

"""The session filter's redaction rules (the earlier tool's filter_session.py, pinned)."""

from __future__ import annotations

import json

import pytest

from dsh_memory.sync.redaction import (
    MESSAGE_MAX,
    detect_format,
    parse_lines,
    redact_text,
    redact_value,
    render,
    truncate,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.DEF-123", "Authorization: Bearer [REDACTED]"),
        ("key sk-proj-AbC_123", "key [REDACTED]"),
        ("token ghp_abcd1234", "token [REDACTED]"),
        ("pat github_pat_" + "a" * 22, "pat [REDACTED]"),
        ("aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED]"),
        ("https://x.io/?api_key=s3cr3t&x=1", "https://x.io/?api_key=[REDACTED]&x=1"),
        ("in /home/alice/src, /Users/bob/x, /root/y", "in $HOME/src, $HOME/x, $HOME/y"),
        ("plain words stay", "plain words stay"),
    ],
)
def test_credential_shapes_and_home_prefixes_are_redacted(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_sensitive_field_names_lose_their_whole_value() -> None:
    data = {"password": "x", "API-KEY": "y", "nested": [{"token": {"a": 1}}], "name": "ok"}
    assert redact_value(data) == {
        "password": "[REDACTED]",
        "API-KEY": "[REDACTED]",
        "nested": [{"token": "[REDACTED]"}],
        "name": "ok",
    }


def test_redaction_happens_before_truncation() -> None:
    # A key straddling the message limit would survive if the text were cut first.
    secret = "sk-" + "A" * 40
    text = "x" * (MESSAGE_MAX - 10) + " " + secret
    events = [{"type": "user/message", "data": {"content": [{"type": "text", "text": text}]}}]
    out = render(events, "dsh")
    assert "AAAAAAA" not in out and "sk-" not in out
    assert truncate("abc", 2) == "ab …[truncated 1 chars]"


def test_injected_context_is_dropped_in_every_format() -> None:
    reminder = "<system-reminder>secret plan</system-reminder>"
    blocks = [{"type": "text", "text": reminder}, {"type": "text", "text": "real question"}]
    claude = [{"type": "user", "sessionId": "s", "message": {"role": "user", "content": blocks}}]
    injected = [{"type": "input_text", "text": "Current runtime context. cwd=/x"}]
    codex = [
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": injected},
        }
    ]
    assert "secret plan" not in render(claude) and "real question" in render(claude)
    assert "runtime context" not in render(codex)


def test_formats_are_detected_from_their_events() -> None:
    lines = b"\n".join(
        json.dumps(e).encode()
        for e in [{"type": "session_meta", "payload": {"id": "r1"}}, {"type": "response_item"}]
    )
    assert detect_format(parse_lines(lines)) == "codex"
    assert detect_format([{"type": "assistant", "message": {"content": "x"}}]) == "claude"
    assert detect_format([{"type": "session", "id": "d"}]) == "dsh"
    assert parse_lines(b'{"a": 1}\nnot json\n\n[1]\n{"b": 2') == [{"a": 1}]

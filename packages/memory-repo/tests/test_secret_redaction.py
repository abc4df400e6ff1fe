"""Secrets never reach a sync agent or the memory's Git history, in any shape or language.

The shapes come from dsh-common's shared table (every token built by concatenation); each is
placed in English, glued to Chinese on both sides, in JSON, in an env file and in a URL, in
the three session-log formats the sync reads, and replayed through the installed
``dsh-memory-sync`` with a scripted agent that commits everything it was handed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from dsh_test_support import commands
from dsh_test_support.gitcmd import git
from packages.common.tests.secret_shapes import GLUED, PROSE, SHAPES, cases

from dsh_memory.store.initialize import filter_script_source, initialize_repository
from dsh_memory.sync.redaction import REDACTION, redact_text, redact_value, render

CASES = cases()
TWO_HOURS = 2 * 3600


@pytest.mark.parametrize(("case", "shape", "text"), CASES, ids=[c[0] for c in CASES])
def test_every_shape_in_every_context_is_redacted(case: str, shape: Any, text: str) -> None:
    out = redact_text(text)
    assert shape.hidden not in out, (case, out)
    assert REDACTION in out
    glued = GLUED.get(case.rsplit("/", 1)[1])
    if glued:  # the Chinese around it is kept, only the secret goes
        assert out.startswith(glued[0]) and out.endswith(glued[1]), out


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact_text(text) == text


def test_fields_named_for_a_secret_lose_their_value() -> None:
    data = {
        "db_password": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
        "clientSecret": {"x": 1},
        "MYSQL_ROOT_PASSWORD": 7,
        "Authorization": "c",
        "max_tokens": 4096,
        "password_reset_url": "/reset",
    }
    assert redact_value(data) == {
        "db_password": REDACTION,
        "AWS_SECRET_ACCESS_KEY": REDACTION,
        "clientSecret": REDACTION,
        "MYSQL_ROOT_PASSWORD": REDACTION,
        "Authorization": REDACTION,
        "max_tokens": 4096,
        "password_reset_url": "/reset",
    }


# -- session logs carrying every case -------------------------------------------------------


def _dsh_events(texts: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "session", "id": "d-secrets", "cwd": "/home/alice/p", "agentPreset": "x"}
    ]
    for turn, text in enumerate(texts, start=1):
        events += [
            {"type": "turn/start", "data": {"turn": turn}},
            {"type": "user/message", "data": {"content": [{"type": "text", "text": text}]}},
            {
                "type": "tool/call",
                "data": {"name": "shell", "arguments": json.dumps({"cmd": text[:150]})},
            },
            {
                "type": "tool/result",
                "data": {"message": {"content": [{"type": "text", "text": text[:390]}]}},
            },
        ]
    return events


def _claude_events(texts: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for text in texts:
        events += [
            {
                "type": "user",
                "sessionId": "c-secrets",
                "cwd": "/home/alice/p",
                "message": {"role": "user", "content": text},
            },
            {
                "type": "assistant",
                "sessionId": "c-secrets",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "ok: " + text}],
                },
            },
        ]
    return events


def _codex_events(texts: list[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "session_meta", "payload": {"id": "x-secrets", "cwd": "/home/alice/p"}}
    ]
    for text in texts:
        content = [{"type": "input_text", "text": text}]
        payload = {"type": "message", "role": "user", "content": content}
        events.append({"type": "response_item", "payload": payload})
    return events


def _lines(events: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode("utf-8")


TEXTS = [text for _, _, text in CASES]
HIDDEN = sorted({shape.hidden for shape in SHAPES})


def test_the_repositorys_filter_script_runs_alone_and_redacts_exactly_as_the_sync(
    tmp_path: Path,
) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    script = root / "scripts" / "filter_session.py"
    source = script.read_text(encoding="utf-8")
    assert script.read_bytes() == filter_script_source()
    assert "import dsh_common" not in source and "from dsh_common" not in source
    for name, events in (
        ("dsh", _dsh_events(TEXTS)),
        ("claude", _claude_events(TEXTS)),
        ("codex", _codex_events(TEXTS)),
    ):
        log = tmp_path / f"{name}.jsonl"
        log.write_bytes(_lines(events))
        # -I -S: no site-packages, so nothing of dsh can be imported; the script stands alone.
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(script), str(log)], capture_output=True, check=True
        )
        expected = render(events) + "\n"
        assert done.stdout.decode("utf-8") == expected, name
        for hidden in HIDDEN:
            assert hidden not in expected, (name, hidden)


def _write_logs(logs: Any) -> None:
    moment = time.time() - TWO_HOURS
    folder = logs.dsh_sessions / "d-secrets"
    folder.mkdir(parents=True)
    dsh = folder / "session.jsonl.zstd"
    dsh.write_bytes(zstandard.ZstdCompressor().compress(_lines(_dsh_events(TEXTS))))
    claude = logs.claude_projects / "-home-alice-p" / "c-secrets.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_bytes(_lines(_claude_events(TEXTS)))
    codex = logs.codex_sessions / "2026" / "12" / "01" / "rollout-x-secrets.jsonl"
    codex.parent.mkdir(parents=True)
    codex.write_bytes(_lines(_codex_events(TEXTS)))
    for path in (dsh, claude, codex):
        os.utime(path, (moment, moment))


def test_a_sync_replaying_every_shape_glued_to_chinese_keeps_them_out_of_history(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    cli_env: dict[str, str],
) -> None:
    _write_logs(session_logs)
    done = commands.run(
        "dsh-memory-sync",
        "--json",
        "--agent",
        "command",
        "--agent-command",
        agent_command("received"),
        "--codex-sessions",
        str(session_logs.codex_sessions),
        env=cli_env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "applied" and result["candidateSessions"] == 3
    received = (sync_root / "rollouts" / "received.md").read_text(encoding="utf-8")
    history = git(sync_root, "log", "-p", "--all", "--format=%H %s%n%b")
    assert "rollouts/received.md" in history
    for hidden in HIDDEN:
        assert hidden not in received, hidden
        assert hidden not in history, hidden
    # The sessions did reach the agent: each Chinese-glued case arrived, redacted in place.
    for case, _, text in CASES:
        if case.rsplit("/", 1)[1] in GLUED:
            assert redact_text(text) in received, case
    assert received.count(REDACTION) >= len(CASES)
    # Nothing on disk outside Git (the private staging folder included) holds one either.
    for path in sync_root.rglob("*"):
        if ".git" not in path.relative_to(sync_root).parts and path.is_file():
            content = path.read_bytes()
            for hidden in HIDDEN:
                assert hidden.encode() not in content, (path, hidden)

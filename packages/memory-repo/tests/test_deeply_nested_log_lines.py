"""A session log line nested hundreds of levels deep is skipped and counted, never fatal.

One such line (``[[[[...``, a few kilobytes) used to stop every sync for good: the
redaction walk raised RecursionError, nothing was journaled and the watermark never moved,
so the next sync met the same line. The sync now reads logs through
``dsh_common.jsonlines`` (shared with dsh-knowledge's transcript reader), the standalone
``scripts/filter_session.py`` applies the same rule with the standard library alone, and a
differential test keeps the two identical.
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
from dsh_test_support import commands

from dsh_common.jsonlines import MAX_DEPTH, read_json_lines
from dsh_memory.service import MemoryService
from dsh_memory.sync import redaction

DEEP_ARRAY = "[" * 500 + "]" * 500
#: A DSH event whose data nests ~500 levels (written as text: json.dumps would recurse).
DEEP_EVENT = (
    '{"type": "tool/result", "data": {"message": ' + '{"a": [' * 250 + "1" + "]}" * 250 + "}}"
)
#: A tool call whose *arguments string* holds JSON nested 2,000 levels.
DEEP_ARGUMENTS = json.dumps(
    {"type": "tool/call", "data": {"name": "shell", "arguments": "[" * 2000 + "]" * 2000}}
)


def _append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))
    moment = time.time() - 2 * 3600
    os.utime(path, (moment, moment))


def test_a_sync_skips_and_counts_a_deeply_nested_line(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    log = session_logs.dsh("d1", "we deploy with uv", zstd=False)
    after = {"type": "user/message", "data": {"content": "after the deep lines"}}
    _append(log, DEEP_ARRAY, DEEP_EVENT, DEEP_ARGUMENTS, json.dumps(after))
    watermark = (sync_root / ".last-sync").stat().st_mtime_ns
    result = commands.run(
        "dsh-memory-sync", "--root", str(sync_root), "--agent-command", agent_command("transcripts")
    )
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    assert value["status"] == "applied"
    assert value["skippedLines"] == 2  # the two deep lines; the deep *arguments* are text
    assert "2 unreadable or too deeply nested log line(s) skipped" in result.stderr
    transcript = (sync_root / "rollouts" / "transcripts.md").read_text()
    assert "we deploy with uv" in transcript and "after the deep lines" in transcript
    assert "- tool: shell([[[[" in transcript  # shown as (truncated) text, not walked
    assert (sync_root / ".last-sync").stat().st_mtime_ns > watermark  # the sync moved on
    assert MemoryService().runs(limit=1)["value"]["runs"][0]["status"] == "applied"


def test_the_filter_script_reads_the_same_log(memory_root: Path, session_logs: Any) -> None:
    log = session_logs.dsh("d1", "we deploy with uv", zstd=False)
    _append(log, DEEP_ARRAY, DEEP_EVENT, DEEP_ARGUMENTS)
    script = memory_root / "scripts" / "filter_session.py"
    done = subprocess.run(
        [sys.executable, str(script), str(log)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "we deploy with uv" in done.stdout
    assert done.stdout == redaction.render(redaction.parse_lines(log.read_bytes())) + "\n"


CORPUS = [
    b'{"type": "session", "id": "s"}',
    b"",
    b"   ",
    b"not json",
    b'{"half": ',
    b"[1, 2, 3]",
    b'"a string"',
    b'{"text": "line\\u2028separator and a raw \xe2\x80\xa8 one"}',
    b'{"bad": "\xff\xfe bytes"}',
    b"\xef\xbb\xbf" + b'{"bom": true}',
    b'{"lone": "\\ud83d"}',
    b"NaN",
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
    b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    b"{" + b'"a": {' * 150 + b"}" * 151,
    b"[" * 5000 + b"]" * 5000,
    b'{"brackets": "' + b"[" * 300 + b'"}',
    b'{"crlf": 1}\r',
]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_the_script_and_the_shared_reader_agree_line_for_line(newline: bytes) -> None:
    """Two readers must exist (the script runs without dsh_common): same bytes, same answer."""
    raw = newline.join(CORPUS) + newline
    events, skipped = redaction.read_lines(raw)
    shared = read_json_lines(raw)
    assert events == [value for value in shared.values if isinstance(value, dict)]
    assert skipped == shared.skipped == 5  # two malformed, three too deep
    assert redaction.MAX_DEPTH == MAX_DEPTH

"""Candidate discovery: watermark, idle hour, batch cut, symlinks, zstd by magic bytes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import zstandard

from dsh_memory.sync.sessions import (
    Candidate,
    SessionSources,
    find_candidates,
    read_session,
    take_batch,
)


def _sources(logs: Any) -> SessionSources:
    return SessionSources(logs.dsh_sessions, logs.claude_projects, logs.codex_sessions)


def test_all_three_sources_are_found_oldest_first(session_logs: Any) -> None:
    codex = session_logs.codex("x", "c", age=3 * 3600)
    dsh = session_logs.dsh("d", "d", age=2 * 3600)
    claude = session_logs.claude("c", "c", age=4 * 3600)
    found = find_candidates(_sources(session_logs), 0, time.time_ns())
    assert [(c.source, c.path) for c in found] == [
        ("claude", claude),
        ("codex", codex),
        ("dsh", dsh),
    ]


def test_the_watermark_and_the_idle_hour_bound_the_window(session_logs: Any) -> None:
    session_logs.dsh("old", "x", age=5 * 3600)
    middle = session_logs.dsh("middle", "x", age=2 * 3600)
    session_logs.dsh("busy", "x", age=60)
    watermark = time.time_ns() - 3 * 3600 * 10**9
    assert [c.path for c in find_candidates(_sources(session_logs), watermark, time.time_ns())] == [
        middle
    ]


def test_symlinked_logs_and_folders_are_skipped(session_logs: Any, tmp_path: Path) -> None:
    real = session_logs.dsh("real", "x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "session.jsonl").write_text("{}\n")
    os.symlink(outside, session_logs.dsh_sessions / "linked")
    os.symlink(real, session_logs.dsh_sessions / "real" / "session-link.jsonl")
    found = find_candidates(_sources(session_logs), 0, time.time_ns() + 10**13)
    assert [c.path for c in found] == [real]


def test_zstd_is_recognised_by_its_magic_bytes(session_logs: Any) -> None:
    path = session_logs.dsh("z", "x", zstd=False)
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"type": "session"}\n'))
    candidate = Candidate("dsh", path, 0, path.stat().st_size)
    assert read_session(candidate) == b'{"type": "session"}\n'


def _candidates(mtimes: list[int]) -> list[Candidate]:
    return [Candidate("dsh", Path(f"/s{i}"), m, 1) for i, m in enumerate(mtimes)]


def test_a_batch_never_splits_one_mtime() -> None:
    twelve = _candidates(list(range(12)))
    assert len(take_batch(twelve)) == 10
    tied = _candidates([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10])
    assert len(take_batch(tied)) == 9  # the three 10s wait together
    one_group = _candidates([5] * 12)
    assert len(take_batch(one_group)) == 12  # larger than a batch: taken whole

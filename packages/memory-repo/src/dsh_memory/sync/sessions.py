"""Candidate sessions for a sync: which agent logs are new, idle, and within the batch.

Three sources are scanned (each folder may be absent):

- DSH session logs under ``--sessions-dir`` (default ``$DSH_HOME/sessions``): files named
  ``session*.jsonl`` or ``session*.jsonl.zstd`` / ``.zst``, plain or zstd (detected by the
  magic bytes, not the name);
- Claude Code transcripts ``<claude-projects>/<project>/<session>.jsonl`` (default
  ``~/.claude/projects``);
- Codex rollouts ``<codex-sessions>/YYYY/MM/DD/rollout-*.jsonl`` (default
  ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``).

A candidate was modified after the ``.last-sync`` watermark and at least one hour ago (a
session still being written is left for a later run). At most :data:`BATCH_LIMIT` are taken
per run, oldest first; the watermark then advances only to the last one taken, so the rest
are found by the next run (the earlier tool's v0.8.1 batch rule). Symlinked logs and
folders are skipped: a link could point the sync at any file on the machine.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh_memory.errors import SyncFailedError, ZstdUnavailableError
from dsh_memory.sync.redaction import ZSTD_MAGIC

BATCH_LIMIT = 10
IDLE_SECONDS = 3600
#: The earlier tool's v0.8.4 caps on one session log, compressed and decompressed.
MAX_SESSION_FILE_BYTES = 64 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024

_DSH_NAME = re.compile(r"^session[A-Za-z0-9._-]*\.jsonl(\.zstd|\.zst)?$")
_DATE_PARTS = (re.compile(r"^[0-9]{4}$"), re.compile(r"^[0-9]{2}$"), re.compile(r"^[0-9]{2}$"))


@dataclass(frozen=True)
class Candidate:
    """One session log to hand to the agent."""

    source: str  # dsh | claude | codex
    path: Path
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class SessionSources:
    dsh: Path
    claude: Path
    codex: Path

    @classmethod
    def defaults(
        cls,
        env: Mapping[str, str],
        *,
        sessions_dir: str | None = None,
        claude_projects: str | None = None,
        codex_sessions: str | None = None,
    ) -> SessionSources:
        home = Path(env.get("HOME") or Path.home())
        dsh_home = Path(env["DSH_HOME"]) if env.get("DSH_HOME") else home / ".dsh"
        codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return cls(
            dsh=Path(sessions_dir) if sessions_dir else dsh_home / "sessions",
            claude=Path(claude_projects) if claude_projects else home / ".claude" / "projects",
            codex=Path(codex_sessions) if codex_sessions else codex_home / "sessions",
        )


def _regular(path: Path) -> os.stat_result | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _directories(path: Path) -> Iterator[Path]:
    """Real sub-folders of ``path`` (symlinks skipped), sorted."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield Path(entry.path)


def _files(path: Path) -> Iterator[tuple[Path, os.stat_result]]:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        info = _regular(Path(entry.path))
        if info is not None:
            yield Path(entry.path), info


def _dsh_logs(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    # Folders are walked without following links; depth is whatever DSH uses.
    stack = [root]
    while stack:
        current = stack.pop()
        yield from ((p, i) for p, i in _files(current) if _DSH_NAME.match(p.name))
        stack.extend(_directories(current))


def _claude_logs(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for project in _directories(root):
        yield from ((p, i) for p, i in _files(project) if p.suffix == ".jsonl")


def _codex_logs(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    for year in _directories(root):
        if not _DATE_PARTS[0].match(year.name):
            continue
        for month in _directories(year):
            if not _DATE_PARTS[1].match(month.name):
                continue
            for day in _directories(month):
                if not _DATE_PARTS[2].match(day.name):
                    continue
                yield from (
                    (p, i)
                    for p, i in _files(day)
                    if p.name.startswith("rollout-") and p.name.endswith(".jsonl")
                )


def find_candidates(sources: SessionSources, watermark_ns: int, now_ns: int) -> list[Candidate]:
    """Every log newer than the watermark and idle for an hour, oldest first."""
    idle_before = now_ns - IDLE_SECONDS * 1_000_000_000
    found: list[Candidate] = []
    for source, logs in (
        ("dsh", _dsh_logs(sources.dsh)),
        ("claude", _claude_logs(sources.claude)),
        ("codex", _codex_logs(sources.codex)),
    ):
        for path, info in logs:
            if watermark_ns < info.st_mtime_ns <= idle_before:
                found.append(Candidate(source, path, info.st_mtime_ns, info.st_size))
    found.sort(key=lambda c: (c.mtime_ns, str(c.path)))
    return found


def take_batch(candidates: list[Candidate], limit: int = BATCH_LIMIT) -> list[Candidate]:
    """The first ``limit`` candidates, never splitting a group with one mtime.

    The watermark moves to the last taken mtime; a left-out log with that same mtime would
    then never be found again, so a cut inside such a group moves back to its start (or,
    when the group alone is larger than the limit, takes the whole group).
    """
    if len(candidates) <= limit:
        return list(candidates)
    cut = limit
    boundary = candidates[limit].mtime_ns
    while cut > 0 and candidates[cut - 1].mtime_ns == boundary:
        cut -= 1
    if cut == 0:
        cut = limit
        while cut < len(candidates) and candidates[cut].mtime_ns == boundary:
            cut += 1
    return candidates[:cut]


def read_session(candidate: Candidate) -> bytes:
    """The log's JSON lines, decompressed when the file is zstd (bounded both ways)."""
    if candidate.size > MAX_SESSION_FILE_BYTES:
        raise SyncFailedError(f"session log {candidate.path.name} is larger than the cap")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(candidate.path, flags)
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(MAX_SESSION_FILE_BYTES + 1)
    except OSError as exc:
        raise SyncFailedError(f"session log {candidate.path.name} cannot be read: {exc}") from exc
    if not raw.startswith(ZSTD_MAGIC):
        return raw
    try:
        import zstandard  # noqa: PLC0415 - only zstd logs need it
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ZstdUnavailableError("the zstandard module is not installed") from exc
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(raw)
        data = reader.read(MAX_DECOMPRESSED_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise SyncFailedError(f"session log {candidate.path.name} is not valid zstd") from exc
    if len(data) > MAX_DECOMPRESSED_BYTES:
        raise SyncFailedError(f"session log {candidate.path.name} decompresses past the cap")
    return data

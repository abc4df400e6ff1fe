"""Opt-in automatic extraction after each agent turn (``dsh-knowledge hook stop``).

The Stop hook payload names the session's transcript (Claude Code: ``transcript_path``).
Only messages after the last one already looked at are classified: the highest ``seq``
processed per session is kept in the table ``dshpy_extraction_progress`` (same reasoning as
``dshpy_session_injections``: a ``dshpy_`` name the Node tool never uses, created with
``CREATE TABLE IF NOT EXISTS``, ``user_version`` untouched; at most 1,000 sessions are
remembered, the least recently seen forgotten first). Nothing happens unless extraction is
turned on (``--auto-extract`` or ``DSH_KNOWLEDGE_AUTO_EXTRACT=1``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from dsh_knowledge.extraction import ExtractionReport, extract_candidates
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.transcripts import read_transcript

__all__ = ["AUTO_EXTRACT_ENV", "PROGRESS_TABLE", "auto_extract_enabled", "extract_after_turn"]

AUTO_EXTRACT_ENV = "DSH_KNOWLEDGE_AUTO_EXTRACT"
PROGRESS_TABLE = "dshpy_extraction_progress"
MAX_TRACKED_SESSIONS = 1000


def auto_extract_enabled(flag: bool) -> bool:
    return flag or os.environ.get(AUTO_EXTRACT_ENV, "").strip().lower() in {"1", "true", "yes"}


def _last_seq(store: KnowledgeStore, session_id: str) -> int:
    if not store.table_exists(PROGRESS_TABLE):
        return 0
    row = store.connection.execute(
        f"SELECT last_seq FROM {PROGRESS_TABLE} WHERE session_id = ?",  # noqa: S608 - constant
        (session_id,),
    ).fetchone()
    return int(row[0]) if row else 0


def _remember(store: KnowledgeStore, session_id: str, last_seq: int) -> None:
    table = PROGRESS_TABLE

    def work() -> None:
        db = store.connection
        if store.kind == "sqlite":  # PostgreSQL: created by the schema's migrations
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (session_id TEXT PRIMARY KEY NOT NULL, "
                "last_seq INTEGER NOT NULL, seen_ms INTEGER NOT NULL)"
            )
        db.execute(
            f"INSERT INTO {table} (session_id, last_seq, seen_ms) VALUES (?, ?, ?) "  # noqa: S608
            f"ON CONFLICT (session_id) DO UPDATE SET last_seq = {store.greatest}("
            f"{table}.last_seq, excluded.last_seq), "
            "seen_ms = excluded.seen_ms",
            (session_id, last_seq, int(time.time() * 1000)),
        )
        db.execute(
            f"DELETE FROM {table} WHERE session_id IN (SELECT session_id FROM {table} "  # noqa: S608
            f"ORDER BY seen_ms DESC LIMIT {store.no_limit} OFFSET ?)",
            (MAX_TRACKED_SESSIONS,),
        )

    store.write(work)


def extract_after_turn(
    payload: Mapping[str, Any], *, db: str | os.PathLike[str], project: str | None
) -> ExtractionReport | None:
    """Admit candidates from the turns of the payload's transcript not yet looked at."""
    session = payload.get("session_id")
    path = payload.get("transcript_path")
    cwd = payload.get("cwd")
    if not all(isinstance(value, str) and value.strip() for value in (session, path, cwd)):
        return None
    assert isinstance(session, str) and isinstance(path, str) and isinstance(cwd, str)  # noqa: S101
    if not os.path.isabs(cwd) or not os.path.isfile(path):
        return None
    from dsh_knowledge.hooks import open_existing_store  # noqa: PLC0415 - one door

    store = open_existing_store(db)
    if store is None:
        return None
    try:
        transcript = read_transcript(path)
        done = _last_seq(store, session)
        turns = [[m for m in turn if m.seq > done] for turn in transcript.turns]
        turns = [turn for turn in turns if turn]
        if not turns:
            return None
        from dsh_knowledge.workspace_identity import workspace_identity  # noqa: PLC0415

        report = extract_candidates(
            KnowledgeRepository(store),
            turns,
            session_id=session,
            workspace=workspace_identity(cwd) or cwd,
            project=project,
        )
        _remember(store, session, max(m.seq for turn in turns for m in turn))
        return report
    finally:
        store.close()

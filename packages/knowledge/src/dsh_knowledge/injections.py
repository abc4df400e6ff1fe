"""Which knowledge ids were already injected into which agent session (across processes).

Every hook call is a new process, so the record lives in the knowledge database, in a table
of its own: ``dshpy_session_injections``. The ``dshpy_`` prefix keeps it apart from every
name the earlier Node tool uses or may add (its objects all start with ``knowledge``); it is
created with ``CREATE TABLE IF NOT EXISTS`` outside the numbered migrations, and
``user_version`` is not touched, so the Node tool opens the file exactly as before and never
reads the table. Bounds: at most 256 ids per session (the oldest are forgotten first), at
most 1,000 sessions, and a session idle for more than 24 hours is dropped entirely. The
record is written best effort (at most a 1 s wait for a busy file, then skipped).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from dsh_knowledge._store_base import KnowledgeStore

__all__ = [
    "INJECTION_TABLE",
    "MAX_IDS_PER_SESSION",
    "MAX_TRACKED_SESSIONS",
    "SESSION_IDLE_SECONDS",
    "injected_ids",
    "record_injection",
]

INJECTION_TABLE = "dshpy_session_injections"
MAX_IDS_PER_SESSION = 256
MAX_TRACKED_SESSIONS = 1000
SESSION_IDLE_SECONDS = 24 * 3600
MAX_SESSION_ID_CHARS = 256
# The hook runs before every prompt: waiting 60 s for a busy database (the store's writer
# retry) is not acceptable there. The record is best effort (KnowledgeStore.best_effort_write:
# about a second's wait, then skipped), and the worst outcome is that an item is shown once
# more later.

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {INJECTION_TABLE} ("
    "session_id TEXT NOT NULL, knowledge_id TEXT NOT NULL, injected_ms INTEGER NOT NULL, "
    "PRIMARY KEY (session_id, knowledge_id))"
)


def _now_ms() -> int:
    return int(time.time() * 1000)


def injected_ids(store: KnowledgeStore, session_id: str, *, now_ms: int | None = None) -> set[str]:
    """Ids injected into ``session_id`` that are still remembered (idle sessions forget)."""
    if len(session_id) > MAX_SESSION_ID_CHARS or not store.table_exists(INJECTION_TABLE):
        return set()
    cutoff = (now_ms if now_ms is not None else _now_ms()) - SESSION_IDLE_SECONDS * 1000
    rows = store.connection.execute(
        f"SELECT knowledge_id, injected_ms FROM {INJECTION_TABLE} WHERE session_id = ?",  # noqa: S608 - constant table name
        (session_id,),
    ).fetchall()
    if not rows or max(ms for _, ms in rows) < cutoff:
        return set()
    return {knowledge_id for knowledge_id, _ in rows}


def record_injection(
    store: KnowledgeStore, session_id: str, ids: Iterable[str], *, now_ms: int | None = None
) -> None:
    """Remember ``ids`` for ``session_id`` and enforce every bound in the same transaction."""
    wanted = list(dict.fromkeys(ids))
    if not wanted or len(session_id) > MAX_SESSION_ID_CHARS:
        return
    moment = now_ms if now_ms is not None else _now_ms()
    table = INJECTION_TABLE

    def work() -> None:
        db = store.connection
        if store.kind == "sqlite":  # PostgreSQL: created by the schema's migrations
            db.execute(_CREATE)
        cutoff = moment - SESSION_IDLE_SECONDS * 1000
        # Idle sessions go first, so a resumed-after-a-day session starts afresh.
        db.execute(
            f"DELETE FROM {table} WHERE session_id IN (SELECT session_id FROM {table} "  # noqa: S608
            "GROUP BY session_id HAVING max(injected_ms) < ?)",
            (cutoff,),
        )
        # One statement per 300 ids (one round trip to a server, not one per id).
        for start in range(0, len(wanted), 300):
            chunk = wanted[start : start + 300]
            db.execute(
                f"INSERT INTO {table} (session_id, knowledge_id, injected_ms) VALUES "  # noqa: S608
                + ", ".join("(?, ?, ?)" for _ in chunk)
                + " ON CONFLICT (session_id, knowledge_id) "
                "DO UPDATE SET injected_ms = excluded.injected_ms",
                [value for knowledge_id in chunk for value in (session_id, knowledge_id, moment)],
            )
        db.execute(
            f"DELETE FROM {table} WHERE session_id = ? AND knowledge_id NOT IN ("  # noqa: S608
            f"SELECT knowledge_id FROM {table} WHERE session_id = ? "
            "ORDER BY injected_ms DESC, knowledge_id LIMIT ?)",
            (session_id, session_id, MAX_IDS_PER_SESSION),
        )
        db.execute(
            f"DELETE FROM {table} WHERE session_id IN (SELECT session_id FROM {table} "  # noqa: S608
            f"GROUP BY session_id ORDER BY max(injected_ms) DESC LIMIT {store.no_limit} OFFSET ?)",
            (MAX_TRACKED_SESSIONS,),
        )

    store.best_effort_write(work)

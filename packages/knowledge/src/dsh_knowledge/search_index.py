"""The full-text index that narrows retrieval candidates without ever changing results.

Why it cannot change results: retrieval keeps an item only if at least one query token
matches a content token exactly, or "partially" (both at least 4 characters and one
contains the other). We index each item's *token stream* - its tokens joined by single
spaces and padded with a space at both ends - in an FTS5 table with the ``trigram``
tokenizer in case-sensitive mode, where a quoted phrase matches exactly the rows whose text
contains it as a substring. So for a query token ``q``:

* ``" q "`` (padded) finds exactly the rows having ``q`` as a whole token (exact match);
* ``"q"`` finds the rows where ``q`` lies inside a token, i.e. ``q`` is contained in a
  content token (partial match, one direction);
* ``" s "`` for every substring ``s`` of ``q`` of length >= 4 finds the rows having a
  token contained in ``q`` (partial match, the other direction).

The OR of those phrases over all query tokens selects every row that the full scan would
keep (and, up to pathological 33+-character tokens where a wider 4-gram net is used, no
other). The ranking then runs the very same Python scoring over the same token streams, so
the ranked output is identical; a hypothesis property test compares the two paths.

Compatibility with the earlier Node tool: the index lives in three extra objects
(``knowledge_search_doc``, the FTS5 table ``knowledge_fts`` over it, and the queue
``knowledge_search_pending``) plus three triggers that only insert an id into the queue.
The Node tool checks nothing but ``user_version`` (unchanged: 3), never reads these
tables, and its writes fire triggers that are plain SQL - it needs neither FTS5 nor our
tokenizer. We drain the queue (re-tokenising in Python) before every indexed retrieval, so
items it wrote or changed are indexed before they could be missed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dsh_knowledge.tokenize import content_tokens, normalize_text
from dsh_knowledge.vectors import refresh_touched

if TYPE_CHECKING:
    from dsh_knowledge.store import KnowledgeStore

MIN_PARTIAL_TOKEN_LENGTH = 4
# Above this length a query token's substrings are too many to list as phrases; such a
# (rare: hashes, pasted blobs) query is answered by the full scan instead.
MAX_EXACT_SUBSTRING_TOKEN_LENGTH = 32
_CHUNK = 500

# Columns of knowledge_search_doc besides doc_id, id, toks, norm: a copy of what ranking
# needs from knowledge and knowledge_evidence, so that a query touches one table per hit.
DOC_METADATA = (
    "workspace",
    "project",
    "status",
    "creation_origin",
    "type",
    "created_at",
    "updated_at",
    "evidence_count",
)

_INSERT_DOC = (
    "INSERT INTO knowledge_search_doc (doc_id, id, toks, norm, "  # noqa: S608 - fixed names
    + ", ".join(DOC_METADATA)
    + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

INDEX_DDL = (
    """CREATE TABLE IF NOT EXISTS knowledge_search_doc (
  doc_id INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  toks TEXT NOT NULL,
  norm TEXT NOT NULL,
  workspace TEXT NOT NULL,
  project TEXT,
  status TEXT NOT NULL,
  creation_origin TEXT NOT NULL,
  type TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  evidence_count INTEGER NOT NULL
)""",
    """CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5(
  toks, norm, content='knowledge_search_doc', content_rowid='doc_id',
  tokenize='trigram case_sensitive 1'
)""",
    # Newest-first walk of a workspace, to find the newest matching item without reading
    # every hit of a broad query.
    "CREATE INDEX IF NOT EXISTS knowledge_search_doc_recent"
    " ON knowledge_search_doc (workspace, updated_at)",
    "CREATE TABLE IF NOT EXISTS knowledge_search_pending (id TEXT PRIMARY KEY NOT NULL)",
    # Every token ever indexed (never pruned: a stale term only costs an FTS phrase that
    # matches nothing). Lets a query skip phrases for strings that are nobody's token.
    "CREATE TABLE IF NOT EXISTS knowledge_search_vocab (term TEXT PRIMARY KEY NOT NULL)"
    " WITHOUT ROWID",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_after_insert AFTER INSERT ON knowledge
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (new.id);
END""",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_after_update AFTER UPDATE ON knowledge
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (old.id);
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (new.id);
END""",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_after_delete AFTER DELETE ON knowledge
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (old.id);
END""",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_evidence_insert
AFTER INSERT ON knowledge_evidence
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (new.knowledge_id);
END""",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_evidence_update
AFTER UPDATE ON knowledge_evidence
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (old.knowledge_id);
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (new.knowledge_id);
END""",
    """CREATE TRIGGER IF NOT EXISTS knowledge_search_evidence_delete
AFTER DELETE ON knowledge_evidence
BEGIN
  INSERT OR IGNORE INTO knowledge_search_pending (id) VALUES (old.knowledge_id);
END""",
)

INDEX_OBJECTS = (
    "knowledge_search_doc",
    "knowledge_search_doc_recent",
    "knowledge_fts",
    "knowledge_search_pending",
    "knowledge_search_vocab",
    "knowledge_search_after_insert",
    "knowledge_search_after_update",
    "knowledge_search_after_delete",
    "knowledge_search_evidence_insert",
    "knowledge_search_evidence_update",
    "knowledge_search_evidence_delete",
)


def token_stream(tokens: Sequence[str]) -> str:
    """The indexed text: tokens joined by single spaces, padded by one space at both ends."""
    return " " + " ".join(tokens) + " "


def _chunks(values: Sequence[str], size: int = _CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def index_pending(connection: sqlite3.Connection) -> list[str]:
    """Re-index every queued id. Call inside a write transaction; returns the ids."""
    pending = [row[0] for row in connection.execute("SELECT id FROM knowledge_search_pending")]
    if not pending:
        return pending
    next_doc = int(
        connection.execute("SELECT coalesce(max(doc_id), 0) FROM knowledge_search_doc").fetchone()[
            0
        ]
    )
    for chunk in _chunks(pending):
        marks = ",".join("?" * len(chunk))
        stale = connection.execute(
            f"SELECT doc_id, toks, norm FROM knowledge_search_doc WHERE id IN ({marks})",  # noqa: S608 - only placeholders
            chunk,
        ).fetchall()
        if stale:
            # External-content FTS5 deletes need the old indexed text.
            connection.executemany(
                "INSERT INTO knowledge_fts (knowledge_fts, rowid, toks, norm) "
                "VALUES ('delete', ?, ?, ?)",
                stale,
            )
            connection.executemany(
                "DELETE FROM knowledge_search_doc WHERE doc_id = ?", [(row[0],) for row in stale]
            )
        docs: list[tuple[Any, ...]] = []
        terms: set[str] = set()
        for item_id, content, *metadata in connection.execute(
            "SELECT k.id, k.content, k.workspace, k.project, k.status, k.creation_origin, "  # noqa: S608 - only placeholders
            "k.type, k.created_at, k.updated_at, (SELECT count(*) FROM knowledge_evidence e "
            f"WHERE e.knowledge_id = k.id) FROM knowledge k WHERE k.id IN ({marks})",
            chunk,
        ):
            next_doc += 1
            # norm is padded like toks so that a phrase can be matched on word boundaries.
            padded = f" {normalize_text(content)} "
            tokens = content_tokens(content)
            terms.update(tokens)
            docs.append((next_doc, item_id, token_stream(tokens), padded, *metadata))
        connection.executemany(_INSERT_DOC, docs)
        connection.executemany(
            "INSERT INTO knowledge_fts (rowid, toks, norm) VALUES (?, ?, ?)",
            [(doc[0], doc[2], doc[3]) for doc in docs],
        )
        connection.executemany(
            "INSERT OR IGNORE INTO knowledge_search_vocab (term) VALUES (?)",
            [(term,) for term in terms if len(term) >= 2],
        )
    connection.execute("DELETE FROM knowledge_search_pending")
    return pending


def _index_exists(connection: sqlite3.Connection) -> bool:
    names = {
        row[0]
        for row in connection.execute(
            f"SELECT name FROM sqlite_master WHERE name IN ({','.join('?' * len(INDEX_OBJECTS))})",  # noqa: S608 - placeholders only
            INDEX_OBJECTS,
        )
    }
    if names != set(INDEX_OBJECTS):
        return False
    columns = {row[1] for row in connection.execute("PRAGMA table_info(knowledge_search_doc)")}
    return set(DOC_METADATA) <= columns


def _rebuild(connection: sqlite3.Connection) -> None:
    # Drop whatever is there (an older layout, a half-dropped set) and start clean.
    connection.execute("DROP TABLE IF EXISTS knowledge_fts")
    connection.execute("DROP TABLE IF EXISTS knowledge_search_doc")
    for statement in INDEX_DDL:
        connection.execute(statement)
    connection.execute("DELETE FROM knowledge_search_pending")
    connection.execute("INSERT INTO knowledge_search_pending (id) SELECT id FROM knowledge")
    index_pending(connection)


def ensure_search_index(store: KnowledgeStore) -> bool:
    """Create the index objects if missing; rebuild if the index drifted from the table.

    Drift cannot happen through either tool (triggers queue every change), only through
    hand edits such as dropping a trigger, so the check is a cheap count on open. Returns
    False - retrieval then uses the full scan, with the same results - when this SQLite
    has no FTS5 or no trigram tokenizer (changes stay queued for a build that has them).
    """
    connection = store.connection
    try:
        _ensure(store, connection)
    except sqlite3.OperationalError as error:
        message = str(error).lower()
        if "fts5" in message or "tokenizer" in message:
            return False
        raise
    return True


def _ensure(store: KnowledgeStore, connection: sqlite3.Connection) -> None:

    def in_sync() -> bool:
        if not _index_exists(connection):
            return False
        pending = connection.execute("SELECT count(*) FROM knowledge_search_pending").fetchone()
        if pending[0]:
            return True  # queued work is drained by sync_search_index below
        counts = connection.execute(
            "SELECT (SELECT count(*) FROM knowledge), (SELECT count(*) FROM knowledge_search_doc)"
        ).fetchone()
        return bool(counts[0] == counts[1])

    if not in_sync():
        store.write(lambda: None if in_sync() else _rebuild(connection))
    sync_search_index(store)


def sync_search_index(store: KnowledgeStore) -> None:
    """Drain the queue of changed ids (written by either tool) before an indexed query."""
    connection = store.connection
    if connection.execute("SELECT 1 FROM knowledge_search_pending LIMIT 1").fetchone() is None:
        return

    def work() -> None:
        # Also when called while the store is still being opened (before its own writes
        # drain the queue): the stored vectors of those items are brought in step too.
        touched = index_pending(connection)
        if touched:
            refresh_touched(store, touched)

    store.write(work)


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def exact_expression(token: str) -> str:
    """MATCH expression for the rows having ``token`` as a whole token."""
    return "toks : " + _phrase(f" {token} ")


def known_terms(connection: sqlite3.Connection, candidates: Iterable[str]) -> set[str]:
    """The candidates that are (or once were) somebody's token."""
    wanted = sorted(set(candidates))
    found: set[str] = set()
    for chunk in _chunks(wanted):
        marks = ",".join("?" * len(chunk))
        found.update(
            row[0]
            for row in connection.execute(
                f"SELECT term FROM knowledge_search_vocab WHERE term IN ({marks})",  # noqa: S608 - placeholders only
                chunk,
            )
        )
    return found


def inner_substrings(token: str) -> list[str]:
    """Substrings of ``token`` of length 4 .. len-1: the tokens a partial match may name."""
    length = len(token)
    return [
        token[start : start + size]
        for size in range(MIN_PARTIAL_TOKEN_LENGTH, length)
        for start in range(length - size + 1)
    ]


def match_expression(token: str, known: set[str] | None = None) -> str | None:
    """MATCH expression for the rows where ``token`` matches exactly *or* partially.

    None when the token is shorter than 4 characters (only exact matches count) or longer
    than :data:`MAX_EXACT_SUBSTRING_TOKEN_LENGTH` (too many substrings to list; the caller
    then uses the full scan for the query). With ``known`` (the vocabulary terms among the
    token's substrings) the substrings that are nobody's token are left out: they could
    not match anything, and each costs a phrase lookup.
    """
    length = len(token)
    if length < MIN_PARTIAL_TOKEN_LENGTH or length > MAX_EXACT_SUBSTRING_TOKEN_LENGTH:
        return None
    phrases = dict.fromkeys([_phrase(token)])  # q inside a token (covers q == token too)
    for piece in inner_substrings(token):
        if known is None or piece in known:
            phrases[_phrase(f" {piece} ")] = None  # a whole token inside q
    return "toks : (" + " OR ".join(phrases) + ")"


def phrase_expression(normalized_query: str) -> str:
    """MATCH expression for the rows whose normalised content contains the whole query."""
    return "norm : " + _phrase(f" {normalized_query} ")

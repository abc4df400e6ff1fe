"""The PostgreSQL search index: our token stream under a ``pg_trgm`` GIN index.

The same idea as the SQLite index (:mod:`dsh_knowledge.search_index`): each item's tokens,
joined by single spaces and padded at both ends (``" tok1 tok2 "``), live in
``knowledge_search_doc.toks``. ``LIKE '% q %'`` then finds exactly the items having ``q`` as a
whole token, ``LIKE '%q%'`` those where ``q`` lies inside a token, and ``LIKE '% s %'`` for
the substrings ``s`` of ``q`` (4+ characters, and somebody's token per the vocabulary table)
those having a token inside ``q`` - together every item the full scan would keep. The GIN
trigram index answers all of them in one ``LIKE ANY`` scan. Trigrams are built from our own
tokens, so Chinese works (Han text is already split into bigrams by our tokenizer), provided
the database's character type is UTF-8 (``C.UTF-8``, ``en_US.UTF-8``...): under ``C`` a Han
character is not alphanumeric to ``pg_trgm`` and the index can only scan everything (the
results stay the same; only the speed differs).

Which items match, and how, is then decided by the very Python code the full scan runs
(:func:`dsh_knowledge.scoring.match_text` over the stored token stream and normalised
text); scoring and ordering are Python too, so PostgreSQL cannot rank differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_knowledge._store_base import escape_like
from dsh_knowledge.scoring import Query, Row, match_text
from dsh_knowledge.search_index import (
    MAX_EXACT_SUBSTRING_TOKEN_LENGTH,
    MIN_PARTIAL_TOKEN_LENGTH,
    inner_substrings,
    token_stream,
)
from dsh_knowledge.tokenize import content_tokens, normalize_text

if TYPE_CHECKING:
    from dsh_knowledge._pg_connection import PgConnection

__all__ = ["candidate_rows", "index_pending"]

_CHUNK = 500
_DOC_COLUMNS = (
    "id, toks, norm, workspace, project, status, creation_origin, type, created_at, "
    "updated_at, evidence_count"
)
_UPSERT_DOCS = (
    f"INSERT INTO knowledge_search_doc ({_DOC_COLUMNS}) "  # noqa: S608 - fixed names
    "SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], "
    "?::text[], ?::text[], ?::text[], ?::text[], ?::int[]) "
    "ON CONFLICT (id) DO UPDATE SET toks = excluded.toks, norm = excluded.norm, "
    "workspace = excluded.workspace, project = excluded.project, status = excluded.status, "
    "creation_origin = excluded.creation_origin, type = excluded.type, "
    "created_at = excluded.created_at, updated_at = excluded.updated_at, "
    "evidence_count = excluded.evidence_count"
)


def index_pending(db: PgConnection) -> int:
    """Re-index every queued id; call inside a write transaction. Returns how many ids.

    Ids are handled in sorted order (and the vocabulary terms too), so two writers that
    index overlapping sets take their locks in the same order.
    """
    pending = [row[0] for row in db.execute("SELECT id FROM knowledge_search_pending ORDER BY id")]
    if not pending:
        return 0
    for start in range(0, len(pending), _CHUNK):
        chunk = pending[start : start + _CHUNK]
        rows = db.execute(
            "SELECT k.id, k.content, k.workspace, k.project, k.status, k.creation_origin, "
            "k.type, k.created_at, k.updated_at, (SELECT count(*) FROM knowledge_evidence e "
            "WHERE e.knowledge_id = k.id) FROM knowledge k WHERE k.id = ANY(?) ORDER BY k.id",
            (chunk,),
        ).fetchall()
        present = [row[0] for row in rows]
        db.execute(
            "DELETE FROM knowledge_search_doc WHERE id = ANY(?) AND NOT (id = ANY(?))",
            (chunk, present),
        )
        columns: list[list[Any]] = [[] for _ in range(11)]
        terms: set[str] = set()
        for item_id, content, *metadata in rows:
            tokens = content_tokens(content)
            terms.update(t for t in tokens if 2 <= len(t) <= MAX_EXACT_SUBSTRING_TOKEN_LENGTH)
            values = [item_id, token_stream(tokens), f" {normalize_text(content)} ", *metadata]
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        if rows:
            db.execute(_UPSERT_DOCS, columns)
        if terms:
            db.execute(
                "INSERT INTO knowledge_search_vocab (term) SELECT unnest(?::text[]) "
                "ON CONFLICT DO NOTHING",
                (sorted(terms),),
            )
    db.execute("DELETE FROM knowledge_search_pending WHERE id = ANY(?)", (pending,))
    return len(pending)


def _patterns(db: PgConnection, query: Query) -> list[str]:
    """The LIKE patterns whose union is every item some query token matches."""
    wanted = {
        piece
        for token in query.tokens
        if len(token) >= MIN_PARTIAL_TOKEN_LENGTH
        for piece in inner_substrings(token)
    }
    known: set[str] = set()
    if wanted:
        known = {
            row[0]
            for row in db.execute(
                "SELECT term FROM knowledge_search_vocab WHERE term = ANY(?)", (sorted(wanted),)
            )
        }
    patterns: dict[str, None] = {}
    for token in query.tokens:
        escaped = escape_like(token)
        if len(token) < MIN_PARTIAL_TOKEN_LENGTH:
            patterns[f"% {escaped} %"] = None  # only an exact token counts
            continue
        patterns[f"%{escaped}%"] = None  # the token inside a token (or equal to one)
        for piece in inner_substrings(token):
            if piece in known:
                patterns[f"% {escape_like(piece)} %"] = None  # a whole token inside it
    return list(patterns)


def candidate_rows(db: PgConnection, query: Query, where: str, params: Sequence[Any]) -> list[Row]:
    """Every eligible item matching some query token, with its match, unscored.

    ``where`` is the eligibility over alias ``d`` (the index's copy of the item's scope,
    status, origin and type). Every query token must be at most
    :data:`MAX_EXACT_SUBSTRING_TOKEN_LENGTH` characters (the caller scans otherwise).
    """
    patterns = _patterns(db, query)
    cursor = db.execute(
        "SELECT d.id, d.type, d.project, d.status, d.created_at, d.updated_at, "  # noqa: S608 - fixed clauses
        f"d.evidence_count, d.toks, d.norm FROM knowledge_search_doc d WHERE {where} "
        "AND d.toks LIKE ANY(?)",
        [*params, patterns],
    )
    rows: list[Row] = []
    for item_id, kind, project, status, created, updated, count, stream, norm in cursor:
        tokens = stream[1:-1].split(" ") if len(stream) > 2 else []
        row = Row(item_id, kind, project, status, created, updated, count, tokens, stream,
                  norm[1:-1])  # fmt: skip
        row.match = match_text(query, row)
        if row.match[1] or row.match[2]:
            rows.append(row)
    return rows

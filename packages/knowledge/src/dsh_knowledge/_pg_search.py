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

How each hit matches is computed from the same ``LIKE`` tests and its rank order from the
scoring rules, with timestamps parsed by our Python code at indexing
(:mod:`dsh_knowledge._pg_ranked`); the score and explanation of every row read are then
computed by :mod:`dsh_knowledge.scoring`, and a property test holds the whole to the full
scan's output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_knowledge._store_base import escape_like
from dsh_knowledge.models import parse_timestamp_ms
from dsh_knowledge.scoring import Query
from dsh_knowledge.search_index import (
    MAX_EXACT_SUBSTRING_TOKEN_LENGTH,
    MIN_PARTIAL_TOKEN_LENGTH,
    inner_substrings,
    token_stream,
)
from dsh_knowledge.tokenize import content_tokens, normalize_text

if TYPE_CHECKING:
    from dsh_knowledge._pg_connection import PgConnection

__all__ = ["index_pending", "token_patterns"]

_CHUNK = 500
_DOC_COLUMNS = (
    "id",
    "toks",
    "norm",
    "workspace",
    "project",
    "status",
    "creation_origin",
    "type",
    "created_at",
    "updated_at",
    "evidence_count",
    "created_ms",
    "updated_ms",
)
_DOC_TYPES = ("text",) * 10 + ("int", "bigint", "bigint")
_UPSERT_DOCS = (
    f"INSERT INTO knowledge_search_doc ({', '.join(_DOC_COLUMNS)}) "  # noqa: S608 - fixed names
    f"SELECT * FROM unnest({', '.join(f'?::{kind}[]' for kind in _DOC_TYPES)}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in _DOC_COLUMNS[1:])
)


def index_pending(db: PgConnection) -> list[str]:
    """Re-index every queued id; call inside a write transaction. Returns the ids.

    Ids are handled in sorted order (and the vocabulary terms too), so two writers that
    index overlapping sets take their locks in the same order.
    """
    pending = [row[0] for row in db.execute("SELECT id FROM knowledge_search_pending ORDER BY id")]
    if not pending:
        return pending
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
        columns: list[list[Any]] = [[] for _ in _DOC_COLUMNS]
        terms: set[str] = set()
        for item_id, content, *metadata in rows:
            tokens = content_tokens(content)
            terms.update(t for t in tokens if 2 <= len(t) <= MAX_EXACT_SUBSTRING_TOKEN_LENGTH)
            created, updated = metadata[5], metadata[6]
            values = [
                item_id,
                token_stream(tokens),
                f" {normalize_text(content)} ",
                *metadata,
                parse_timestamp_ms(created),
                parse_timestamp_ms(updated),
            ]
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
    return pending


def token_patterns(db: PgConnection, query: Query) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Per query token, the literal needles of its match in a token stream: the exact one
    (``" q "``) and the partial ones (``"q"`` and ``" s "`` for every substring ``s`` that is
    somebody's token; none below 4 characters, where only the exact token counts); and the
    LIKE patterns whose union is every item some query token matches (for the index)."""
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
    every: dict[str, None] = {}
    per_token: list[tuple[str, list[str]]] = []
    for token in query.tokens:
        partial: list[str] = []
        if len(token) >= MIN_PARTIAL_TOKEN_LENGTH:
            # The token inside a token (or equal to one), and every whole token inside it.
            partial = [
                token,
                *(f" {piece} " for piece in inner_substrings(token) if piece in known),
            ]
        per_token.append((f" {token} ", partial))
        every.update(
            dict.fromkeys(f"%{escape_like(needle)}%" for needle in partial or [f" {token} "])
        )
    return per_token, list(every)

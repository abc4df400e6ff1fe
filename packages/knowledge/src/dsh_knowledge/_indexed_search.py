"""The indexed retrieval path: FTS hits scored and ordered in SQL, read lazily.

See :mod:`dsh_knowledge.search_index` for why the index selects exactly the matching items;
this module turns those hits into rows in final rank order for :mod:`dsh_knowledge.retrieval`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsh_knowledge.models import parse_timestamp_ms
from dsh_knowledge.scoring import Query, Row
from dsh_knowledge.search_index import (
    exact_expression,
    inner_substrings,
    known_terms,
    match_expression,
    phrase_expression,
)

if TYPE_CHECKING:
    from dsh_knowledge.repository import KnowledgeRepository

_CANONICAL_TIMESTAMP = (
    "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z"
)
_TEMP_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS retrieval_hits (doc INTEGER PRIMARY KEY, "
    "exact_mask INTEGER NOT NULL, match_mask INTEGER NOT NULL, text INTEGER NOT NULL, "
    "phrase INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS temp.retrieval_hits_text ON retrieval_hits (text)",
)
_HIT_SELECT = "SELECT rowid, ?, ?, ?, ?, ? FROM knowledge_fts WHERE knowledge_fts MATCH ?"
_HITS_JOIN = (
    "FROM temp.retrieval_hits h CROSS JOIN knowledge_search_doc d ON d.doc_id = h.doc WHERE "
)
_ROW_SELECT = (
    "SELECT h.text, h.exact_mask, h.match_mask, h.phrase, d.id, d.type, d.project, d.status, "
    "d.created_at, d.updated_at, d.evidence_count, d.toks "
)
_DAY = 86_400_000
# Up to this many hits the newest matching item is found from the hits themselves.
_FEW_HITS = 2000


class IndexedSearch:
    """One indexed retrieval: FTS hits scored in SQL, then read in rank order, lazily.

    Text points depend only on which query tokens match, so SQLite computes them for every
    hit (per-token FTS queries and a GROUP BY, no Python per hit) into a temporary table.
    With canonical timestamps SQLite also orders the hits by the complete ranking key
    (text, scope + status + type + evidence + freshness, updatedAt, createdAt, id) and we
    read only as many rows as the result walk needs. Otherwise we read one text tier at a
    time and order it with the same Python code as the full scan.
    """

    def __init__(self, repository: KnowledgeRepository, query: Query) -> None:
        self.repository = repository
        self.db = repository.store.connection
        self.query = query
        self.canonical = False

    def _fill_hits(self) -> int:
        for statement in _TEMP_DDL:
            self.db.execute(statement)
        self.db.execute("DELETE FROM temp.retrieval_hits")
        parts: list[str] = []
        params: list[Any] = []
        # One SELECT per FTS query, each row tagged (exact bit, match bit, exact count,
        # match count, phrase) through bound values. Strings that are nobody's token are
        # left out up front (the vocabulary lookup is far cheaper than an FTS phrase).
        known = known_terms(
            self.db,
            [piece for token in self.query.tokens for piece in [token, *inner_substrings(token)]],
        )
        for position, token in enumerate(self.query.tokens):
            bit = 1 << position
            partial = match_expression(token, known)
            if partial is None:  # shorter than 4: only an exact match counts
                if token in known:
                    parts.append(_HIT_SELECT)
                    params.extend([bit, bit, 1, 1, 0, exact_expression(token)])
            else:
                if token in known:
                    parts.append(_HIT_SELECT)
                    params.extend([bit, 0, 1, 0, 0, exact_expression(token)])
                parts.append(_HIT_SELECT)
                params.extend([0, bit, 0, 1, 0, partial])
        parts.append(_HIT_SELECT)
        params.extend([0, 0, 0, 0, 1, phrase_expression(self.query.normalized)])
        count = len(self.query.tokens)
        # The same arithmetic as _score: 400 * (matched / count), rounded half up.
        self.db.execute(
            "WITH hits (doc, e, m, ec, mc, ph) AS (" + " UNION ALL ".join(parts) + ") "  # noqa: S608 - fixed SQL, bound values
            "INSERT INTO temp.retrieval_hits (doc, exact_mask, match_mask, text, phrase) "
            "SELECT doc, sum(e), sum(m), 1000 * max(ph) + 100 * sum(ec) + 40 * (sum(mc) - sum(ec))"
            f" + CAST(400.0 * (sum(mc) * 1.0 / {count}) + 0.5 AS INTEGER), max(ph) "
            "FROM hits GROUP BY doc HAVING sum(mc) > 0",
            params,
        )
        return int(self.db.execute("SELECT count(*) FROM temp.retrieval_hits").fetchone()[0])

    def _state(self) -> tuple[int, int]:
        # data_version moves on commits by other connections, total_changes on ours.
        return (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)

    def all_canonical(self) -> bool:
        """Whether every timestamp is in toISOString form (then text order is time order).

        Anything else (a hand-edited or legacy row) sends ordering to Python. Cached on the
        store until the database changes; call before touching the temporary table, whose
        writes also count in total_changes (see :meth:`remember`).
        """
        cached = self.repository.store.search_cache.get("canonical")
        if cached is not None and cached[0] == self._state():
            return bool(cached[1])
        row = self.db.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM knowledge_search_doc "
            "WHERE updated_at NOT GLOB ?1 OR created_at NOT GLOB ?1)",
            (_CANONICAL_TIMESTAMP,),
        ).fetchone()
        return bool(row[0])

    def remember(self) -> None:
        """Cache the canonical flag against the state after our own temporary writes."""
        self.repository.store.search_cache["canonical"] = (self._state(), self.canonical)

    def rows(
        self, where: str, params: list[Any], project: str | None, preferred: Sequence[str]
    ) -> tuple[int | None, Any, bool]:
        """(newest matching time, groups of rows, whether the groups are already ordered)."""
        self.canonical = self.all_canonical()
        hits = self._fill_hits()
        if hits == 0:
            return None, iter(()), True
        if not self.canonical:
            values = self.db.execute(f"SELECT d.updated_at {_HITS_JOIN}{where}", params)
            parsed = (parse_timestamp_ms(value) for (value,) in values)
            newest = max((value for value in parsed if value is not None), default=None)
            cursor = self.db.execute(
                f"{_ROW_SELECT}FROM temp.retrieval_hits h INDEXED BY retrieval_hits_text "
                "CROSS JOIN knowledge_search_doc d ON d.doc_id = h.doc "
                f"WHERE {where} ORDER BY h.text DESC",
                params,
            )
            return newest, self._tiers(cursor), False
        if hits <= _FEW_HITS:
            row = self.db.execute(
                f"SELECT max(d.updated_at) {_HITS_JOIN}{where}", params
            ).fetchone()
        else:
            # Many hits: walk the workspace newest-first; the first eligible hit is the newest.
            row = self.db.execute(
                "SELECT d.updated_at FROM knowledge_search_doc d "  # noqa: S608 - fixed clauses
                f"INDEXED BY knowledge_search_doc_recent WHERE {where} "
                "AND d.doc_id IN (SELECT doc FROM temp.retrieval_hits) "
                "ORDER BY d.updated_at DESC LIMIT 1",
                params,
            ).fetchone()
        if row is None or row[0] is None:
            return None, iter(()), True
        newest_text = str(row[0])
        # The score below the text points, in SQL, exactly as _score computes it.
        type_points = "".join(
            f" WHEN {_sql_text(kind)} THEN {(len(preferred) - rank) * 10}"
            for rank, kind in enumerate(preferred)
        )
        age = "CAST(round((julianday(?) - julianday(d.updated_at)) * 86400000.0) AS INTEGER)"
        rest = (
            "(CASE WHEN d.project = ? THEN 1000 ELSE 0 END"
            " + CASE WHEN d.status = 'verified' THEN 100 ELSE 0 END"
            + (f" + CASE d.type{type_points} ELSE 0 END" if preferred else "")
            + " + min(d.evidence_count, 3)"
            f" + CASE WHEN {age} <= {7 * _DAY} THEN 4 WHEN {age} <= {30 * _DAY} THEN 3"
            f" WHEN {age} <= {180 * _DAY} THEN 2 ELSE 1 END)"
        )
        ordered = (
            f"{_ROW_SELECT}{_HITS_JOIN}{where} AND h.text = ? "
            f"ORDER BY {rest} DESC, d.updated_at DESC, d.created_at DESC, d.id ASC"
        )
        ordered_params = [*params, 0, project, newest_text, newest_text, newest_text]
        return parse_timestamp_ms(newest_text), iter([self._by_tier(ordered, ordered_params)]), True

    def eligible_hits(self, where: str, params: list[Any]) -> int:
        """How many eligible items the query matched (after :meth:`rows`), before any limit."""
        row = self.db.execute(f"SELECT count(*) {_HITS_JOIN}{where}", params).fetchone()
        return int(row[0])

    def eligible_hit_ids(self, where: str, params: list[Any]) -> set[str]:
        """The ids of those eligible matches (hybrid ranking counts them with its own)."""
        rows = self.db.execute(f"SELECT d.id {_HITS_JOIN}{where}", params)
        return {row[0] for row in rows}

    def _by_tier(self, sql: str, params: list[Any]) -> Any:
        # One ordered query per text tier, best tier first: a broad query's long tail of
        # weak matches is never read once the result walk is complete.
        texts = [
            text
            for (text,) in self.db.execute(
                "SELECT DISTINCT text FROM temp.retrieval_hits ORDER BY text DESC"
            ).fetchall()
        ]
        text_position = len(params) - 5  # the "h.text = ?" placeholder
        for text in texts:
            params[text_position] = text
            for record in self.db.execute(sql, params):
                yield self._row(record)

    def _row(self, record: Sequence[Any]) -> Row:
        _text, exact_mask, match_mask, phrase, *columns = record
        item_id, item_type, project, status, created, updated, count, stream = columns
        partial_mask = match_mask & ~exact_mask
        row = Row(
            item_id,
            item_type,
            project,
            status,
            created,
            updated,
            count,
            stream[1:-1].split(" ") if len(stream) > 2 else [],
            stream,
            "",
        )
        tokens = self.query.tokens
        row.match = (
            bool(phrase),
            [t for i, t in enumerate(tokens) if exact_mask >> i & 1],
            [t for i, t in enumerate(tokens) if partial_mask >> i & 1],
        )
        return row

    def _stream(self, cursor: Any) -> Any:
        for record in cursor:
            yield self._row(record)

    def _tiers(self, cursor: Any) -> Any:
        tier: list[Row] = []
        tier_text = None
        for record in cursor:
            if tier and record[0] != tier_text:
                yield tier
                tier = []
            tier_text = record[0]
            tier.append(self._row(record))
        if tier:
            yield tier


def _sql_text(value: str) -> str:
    # Only the three validated type names reach here; quoting keeps it a literal anyway.
    return "'" + value.replace("'", "''") + "'"

"""PostgreSQL's indexed retrieval: hits ordered by the ranking key in SQL, read lazily.

The counterpart of :mod:`dsh_knowledge._indexed_search` for SQLite. The trigram index finds
the hits (:mod:`dsh_knowledge._pg_search`); one query computes, per hit, which query tokens
match exactly or partially (the same ``LIKE`` tests the index answers, as bit masks) and
whether the whole normalised query appears, then orders the hits by the complete ranking key
of :mod:`dsh_knowledge.scoring`: text points, project, status, preferred type, evidence,
freshness against the newest hit, then ``updatedAt`` / ``createdAt`` descending (as times,
then as text) and id ascending. The times are the ones our Python code parsed when the item
was indexed (``updated_ms``, ``created_ms``; NULL where Python reads no time), so legacy and
hand-written timestamps order exactly as the full scan orders them. The rows are read in
pages (``LIMIT``: a top-N sort, and a broad query's long tail is never sent); Python rebuilds
each row's match from its masks and computes the score and explanation of every row it looks
at with the shared scoring code. A property test holds the result to the full scan's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from dsh_knowledge._pg_search import token_patterns
from dsh_knowledge.scoring import RETRIEVAL_SCORING, Query, Row

if TYPE_CHECKING:
    from dsh_knowledge._pg_connection import PgConnection

__all__ = ["RankedSearch"]

_FIRST_PAGE = 64
_NEXT_PAGE = 512
_DAY_MS = 86_400_000
# scoring.time_key's place for a timestamp Python cannot parse: after every real time.
_NO_TIME = -(2**62)


def _freshness_case() -> str:
    """Freshness points as scoring._freshness: by age behind the newest hit, in ms."""
    parts = " ".join(
        f"WHEN s.newest_ms - s.updated_ms <= {bucket['max'] * _DAY_MS} THEN {bucket['score']}"
        for bucket in RETRIEVAL_SCORING["freshnessBucketsDays"]
    )
    older = RETRIEVAL_SCORING["olderFreshnessScore"]
    return (
        f"CASE WHEN s.updated_ms IS NULL OR s.newest_ms IS NULL THEN {older} {parts} "
        f"ELSE {older} END"
    )


class RankedSearch:
    """One indexed retrieval on PostgreSQL, inside the caller's read transaction."""

    def __init__(self, db: PgConnection, query: Query) -> None:
        self.db = db
        self.query = query
        self.total = 0
        self._sql_text = ""
        self._values: list[Any] = []
        self._every: list[str] = []

    def _sql(
        self, where: str, params: list[Any], project: str | None, preferred: Sequence[str]
    ) -> tuple[str, list[Any]]:
        tokens = self.query.tokens
        per_token, every = token_patterns(self.db, self.query)
        self._every = every
        tests: list[str] = []
        values: list[Any] = [f" {self.query.normalized} "]  # the phrase
        for bit, (exact, partial) in enumerate(per_token):
            # One code per token and hit: 2 exact, 1 partial, 0 none, each needle searched at
            # most once (strpos: a literal substring, as the LIKE patterns of the index). The
            # partial needles come first: "q" contains the exact " q ", and most hits lack
            # most tokens, so one search usually settles it.
            if partial:
                anywhere = " OR ".join("strpos(d.toks, ?) > 0" for _ in partial)
                test = f"CASE WHEN NOT ({anywhere}) THEN 0 WHEN strpos(d.toks, ?) > 0 THEN 2 ELSE 1"
                values.extend([*partial, exact])
            else:  # shorter than 4 characters: only the exact token counts
                test = "CASE WHEN strpos(d.toks, ?) > 0 THEN 2 ELSE 0"
                values.append(exact)
            tests.append(f"{test} END AS t{bit}")
        bits = range(len(tokens))
        exact_mask = " + ".join(f"{1 << b} * (h.t{b} / 2)" for b in bits)
        match_mask = " + ".join(f"{1 << b} * ((h.t{b} + 1) / 2)" for b in bits)
        exact_count = " + ".join(f"h.t{b} / 2" for b in bits)
        match_count = " + ".join(f"(h.t{b} + 1) / 2" for b in bits)
        type_points = "".join(
            f" WHEN ? THEN {(len(preferred) - rank) * 10}" for rank, _ in enumerate(preferred)
        )
        order = (
            f"p.score DESC, coalesce(p.updated_ms, {_NO_TIME}) DESC, p.updated_at DESC, "
            f"coalesce(p.created_ms, {_NO_TIME}) DESC, p.created_at DESC, p.id ASC"
        )
        # Text points exactly as scoring.score_row: 1000 x phrase + 100 per exact token + 40
        # per partial one + round(400 x coverage) (never a half here: 400m/n, n <= 16).
        # The sort carries no token stream; the page's rows fetch theirs afterwards.
        sql = (
            "SELECT p.id, p.type, p.project, p.status, p.created_at, p.updated_at, "  # noqa: S608 - fixed clauses, bound values
            "p.evidence_count, (SELECT x.toks FROM knowledge_search_doc x "
            "WHERE x.doc_id = p.doc_id), p.phrase, p.exact_mask, p.match_mask, p.total, "
            "p.newest_ms FROM (SELECT s.*, s.text * 10000"
            " + CASE WHEN s.project = ? THEN 1000 ELSE 0 END"
            " + CASE WHEN s.status = 'verified' THEN 100 ELSE 0 END"
            + (f" + CASE s.type{type_points} ELSE 0 END" if preferred else "")
            + f" + least(s.evidence_count, 3) + {_freshness_case()} AS score "  # noqa: S608
            "FROM (SELECT h.doc_id, h.id, h.type, h.project, h.status, h.created_at, "
            "h.updated_at, h.created_ms, h.updated_ms, h.evidence_count, h.phrase, "
            f"{exact_mask} AS exact_mask, {match_mask} AS match_mask, "
            "count(*) OVER () AS total, max(h.updated_ms) OVER () AS newest_ms, "
            f"1000 * h.phrase + 100 * ({exact_count}) "
            f"+ 40 * (({match_count}) - ({exact_count})) "
            f"+ floor(400.0 * ({match_count}) / {len(tokens)} + 0.5)::int AS text "
            "FROM (SELECT d.doc_id, d.id, d.type, d.project, d.status, d.created_at, "
            "d.updated_at, d.created_ms, d.updated_ms, d.evidence_count, "
            f"CASE WHEN strpos(d.norm, ?) > 0 THEN 1 ELSE 0 END AS phrase, {', '.join(tests)} "
            # OFFSET 0 keeps the planner from pulling this subquery up into the next one,
            # which would copy each token test into every expression that reads it
            # (exact_mask, match_mask, text, the score and the sort key): each strpos then
            # ran five or six times per hit instead of once, about half the query's time.
            f"FROM knowledge_search_doc d WHERE {where} AND d.toks LIKE ANY(?) OFFSET 0) h) s) p "
            f"ORDER BY {order} LIMIT ? OFFSET ?"
        )
        return sql, [project, *preferred, *values, *params, every]

    def rows(
        self, where: str, params: list[Any], project: str | None, preferred: Sequence[str]
    ) -> tuple[int | None, Iterator[Iterator[Row]], bool]:
        """(newest matching time, the rows in rank order as one group, True: ordered)."""
        self._sql_text, self._values = self._sql(where, params, project, preferred)
        first = self._page(0, _FIRST_PAGE)
        if not first:
            return None, iter(()), True
        self.total = int(first[0][11])
        newest = first[0][12]
        return (None if newest is None else int(newest)), iter([self._stream(first)]), True

    def hit_ids(self, where: str, params: list[Any]) -> set[str]:
        """The ids of every eligible hit (after :meth:`rows`; hybrid ranking counts them
        with its own): the rows the ranked query's ``total`` counts."""
        rows = self.db.execute(
            f"SELECT d.id FROM knowledge_search_doc d WHERE {where} AND d.toks LIKE ANY(?)",  # noqa: S608 - fixed clauses
            [*params, self._every],
        )
        return {row[0] for row in rows}

    def _page(self, offset: int, size: int) -> list[Sequence[Any]]:
        # Each page is the whole ordered query again, in the caller's one snapshot: the
        # first page (a top-N sort) is nearly always all the result walk reads.
        cursor = self.db.execute(self._sql_text, [*self._values, size, offset])
        return list(cursor.fetchall())

    def _stream(self, first: list[Sequence[Any]]) -> Iterator[Row]:
        page, offset, size = first, 0, _FIRST_PAGE
        while page:
            for record in page:
                yield self._row(record)
            if len(page) < size:
                return
            offset += size
            size = _NEXT_PAGE
            page = self._page(offset, size)

    def _row(self, record: Sequence[Any]) -> Row:
        item_id, kind, project, status, created, updated, count, stream = record[:8]
        phrase, exact_mask, match_mask = record[8:11]
        partial_mask = match_mask & ~exact_mask
        row = Row(
            item_id,
            kind,
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

    def close(self) -> None:
        """Nothing to release (kept for symmetry with the SQLite search)."""

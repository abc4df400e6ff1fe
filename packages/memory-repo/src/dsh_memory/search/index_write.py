"""Rows in and out of the search index's tables, the term table kept in step with them.

Every change goes through here, whether a whole payload is indexed into a new file or one
edited record is replaced in place: a record's ``records`` row and its FTS5 tokens come and
go together, and the totals the ranking's statistics come from (per folder: valid records
and their summed BM25 length) follow each row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_common import jsonio
from dsh_memory.search.index_store import (
    FOLDERS_BY_NUMBER,
    document_tokens,
    record_row,
    record_text_of,
)
from dsh_memory.store.records import RECORD_FOLDERS, Record


@dataclass
class Totals:
    """What the index meta says about the rows: how many records, how many of them invalid,
    and per folder the valid records and their summed BM25 length (a scope's corpus size
    and average length)."""

    records: int = 0
    invalid: int = 0
    folders: dict[str, list[int]] = field(default_factory=dict)
    #: Valid rows replaced or removed since the term table was last merged.
    stale: int = 0

    @classmethod
    def from_meta(cls, meta: dict[str, str]) -> Totals:
        """Raises ValueError (or KeyError) for damaged rows: the index is then built anew."""
        table = jsonio.loads(meta.get("folder_stats", "null"), what="index folder statistics")
        if not isinstance(table, dict):
            raise ValueError("the index has no folder statistics")
        folders: dict[str, list[int]] = {}
        for folder, pair in table.items():
            if folder not in RECORD_FOLDERS or not (
                isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)
            ):
                raise ValueError("damaged index folder statistics")
            folders[folder] = list(pair)
        return cls(
            int(meta["record_count"]),
            int(meta["invalid_count"]),
            folders,
            int(meta.get("stale_rows", "0")),
        )

    @property
    def valid(self) -> int:
        return sum(count for count, _length in self.folders.values())

    def meta(self) -> dict[str, str]:
        kept = {folder: pair for folder, pair in sorted(self.folders.items()) if pair[0]}
        return {
            "record_count": str(self.records),
            "invalid_count": str(self.invalid),
            "folder_stats": jsonio.dumps(kept),
            "stale_rows": str(self.stale),
        }

    def add(self, folder: str, length: int, sign: int) -> None:
        pair = self.folders.setdefault(folder, [0, 0])
        pair[0] += sign
        pair[1] += sign * length


def insert_records(
    connection: sqlite3.Connection, records: Iterable[Record], totals: Totals
) -> None:
    for record in records:
        row, text = record_row(record)
        cursor = connection.execute(
            "INSERT INTO records(folder, path, signature, valid, record_id, expires_at,"
            " expires_on, length, head, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        totals.records += 1
        if text is None:
            totals.invalid += 1
            continue
        connection.execute(
            "INSERT INTO terms(rowid, t) VALUES (?, ?)",
            (cursor.lastrowid, document_tokens(record.folder, text)),
        )
        totals.add(record.folder, text.length, +1)


def _forget(connection: sqlite3.Connection, rowid: int, totals: Totals) -> None:
    """Take a row's tokens out of the term table and its text out of the totals."""
    folder, valid, record_id, length, head, body = connection.execute(
        "SELECT folder, valid, record_id, length, head, body FROM records WHERE rowid = ?",
        (rowid,),
    ).fetchone()
    if not valid:
        totals.invalid -= 1
        return
    text = record_text_of(record_id, length, head, body)
    # Contentless FTS5: a row is removed by replaying the tokens it was added with, which the
    # stored normalised fields reproduce exactly.
    connection.execute(
        "INSERT INTO terms(terms, rowid, t) VALUES ('delete', ?, ?)",
        (rowid, document_tokens(FOLDERS_BY_NUMBER[folder], text)),
    )
    totals.add(FOLDERS_BY_NUMBER[folder], text.length, -1)
    totals.stale += 1


def delete_rows(connection: sqlite3.Connection, rowids: Iterable[int], totals: Totals) -> None:
    for rowid in rowids:
        _forget(connection, rowid, totals)
        connection.execute("DELETE FROM records WHERE rowid = ?", (rowid,))
        totals.records -= 1


def write_changes(
    connection: sqlite3.Connection,
    replaced: dict[str, int],
    records: Iterable[Record],
    totals: Totals,
) -> None:
    """Store ``records``; ``replaced`` maps the paths whose rows they replace (or remove, for
    a path no record comes for) to those rows.

    A record whose path has a row takes that row in place: an edit rewrites its own page
    instead of leaving a hole there and appending a row at the end (measured: 11 % of the
    records table's pages empty after 1,000 edits at 10,000 records).
    """
    left = dict(replaced)
    fresh = []
    for record in records:
        rowid = left.pop(record.path, None)
        if rowid is None:
            fresh.append(record)
            continue
        _forget(connection, rowid, totals)
        row, text = record_row(record)
        connection.execute(
            "UPDATE records SET folder = ?, path = ?, signature = ?, valid = ?, record_id = ?,"
            " expires_at = ?, expires_on = ?, length = ?, head = ?, body = ? WHERE rowid = ?",
            (*row, rowid),
        )
        if text is None:
            totals.invalid += 1
            continue
        connection.execute(
            "INSERT INTO terms(rowid, t) VALUES (?, ?)",
            (rowid, document_tokens(record.folder, text)),
        )
        totals.add(record.folder, text.length, +1)
    delete_rows(connection, left.values(), totals)
    insert_records(connection, fresh, totals)


def optimize_terms(connection: sqlite3.Connection) -> None:
    """One FTS5 segment instead of the many a bulk insert leaves: smaller and faster."""
    connection.execute("INSERT INTO terms(terms) VALUES ('optimize')")


#: Rows replaced or removed since the term table was last merged into one segment, as a
#: share of the valid records, from which an update merges it again. FTS5 leaves a replaced
#: row's postings in the large segment, beside its delete marker in a small new one, until
#: the two are merged - which its own automerge never does for a segment that large: after
#: 1,000 edits at 10,000 records the index had grown from 1.66x to 1.92x the payload.
#: Merging bit by bit on every update instead kept a half-written copy of the large segment
#: beside it for hundreds of updates (2.25x). So every ~500 edits at 10,000 records one
#: update merges it all, in the same transaction (~0.2 s there).
STALE_SHARE_TO_MERGE = 0.05


def settle_terms(connection: sqlite3.Connection, totals: Totals) -> bool:
    """Merge the term table when enough replaced rows wait in it; whether it did."""
    if totals.stale <= STALE_SHARE_TO_MERGE * max(totals.valid, 1):
        return False
    optimize_terms(connection)
    totals.stale = 0
    return True

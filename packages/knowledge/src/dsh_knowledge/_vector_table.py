"""The ``item_vectors`` table: one stored sentence vector per knowledge item, on both backends.

Same table and column names on SQLite and PostgreSQL (hybrid ranking,
:mod:`dsh_knowledge.hybrid`):

- ``seq``: a number each write of a row takes anew and that is never reused (SQLite
  ``AUTOINCREMENT``, a PostgreSQL identity). Count, maximum and sum of it change whenever a
  row is written or deleted, which is how a process sees that the vectors it holds in
  memory (or in its cache file) are out of date without reading them (:func:`signature`);
- ``item_id``: the knowledge item (a foreign key; its vector goes with it);
- ``text_sha256``: SHA-256 of the text that was encoded (the item's content), and
  ``model_id``: the model and text rules that encoded it - a vector whose digest or model
  differs from the item's is stale, never ranked;
- ``language``: ``zh``, ``en`` or ``other`` (``dsh_common.embedding.detect_language``);
- ``vector``: 512 little-endian float32 components, 2,048 bytes (SQLite ``BLOB``,
  PostgreSQL ``bytea`` stored inline, ``STORAGE PLAIN``: a row of 2 kB fits a page, and
  out-of-line storage would cost a lookup per vector when a process loads them all).

SQLite: the earlier Node tool checks nothing but ``user_version``, which must stay 3, so the
table is not a numbered migration there; like the search index it is created (and, if its
columns are not these, dropped and created again - it holds only what can be recomputed)
in one write transaction by the first process that stores a vector. PostgreSQL: migration 4,
``item-vectors`` (:mod:`dsh_knowledge._pg_schema`).

Rows are always read in ``item_id`` order (bytes: SQLite's ``BINARY``, PostgreSQL's
``COLLATE "C"``), so both backends build the very same matrix and rank identically.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from dsh_knowledge._store_base import KnowledgeStore

__all__ = [
    "COLUMNS",
    "POSTGRES_DDL",
    "SQLITE_DDL",
    "TABLE",
    "VectorRow",
    "delete",
    "ensure",
    "exists",
    "holds_vectors",
    "load",
    "signature",
    "stored",
    "upsert",
]

TABLE: Final = "item_vectors"
COLUMNS: Final = ("seq", "item_id", "text_sha256", "model_id", "language", "vector")
VECTOR_BYTES: Final = 2048
_CHUNK = 500

SQLITE_DDL: Final = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  item_id TEXT NOT NULL UNIQUE REFERENCES knowledge(id) ON DELETE CASCADE,
  text_sha256 TEXT NOT NULL CHECK (length(text_sha256) = 64),
  model_id TEXT NOT NULL CHECK (length(model_id) > 0),
  language TEXT NOT NULL CHECK (language IN ('zh', 'en', 'other')),
  vector BLOB NOT NULL CHECK (length(vector) = {VECTOR_BYTES})
)"""

POSTGRES_DDL: Final = (
    f"""CREATE TABLE {TABLE} (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  item_id TEXT COLLATE "C" NOT NULL UNIQUE REFERENCES knowledge(id) ON DELETE CASCADE,
  text_sha256 TEXT COLLATE "C" NOT NULL CHECK (length(text_sha256) = 64),
  model_id TEXT COLLATE "C" NOT NULL CHECK (length(model_id) > 0),
  language TEXT COLLATE "C" NOT NULL CHECK (language IN ('zh', 'en', 'other')),
  vector BYTEA NOT NULL CHECK (octet_length(vector) = {VECTOR_BYTES})
)""",
    f"ALTER TABLE {TABLE} ALTER COLUMN vector SET STORAGE PLAIN",
)

#: (item_id, text_sha256, model_id, language, vector bytes)
VectorRow = tuple[str, str, str, str, bytes]

_UPSERT_SQLITE = (
    f"INSERT OR REPLACE INTO {TABLE} (item_id, text_sha256, model_id, language, vector) "  # noqa: S608 - constant
    "VALUES (?, ?, ?, ?, ?)"
)
# seq = DEFAULT: a rewritten row takes a new number, so the table's signature moves.
_UPSERT_POSTGRES = (
    f"INSERT INTO {TABLE} (item_id, text_sha256, model_id, language, vector) "  # noqa: S608 - constant
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (item_id) DO UPDATE SET seq = DEFAULT, "
    "text_sha256 = excluded.text_sha256, model_id = excluded.model_id, "
    "language = excluded.language, vector = excluded.vector"
)


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _in(store: KnowledgeStore, column: str, chunk: Sequence[str]) -> tuple[str, list[Any]]:
    """``column IN (…)`` for ``chunk``, spelled the way each backend binds a list."""
    if store.kind == "postgresql":
        return f"{column} = ANY(?)", [list(chunk)]
    return f"{column} IN ({','.join('?' * len(chunk))})", list(chunk)


def exists(store: KnowledgeStore) -> bool:
    """Whether the table is there (always on a migrated PostgreSQL database)."""
    return store.kind == "postgresql" or store.table_exists(TABLE)


def ensure(store: KnowledgeStore) -> None:
    """Inside a write transaction: create the SQLite table, or recreate one of another shape."""
    if store.kind == "postgresql":
        return
    db = store.connection
    columns = tuple(str(row[1]) for row in db.execute(f"PRAGMA table_info({TABLE})"))
    if columns == COLUMNS:
        return
    if columns:
        db.execute(f"DROP TABLE {TABLE}")
    db.execute(SQLITE_DDL)


def holds_vectors(store: KnowledgeStore) -> bool:
    """Whether any item has a stored vector (the store then keeps them up to date)."""
    if not exists(store):
        return False
    row = store.connection.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE})").fetchone()  # noqa: S608 - constant
    return bool(row[0])


def stored(store: KnowledgeStore, item_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``{item_id: (text_sha256, model_id)}`` of the items among ``item_ids`` that have one."""
    found: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(item_ids):
        clause, params = _in(store, "item_id", chunk)
        for item_id, digest, model in store.connection.execute(
            f"SELECT item_id, text_sha256, model_id FROM {TABLE} WHERE {clause}",  # noqa: S608 - fixed clauses
            params,
        ):
            found[item_id] = (digest, model)
    return found


def upsert(store: KnowledgeStore, rows: Iterable[VectorRow]) -> None:
    """Inside a write transaction: store each row, replacing the item's old vector."""
    sql = _UPSERT_POSTGRES if store.kind == "postgresql" else _UPSERT_SQLITE
    store.connection.executemany(sql, list(rows))


def delete(store: KnowledgeStore, item_ids: Sequence[str]) -> None:
    """Inside a write transaction: forget the vectors of ``item_ids``."""
    for chunk in _chunks(item_ids):
        clause, params = _in(store, "item_id", chunk)
        store.connection.execute(f"DELETE FROM {TABLE} WHERE {clause}", params)  # noqa: S608 - fixed clauses


def signature(store: KnowledgeStore) -> tuple[int, int, int, str | None, str | None]:
    """Changes whenever a row is written or deleted, and differs between two databases.

    ``seq`` values are never reused, so count, maximum and sum of them move with every write
    or delete; the first and last item id (random UUIDs) tell two databases apart - one
    deleted and created again at the same path included.
    """
    if not exists(store):
        return (0, 0, 0, None, None)
    row = store.connection.execute(
        f"SELECT count(*), coalesce(max(seq), 0), coalesce(sum(seq), 0), min(item_id), "  # noqa: S608 - constant
        f"max(item_id) FROM {TABLE}"
    ).fetchone()
    return (int(row[0]), int(row[1]), int(row[2]), row[3], row[4])


def load(
    store: KnowledgeStore, workspace: str, model_id: str
) -> tuple[list[str], list[str], list[bytes]]:
    """``(item ids, languages, vector bytes)`` of ``workspace``'s items encoded by
    ``model_id``, in item id order."""
    ids: list[str] = []
    languages: list[str] = []
    blobs: list[bytes] = []
    if not exists(store):
        return ids, languages, blobs
    for item_id, language, vector in store.connection.execute(
        # The vectors in item id order, each item checked by key: a join driven from
        # knowledge would sort 2 kB rows (SQLite: 65 ms at 10,000 items, this: 30 ms).
        f"SELECT item_id, language, vector FROM {TABLE} "  # noqa: S608 - constant
        "WHERE model_id = ? AND item_id IN (SELECT id FROM knowledge WHERE workspace = ?) "
        "ORDER BY item_id",
        (model_id, workspace),
    ):
        ids.append(item_id)
        languages.append(language)
        blobs.append(vector)
    return ids, languages, blobs

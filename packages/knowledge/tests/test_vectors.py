"""Stored sentence vectors (hybrid ranking) follow their items on both backends.

The real bundled model encodes (``dsh_common.embedding``); every test runs on SQLite and on
a real PostgreSQL server. What is checked: nothing is stored until hybrid ranking is used,
then each write stores its item's vector in the same transaction; a changed text replaces
it, a status change keeps it, an edit by another tool makes it missing (never stale);
``vectors build`` fills what is missing, once; the SQLite file stays at ``user_version`` 3.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dsh_common import embedding
from dsh_knowledge import vectors
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.transfer import import_store

from .backend_helpers import external_write

WS = "/work/payments"
POOL = "数据库连接池耗尽导致请求超时，给连接池设置上限。"
PORT = "The API listens on port 8080."


def rows(store: KnowledgeStore) -> dict[str, tuple[Any, ...]]:
    """``{item_id: (text_sha256, model_id, language, vector bytes, seq)}``."""
    if store.kind == "sqlite" and not store.table_exists("item_vectors"):
        return {}
    found = store.connection.execute(
        "SELECT item_id, text_sha256, model_id, language, vector, seq FROM item_vectors"
    ).fetchall()
    return {row[0]: (row[1], row[2], row[3], bytes(row[4]), row[5]) for row in found}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_nothing_is_stored_until_hybrid_ranking_is_used(repository: KnowledgeRepository) -> None:
    item = repository.create(type="fact", content=PORT, scope={"workspace": WS})
    repository.update(item["id"], content=PORT + " Always.")
    assert rows(repository.store) == {}
    if repository.store.kind == "sqlite":  # not even the table: a lexical store stays as it was
        assert not repository.store.table_exists("item_vectors")


def test_with_hybrid_ranking_each_write_stores_its_items_vector(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    store = repository.store
    lesson = repository.create(type="lesson", content=POOL, scope={"workspace": WS})
    stored = rows(store)[lesson["id"]]
    assert stored[:3] == (digest(POOL), embedding.model_id(), "zh")
    # The very vector a fresh encode of the text gives, bit for bit.
    assert stored[3] == embedding.vector_to_bytes(embedding.encode([POOL])[0])
    [a, b] = repository.create_many(
        [
            {"type": "fact", "content": PORT, "scope": {"workspace": WS}},
            {
                "type": "fact",
                "content": "Refunds go through the ledger.",
                "scope": {"workspace": WS},
            },
        ]
    )
    assert {a, b} <= set(rows(store)) and rows(store)[a][2] == "en"
    before = rows(store)[a]
    repository.verify(a)  # a status change keeps the vector as it is
    assert rows(store)[a] == before
    repository.update(a, content="The API listens on port 9090.")
    after = rows(store)[a]
    assert after[0] == digest("The API listens on port 9090.") and after[4] > before[4]
    assert after[3] != before[3]


def test_a_store_holding_vectors_keeps_them_without_the_variable(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    repository.create(type="fact", content=PORT, scope={"workspace": WS})
    monkeypatch.delenv("DSH_RANKING")
    item = repository.create(type="lesson", content=POOL, scope={"workspace": WS})
    assert item["id"] in rows(repository.store)


def test_an_edit_by_another_tool_leaves_the_item_missing_never_stale(
    db: str, repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    store = repository.store
    item = repository.create(type="fact", content=PORT, scope={"workspace": WS})
    assert item["id"] in rows(store)
    # The earlier Node tool on an SQLite file, psql on PostgreSQL: triggers queue the id.
    external_write(
        db, ("UPDATE knowledge SET content = ? WHERE id = ?", ("Port 9090.", item["id"]))
    )
    store.sync_search_index()  # what every retrieval does first
    assert item["id"] not in rows(store)
    assert vectors.vector_status(store)["missing"] == 1


def test_vectors_build_encodes_what_is_missing_once(
    tmp_path: Path, db: str, repository: KnowledgeRepository
) -> None:
    source = tmp_path / "old.sqlite"
    with KnowledgeStore(source) as old:
        older = KnowledgeRepository(old)
        older.create(type="lesson", content=POOL, scope={"workspace": WS})
        archived = older.create(type="fact", content="Obsolete.", scope={"workspace": WS})
        older.archive(archived["id"])
    import_store(repository, str(source))  # an import stores no vectors
    repository.create(type="fact", content=PORT, scope={"workspace": WS})
    store = repository.store
    status = vectors.vector_status(store)
    assert status == {
        "items": 2,
        "current": 0,
        "missing": 2,
        "stale": 0,
        "model": embedding.model_id(),
        "semanticAvailable": True,
    }
    seen: list[tuple[int, int]] = []
    built = vectors.build_vectors(store, progress=lambda done, total: seen.append((done, total)))
    assert built == {"items": 2, "encoded": 2, "current": 0, "model": embedding.model_id()}
    assert seen[-1] == (2, 2)
    assert len(rows(store)) == 2  # the archived item is never ranked: not encoded
    assert vectors.build_vectors(store)["encoded"] == 0
    assert vectors.vector_status(store)["current"] == 2


def test_a_vector_of_another_model_counts_as_stale(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    item = repository.create(type="fact", content=PORT, scope={"workspace": WS})
    store = repository.store
    sql = "UPDATE item_vectors SET model_id = 'old-model' WHERE item_id = ?"
    store.write(lambda: store.connection.execute(sql, (item["id"],)))
    assert vectors.vector_status(store)["stale"] == 1
    assert vectors.build_vectors(store)["encoded"] == 1
    assert rows(store)[item["id"]][1] == embedding.model_id()


def test_a_large_bulk_write_leaves_its_vectors_to_the_build(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    monkeypatch.setattr(vectors, "PREFETCH_LIMIT", 2)
    specs = [
        {"type": "fact", "content": f"Fact number {n}.", "scope": {"workspace": WS}}
        for n in range(3)
    ]
    repository.create_many(specs)
    assert rows(repository.store) == {}
    repository.create_many(specs[:2])
    assert len(rows(repository.store)) == 2


def test_the_sqlite_file_stays_at_the_earlier_tools_schema_version(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    with KnowledgeStore(db_path) as store:
        KnowledgeRepository(store).create(type="fact", content=PORT, scope={"workspace": WS})
        assert store.user_version == 3
    raw = sqlite3.connect(db_path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 3
    # A table of another shape (an older layout) holds nothing that cannot be recomputed.
    raw.execute("DROP TABLE item_vectors")
    raw.execute("CREATE TABLE item_vectors (item_id TEXT, vector BLOB)")
    raw.commit()
    raw.close()
    with KnowledgeStore(db_path) as store:
        assert vectors.build_vectors(store)["encoded"] == 1
        columns = [row[1] for row in store.connection.execute("PRAGMA table_info(item_vectors)")]
        assert columns == ["seq", "item_id", "text_sha256", "model_id", "language", "vector"]

"""The vector cache file a new process maps instead of reading every vector from the store.

It must never change a result: a current file gives the very index the store would, a
stale one (any vector written or deleted since, another database at the same path) is
ignored and rewritten, and a file or folder another user could have written is not used.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import pytest

from dsh_common import embedding
from dsh_knowledge import _vector_cache, _vector_table
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.semantic_index import workspace_index
from dsh_knowledge.store import KnowledgeStore

WS = "/work/payments"


def mapped(index: object) -> bool:
    """Whether the index's rows are the cache file's mapped pages (not read from the store)."""
    base = getattr(index, "matrix", None)
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return isinstance(base, mmap.mmap)


@pytest.fixture
def filled(db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    with KnowledgeStore(db) as store:
        repository = KnowledgeRepository(store)
        for text in ("数据库连接池耗尽导致超时。", "The API listens on port 8080.", "Use UTC."):
            repository.create(type="fact", content=text, scope={"workspace": WS})
    return db


def fresh_index(db: str) -> object:
    """The index a new process would build (a new store object has no memory of it)."""
    with KnowledgeStore(db) as store:
        return workspace_index(store, WS, embedding.model_id())


def test_a_new_process_maps_what_the_last_load_wrote(filled: str) -> None:
    with KnowledgeStore(filled) as store:
        path = _vector_cache.cache_path(store.kind, store.path, WS)
        from_store = workspace_index(store, WS, embedding.model_id())
    assert not mapped(from_store) and path.is_file()
    assert (os.stat(path).st_mode & 0o777, os.stat(path.parent).st_mode & 0o777) == (0o600, 0o700)
    from_file = fresh_index(filled)
    assert mapped(from_file)
    assert from_file.keys == from_store.keys and from_file.languages == from_store.languages
    assert np.array_equal(from_file.matrix, from_store.matrix)


def test_a_stale_file_is_ignored_and_rewritten(filled: str) -> None:
    fresh_index(filled)
    with KnowledgeStore(filled) as store:
        before = _vector_table.signature(store)
        KnowledgeRepository(store).create(
            type="fact", content="Use ISO dates.", scope={"workspace": WS}
        )
        assert _vector_table.signature(store) != before
    index = fresh_index(filled)
    assert not mapped(index) and len(index) == 4  # read from the store, file rewritten
    assert mapped(fresh_index(filled))
    with KnowledgeStore(filled) as store:
        item = KnowledgeRepository(store).list(workspace=WS, limit=1)[0]
        KnowledgeRepository(store).update(item["id"], content="Use ISO 8601 dates.")
        results = retrieve_relevant_knowledge(
            KnowledgeRepository(store), "date format", workspace=WS, ranking="hybrid"
        )
    assert "Use ISO 8601 dates." in [r["knowledge"]["content"] for r in results]


def test_a_file_others_could_write_is_not_used(filled: str, tmp_path: Path) -> None:
    fresh_index(filled)
    with KnowledgeStore(filled) as store:
        path = _vector_cache.cache_path(store.kind, store.path, WS)
    path.chmod(0o644)
    assert not mapped(fresh_index(filled))  # ignored, and replaced by an owner-only file
    assert os.stat(path).st_mode & 0o777 == 0o600 and mapped(fresh_index(filled))
    decoy = tmp_path / "decoy.vectors"
    decoy.write_bytes(path.read_bytes())
    decoy.chmod(0o600)
    path.unlink()
    path.symlink_to(decoy)  # a link in its place is never followed, nor written through
    assert not mapped(fresh_index(filled))
    assert path.is_symlink() and decoy.read_bytes()[:5] == b"DSH-K"

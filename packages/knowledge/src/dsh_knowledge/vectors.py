"""Keeping each item's stored sentence vector in step with its content (hybrid ranking).

A store *keeps vectors* once it holds any (``dsh-knowledge vectors build``, or a hybrid
retrieval that filled a few on demand), or while ``DSH_RANKING=hybrid`` asks for them and
the ``[semantic]`` extra is installed. Then:

- every write of ours encodes the texts it is about to store first - outside the write
  transaction, so the database's write lock is never held while the model runs - and the
  write stores each vector in the same transaction as its item (:func:`encoded_for_write`,
  :func:`refresh_touched`), at most :data:`PREFETCH_LIMIT` texts a write (a bulk import of
  more leaves them to ``vectors build``);
- every write, ours or not, also checks the items the search index's change queue names
  (an edit by the earlier Node tool, ``psql``, an ``import``): a vector whose text digest
  no longer matches the item is deleted in that transaction, so a stale vector is never
  ranked - the item is simply missing until it is encoded again;
- a hybrid retrieval encodes up to :data:`ON_DEMAND_LIMIT` missing vectors of its scope on
  the spot (:mod:`dsh_knowledge.semantic_index`) and says how many are left when there are
  more; :func:`build_vectors` encodes every missing or stale one, with progress.

A process without the extra never encodes, but still deletes stale vectors: the digest is
plain SHA-256. Nothing here imports numpy or the model unless a text is to be encoded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from dsh_knowledge import _vector_table as table

if TYPE_CHECKING:
    from dsh_knowledge._store_base import KnowledgeStore

__all__ = [
    "ON_DEMAND_LIMIT",
    "PREFETCH_LIMIT",
    "build_vectors",
    "encode_contents",
    "encoded_for_write",
    "hybrid_problem",
    "item_contents",
    "keeps_vectors",
    "refresh_touched",
    "semantic_available",
    "text_digest",
    "vector_status",
]

#: The most texts one write encodes before its transaction (about a second of one core).
PREFETCH_LIMIT: Final = 256
#: The most missing vectors one hybrid retrieval encodes on the spot (~0.1 s).
ON_DEMAND_LIMIT: Final = 32
#: Texts encoded and written per transaction by :func:`build_vectors`.
BUILD_CHUNK: Final = 256
#: Statuses retrieval can ever return (archived and superseded items are never ranked).
ACTIVE_STATUSES: Final = ("candidate", "verified")
DISTRIBUTION: Final = "dsh-knowledge"

_READY = "vectors_ready"  # store.search_cache key: what the current write encoded first
_available: list[bool] = []

#: digest -> (language, vector bytes)
Encoded = dict[str, tuple[str, bytes]]


def text_digest(content: str) -> str:
    """SHA-256 of the text that is encoded for an item (its content)."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def semantic_available() -> bool:
    """Whether the ``[semantic]`` extra is installed (looked up once per process)."""
    if not _available:
        from dsh_common import embedding  # noqa: PLC0415 - light: nothing heavy is imported

        _available.append(embedding.available())
    return _available[0]


def unavailable_reason() -> str | None:
    from dsh_common import embedding  # noqa: PLC0415

    return embedding.unavailable_reason(DISTRIBUTION)


def current_model_id() -> str | None:
    """The installed model's id (read without loading it), None without the extra."""
    if not semantic_available():
        return None
    from dsh_common import embedding  # noqa: PLC0415

    return embedding.model_id()


def _hybrid_requested() -> bool:
    from dsh_common.embedding.mode import InvalidRankingError, resolve_ranking  # noqa: PLC0415

    try:
        return resolve_ranking(None) == "hybrid"
    except InvalidRankingError:
        return False  # reported by the command that ranks, not by a write


def supports_vectors(store: KnowledgeStore) -> bool:
    """Vectors follow items through the search index's change queue, which an SQLite
    without FTS5 lacks; there hybrid ranking is not offered."""
    return store.kind == "postgresql" or store.index_ready


def hybrid_problem(store: KnowledgeStore) -> str | None:
    """Why hybrid ranking cannot run on ``store`` here (the warning to give), or None."""
    if not semantic_available():
        return unavailable_reason()
    if not supports_vectors(store):
        return (
            "hybrid ranking keeps vectors in step through the search index, which this "
            "SQLite (without FTS5) cannot build; ranking lexically instead"
        )
    return None


def keeps_vectors(store: KnowledgeStore) -> bool:
    """Whether writes to ``store`` should store vectors (see the module docstring)."""
    if not supports_vectors(store):
        return False
    if _hybrid_requested() and semantic_available():
        return True
    return table.holds_vectors(store)


def encode_contents(
    contents: Sequence[str], *, progress: Callable[[int, int], object] | None = None
) -> Encoded:
    """Each distinct text's language and vector bytes, by digest (loads the model)."""
    from dsh_common import embedding  # noqa: PLC0415 - numpy and the model: only here

    unique = list(dict.fromkeys(contents))
    matrix = embedding.encode(unique, progress=progress)
    return {
        text_digest(text): (embedding.detect_language(text), embedding.vector_to_bytes(row))
        for text, row in zip(unique, matrix, strict=True)
    }


@contextmanager
def encoded_for_write(store: KnowledgeStore, contents: Sequence[str]) -> Iterator[None]:
    """Around a write of items with ``contents``: encode them first when the store keeps
    vectors, so that :func:`refresh_touched` stores them inside the write's transaction."""
    ready: Encoded = {}
    if (
        contents
        and len(contents) <= PREFETCH_LIMIT
        and semantic_available()
        and keeps_vectors(store)
    ):
        ready = encode_contents(contents)
    store.search_cache[_READY] = ready
    try:
        yield
    finally:
        store.search_cache.pop(_READY, None)


def item_contents(store: KnowledgeStore, item_ids: Sequence[str]) -> dict[str, str]:
    """``{id: content}`` of the items among ``item_ids`` that exist."""
    found: dict[str, str] = {}
    for start in range(0, len(item_ids), 500):
        chunk = list(item_ids[start : start + 500])
        params: list[Any] = [chunk] if store.kind == "postgresql" else chunk
        clause = (
            "id = ANY(?)" if store.kind == "postgresql" else f"id IN ({','.join('?' * len(chunk))})"
        )
        for item_id, content in store.connection.execute(
            f"SELECT id, content FROM knowledge WHERE {clause}",  # noqa: S608 - fixed clauses
            params,
        ):
            found[item_id] = content
    return found


def refresh_touched(store: KnowledgeStore, item_ids: Sequence[str]) -> None:
    """Inside a write transaction: bring the vectors of the changed ``item_ids`` in step.

    A vector encoded for this write (:func:`encoded_for_write`) is stored; a stored vector
    whose text digest or model no longer matches, or whose item is gone, is deleted.
    """
    if not item_ids:
        return
    ready: Encoded = store.search_cache.get(_READY) or {}
    if not table.exists(store):
        if not ready:
            return  # no vectors here, and none to store
        table.ensure(store)
    have = table.stored(store, item_ids)
    if not have and not ready:
        return
    contents = item_contents(store, item_ids)
    model = current_model_id()
    rows: list[table.VectorRow] = []
    stale: list[str] = []
    for item_id in item_ids:
        content = contents.get(item_id)
        old = have.get(item_id)
        if content is None:
            if old is not None:
                stale.append(item_id)
            continue
        digest = text_digest(content)
        if old is not None and old[0] == digest and (model is None or old[1] == model):
            continue
        encoded = ready.get(digest)
        if encoded is not None and model is not None:
            rows.append((item_id, digest, model, *encoded))
        elif old is not None:
            stale.append(item_id)
    if stale:
        table.delete(store, stale)
    if rows:
        table.upsert(store, rows)


def _active_items(store: KnowledgeStore) -> list[tuple[str, str, str | None, str | None]]:
    """``(id, content, stored digest, stored model)`` of every item retrieval can return."""
    vectors = table.exists(store)
    join = f"LEFT JOIN {table.TABLE} v ON v.item_id = k.id" if vectors else ""
    stored = "v.text_sha256, v.model_id" if vectors else "NULL, NULL"
    rows = store.connection.execute(
        f"SELECT k.id, k.content, {stored} FROM knowledge k {join} "  # noqa: S608 - fixed clauses
        "WHERE k.status IN ('candidate', 'verified') ORDER BY k.id"
    ).fetchall()
    return [(row[0], row[1], row[2], row[3]) for row in rows]


def vector_status(store: KnowledgeStore) -> dict[str, Any]:
    """``{"items", "current", "missing", "stale", "model", "semanticAvailable"[, "reason"]}``
    over the items retrieval can return (candidates and verified items)."""
    model = current_model_id()
    counts = {"current": 0, "missing": 0, "stale": 0}
    with store.read():
        items = _active_items(store)
    for _, content, digest, stored_model in items:
        if digest is None:
            counts["missing"] += 1
        elif digest == text_digest(content) and (model is None or stored_model == model):
            counts["current"] += 1
        else:
            counts["stale"] += 1
    status: dict[str, Any] = {
        "items": len(items),
        **counts,
        "model": model,
        "semanticAvailable": model is not None,
    }
    if model is None:
        status["reason"] = unavailable_reason()
    return status


def build_vectors(
    store: KnowledgeStore,
    *,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, Any]:
    """Encode every missing or stale vector of the items retrieval can return.

    :data:`BUILD_CHUNK` items are encoded, then written in one transaction (an item edited
    meanwhile is skipped: its next write or build takes it), so a long build holds the
    write lock only briefly and keeps what it finished if it is stopped.
    ``progress(done, total)`` follows the encoding. Raises ``semantic-unavailable`` without
    the ``[semantic]`` extra. Returns ``{"items", "encoded", "current", "model"}``.
    """
    from dsh_common import embedding  # noqa: PLC0415

    embedding.warm()  # raises SemanticUnavailableError without the extra
    model = embedding.model_id()
    if not supports_vectors(store):
        from dsh_knowledge.errors import StorageError  # noqa: PLC0415

        raise StorageError(
            f"{store.path} has no search index (this SQLite lacks FTS5), which hybrid "
            "ranking relies on to keep vectors in step with their items."
        )
    store.write(lambda: table.ensure(store))
    with store.read():
        items = _active_items(store)
    todo = [
        (item_id, content)
        for item_id, content, digest, stored_model in items
        if digest != text_digest(content) or stored_model != model
    ]
    done = 0
    for start in range(0, len(todo), BUILD_CHUNK):
        chunk = todo[start : start + BUILD_CHUNK]

        def report(count: int, _total: int, offset: int = start) -> None:
            if progress is not None:
                progress(offset + count, len(todo))

        encoded = encode_contents([content for _, content in chunk], progress=report)

        def write(chunk: list[tuple[str, str]] = chunk, encoded: Encoded = encoded) -> int:
            return _store_chunk(store, chunk, encoded, model)

        done += store.write(write)
    if progress is not None and not todo:
        progress(0, 0)
    return {"items": len(items), "encoded": done, "current": len(items) - len(todo), "model": model}


def _store_chunk(
    store: KnowledgeStore, chunk: Sequence[tuple[str, str]], encoded: Encoded, model: str
) -> int:
    now = item_contents(store, [item_id for item_id, _ in chunk])
    rows: list[table.VectorRow] = []
    for item_id, content in chunk:
        if now.get(item_id) != content:
            continue  # edited (or gone) since it was read
        digest = text_digest(content)
        rows.append((item_id, digest, model, *encoded[digest]))
    table.upsert(store, rows)
    return len(rows)

"""A workspace's stored vectors as one in-memory index, reloaded only when they change.

Hybrid retrieval ranks a query against every stored vector of its workspace. Reading 10,000
vectors (20 MB) on every query would cost more than the rest of the query, so the store
object keeps, per workspace, the :class:`~dsh_common.embedding.SemanticIndex` it built and
the ``item_vectors`` signature it was built at (:func:`dsh_knowledge._vector_table.signature`:
one aggregate query). A long-lived process (the MCP server, a library user) then pays for
the matrix once and again only after some vector was written or deleted; a hook process
maps the cache file the last load wrote (:mod:`dsh_knowledge._vector_cache`). Rows are in
item id order on both backends.

:func:`complete` is the on-demand half of keeping vectors (:mod:`dsh_knowledge.vectors`):
a scope with a few items lacking a vector (written before hybrid ranking was on, by the
earlier tool, by ``import``) gets them encoded on the spot and stored best effort.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from dsh_common.embedding.fusion import SemanticIndex
from dsh_common.embedding.identity import DIMENSION
from dsh_common.embedding.vectors import stack_vectors, vector_from_bytes
from dsh_knowledge import _vector_cache
from dsh_knowledge import _vector_table as table
from dsh_knowledge.errors import KnowledgeError
from dsh_knowledge.vectors import ON_DEMAND_LIMIT, encode_contents, item_contents, text_digest

if TYPE_CHECKING:
    from dsh_knowledge._store_base import KnowledgeStore

__all__ = ["complete", "workspace_index"]

# store.search_cache key: {workspace: (signature, model, index, the store's change token)}
_CACHE = "semantic_index"
#: Workspaces whose index one store object keeps (an MCP server usually needs one).
MAX_CACHED_WORKSPACES: Final = 4


def workspace_index(store: KnowledgeStore, workspace: str, model: str) -> SemanticIndex:
    """The index of ``workspace``'s vectors made by ``model``: from memory while the table's
    signature is unchanged (not even read while the store's change token says nothing was
    committed), else from the cache file when it is current
    (:mod:`dsh_knowledge._vector_cache`), else read from the store (and the file written)."""
    cache: dict[str, tuple[Any, str, SemanticIndex, Any]] = store.search_cache.setdefault(
        _CACHE, {}
    )
    entry = cache.get(workspace)
    token = store.change_token()
    if entry is not None and entry[1] == model and token is not None and entry[3] == token:
        return entry[2]  # nothing was committed since: not even the signature is read
    path = _vector_cache.cache_path(store.kind, store.path, workspace)
    with store.read():
        signature = table.signature(store)
        if entry is not None and entry[0] == signature and entry[1] == model:
            cache[workspace] = (*entry[:3], token)
            return entry[2]
        index = _vector_cache.read(path, signature, model, workspace)
        if index is None:
            ids, languages, blobs = table.load(store, workspace, model)
    if index is None:
        index = SemanticIndex.build(ids, stack_vectors(blobs, DIMENSION), languages)
        if len(index):
            _vector_cache.write(path, signature, model, workspace, index)
    cache.pop(workspace, None)
    while len(cache) >= MAX_CACHED_WORKSPACES:
        cache.pop(next(iter(cache)))
    cache[workspace] = (signature, model, index, token)
    return index


def complete(
    store: KnowledgeStore, index: SemanticIndex, eligible: list[str], model: str
) -> tuple[SemanticIndex, int]:
    """``index`` plus vectors for the ``eligible`` items it lacks, and how many still lack one.

    Up to :data:`~dsh_knowledge.vectors.ON_DEMAND_LIMIT` missing vectors are encoded now,
    used for this query and stored best effort (a busy, read-only or standby database
    keeps the query working: they are simply encoded again next time). More are left to
    ``dsh-knowledge vectors build`` and counted in the answer.
    """
    missing = sorted(item_id for item_id in eligible if item_id not in index.positions)
    if not missing:
        return index, 0
    if len(missing) > ON_DEMAND_LIMIT:
        return index, len(missing)
    contents = item_contents(store, missing)
    encoded = encode_contents(list(contents.values()))
    rows = [
        (item_id, digest, model, *encoded[digest])
        for item_id, content in contents.items()
        for digest in [text_digest(content)]
    ]
    _store_best_effort(store, rows)
    keys = [*index.keys, *(row[0] for row in rows)]
    languages = [*index.languages, *(row[3] for row in rows)]
    extra = [vector_from_bytes(row[4], DIMENSION) for row in rows]
    matrix = np.vstack([index.matrix, *extra]) if extra else index.matrix
    order = sorted(range(len(keys)), key=keys.__getitem__)  # item id order, as loaded
    completed = SemanticIndex.build(
        [keys[i] for i in order], matrix[order], [languages[i] for i in order]
    )
    return completed, len(missing) - len(rows)


def _store_best_effort(store: KnowledgeStore, rows: list[table.VectorRow]) -> None:
    def work() -> None:
        table.ensure(store)
        current = _current(store, [row[0] for row in rows])
        # Only vectors of the text the item still has (it may have been edited meanwhile).
        table.upsert(store, [row for row in rows if current.get(row[0]) == row[1]])

    try:
        stored = store.best_effort_write(work)
    except (KnowledgeError, sqlite3.Error):
        return  # read-only file or server, disk full: the vectors wait for another time
    if stored:
        store.search_cache.get(_CACHE, {}).clear()  # the table changed: reload next time


def _current(store: KnowledgeStore, item_ids: list[str]) -> dict[str, str]:
    return {item_id: text_digest(text) for item_id, text in item_contents(store, item_ids).items()}

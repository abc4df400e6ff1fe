"""Hybrid ranking for search and context: memory's own ranking fused with meaning.

``ranking`` is ``lexical`` (the default: byte for byte what search and context always
returned) or ``hybrid``; an explicit argument (``--ranking``, a library or tool argument)
wins over ``DSH_RANKING`` (:func:`dsh_common.embedding.resolve_ranking`). Hybrid takes the
lexical matches - every visible record matching the query in the scope, in their order -
and :func:`dsh_common.embedding.fuse` adds semantic candidates from the same scope (valid,
unexpired records of its folders) and reorders them (docs/hybrid-ranking.md). Each hit then
says which channels matched and how (``FusedHit.explain``).

Hybrid never fails a read: without the ``[semantic]`` extra, without a usable search index,
or with more records lacking a vector than the caller's encoding budget, the ranking is
lexical and ``warnings`` says why (:data:`UNAVAILABLE`, :data:`NO_INDEX`,
:data:`MISSING`).

A long-lived process (the MCP server, a library user) keeps the loaded vectors between
queries, keyed by the vector store's generation: a query then costs the encoding of its
text, one matrix product and the fusion.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_common import embedding
from dsh_memory.search import index_store, scoring
from dsh_memory.store.records import SCOPES

if TYPE_CHECKING:
    from dsh_common.embedding import FusedHit
    from dsh_memory.search.vector_store import Loaded
    from dsh_memory.search.vector_sync import Outcome, Progress

DISTRIBUTION = "dsh-memory"
#: Records a short-lived reader (an agent's tool call) encodes on the spot - the few an
#: edit changed, ~3 ms each; with more missing it ranks lexically and says so.
ON_DEMAND = 64

UNAVAILABLE = "semantic-unavailable"
NO_INDEX = "vectors-unavailable"
MISSING = "vectors-missing"
NO_INDEX_MESSAGE = (
    "hybrid ranking needs the search index and its vectors in .sync, which cannot be used"
    " here; ranking lexically"
)


def resolve(ranking: object, error: type[Exception]) -> str:
    """``"lexical"`` or ``"hybrid"``; an unknown name (argument or ``DSH_RANKING``) raises
    ``error`` - the method's invalid-request error - with the shared message."""
    try:
        return str(embedding.resolve_ranking(ranking))
    except embedding.InvalidRankingError as exc:
        raise error(exc.message) from None


def warning(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


@dataclass(frozen=True)
class Fused:
    """The fused ranking's first ``limit`` hits and how many records it ranked in all."""

    hits: list[FusedHit]
    count: int


_loaded: dict[str, tuple[str, Loaded]] = {}
_loaded_lock = threading.Lock()


def fuse_matches(
    root: Path,
    query: str,
    matches: list[scoring.Match],
    *,
    scope: str,
    now: _dt.datetime,
    limit: int,
    budget: int | None,
    progress: Progress | None = None,
) -> tuple[Fused | None, list[dict[str, str]]]:
    """The hybrid ranking of ``matches`` (the lexical ranking, best first, index-served), or
    None and the warnings saying why the ranking stays lexical."""
    reason = embedding.unavailable_reason(DISTRIBUTION)
    if reason is not None:
        return None, [warning(UNAVAILABLE, reason)]
    from dsh_memory.search import vector_store  # noqa: PLC0415 - numpy: hybrid only

    try:
        try:
            outcome, loaded = _synced_and_loaded(root, budget, progress)
        except vector_store.VectorStoreError:
            # Not a store this version writes (another schema, damaged slots or blocks):
            # removed and encoded anew, once.
            vector_store.discard(root)
            outcome, loaded = _synced_and_loaded(root, budget, progress)
    except (vector_store.VectorStoreError, index_store.IndexUnavailable, sqlite3.Error, OSError):
        return None, [warning(NO_INDEX, NO_INDEX_MESSAGE)]
    if loaded is None:
        return None, [
            warning(
                MISSING,
                f"{outcome.missing} records have no vector for hybrid ranking yet (more than"
                f" {budget} to encode now): run `dsh-memory vectors` to build them;"
                " ranking lexically",
            )
        ]
    import numpy as np  # noqa: PLC0415 - hybrid only

    query_vector = embedding.encode([query])[0]
    cosines = loaded.index.cosines(query_vector)
    eligible = _eligible(loaded, scope, now)
    lexical = [(match.record.path, match.score) for match in matches]
    weight = lexical_weight(matches)
    hits = embedding.fuse(
        lexical, loaded.index, cosines, eligible=eligible, limit=limit, lexical_weight=weight
    )
    from dsh_common.embedding.fusion import SEMANTIC_FLOOR  # noqa: PLC0415

    semantic_only = eligible & (cosines >= SEMANTIC_FLOOR)
    positions = loaded.index.positions
    semantic_only[[positions[path] for path, _score in lexical if path in positions]] = False
    return Fused(hits, len(matches) + int(np.count_nonzero(semantic_only))), []


#: The lexical weight of the shared rule (docs/hybrid-ranking.md), for a query none of whose
#: words the memory holds.
BASE_WEIGHT = 0.5
#: The smallest share of the query's words left unfound the weight is computed with: a
#: query whose words all occur in one record weighs its words 5,000 times the base.
MIN_UNFOUND = 1e-4


def lexical_weight(matches: list[scoring.Match]) -> float:
    """How much the lexical ranking weighs in the fusion of this query.

    ``BASE_WEIGHT / (1 - c)``, where ``c`` is the best ``coverage`` of the lexical matches
    (the idf-weighted share of the query's words a record has, 0-1). A query worded in
    another language or in other words leaves most of its words unfound (``c`` ~0.3-0.5
    on the bilingual evaluation): meaning decides, as the shared rule says. A query whose
    words the memory holds (keyword queries: ``c`` = 1) keeps its lexical order, meaning
    breaking its ties and adding the records found by meaning alone after it: on memory's
    own evaluation the shared weight let notes that merely share a topic outrank the
    labelled record of one-word queries (``token``, ``streaming``: public top-3 0.94 ->
    0.81), and no constant weight up to 20 brought its MRR back to BM25's.
    """
    part = scoring.COMPONENTS.index("coverage")
    covered = max((m.parts[part] / scoring.COVERAGE_WEIGHT for m in matches), default=0.0)
    return BASE_WEIGHT / max(1.0 - min(covered, 1.0), MIN_UNFOUND)


def _synced_and_loaded(
    root: Path, budget: int | None, progress: Progress | None
) -> tuple[Outcome, Loaded | None]:
    """The vector store brought in step with the index, and its vectors (None while more
    records lack one than ``budget`` allows)."""
    from dsh_memory.search import vector_sync  # noqa: PLC0415

    outcome = vector_sync.sync(root, budget=budget, progress=progress)
    if outcome.missing:
        return outcome, None
    return outcome, _load(root, outcome.generation)


def _load(root: Path, generation: str) -> Loaded:
    from dsh_memory.search import vector_store  # noqa: PLC0415

    key = str(root)
    with _loaded_lock:
        cached = _loaded.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
    with index_store.connect(vector_store.vectors_path(root), readonly=True) as connection:
        # Pages read through a mapping, not copied by read(): a few ms of 20 MB.
        connection.execute(f"PRAGMA mmap_size = {vector_store.MAP_BYTES}").fetchall()
        with index_store.read_transaction(connection):
            stored = vector_store.read_meta(connection).get("generation", "")
            loaded = vector_store.load(connection)
    with _loaded_lock:
        _loaded[key] = (stored, loaded)
    return loaded


def _eligible(loaded: Loaded, scope: str, now: _dt.datetime) -> Any:
    """Rows a semantic-only hit may come from: the scope's folders, not expired."""
    import numpy as np  # noqa: PLC0415

    folders = [index_store.FOLDER_NUMBERS[folder] for folder in SCOPES[scope]]
    mask = np.isin(loaded.folders, folders)
    today = now.astimezone(_dt.UTC).date().isoformat()
    # A record expires on its expiry day (scoring.is_visible): visible while today is before.
    expired = [row for row, day in loaded.expires.items() if day <= today]
    mask[expired] = False
    return mask


def build_vectors(root: Path, *, progress: Progress | None = None) -> dict[str, Any]:
    """``dsh-memory vectors``: every record's vector, encoded now whatever their number.

    Returns what was done: ``encoded`` (records encoded now), ``vectors`` (records with a
    vector), ``model`` (its id), ``bytes`` (the store's size on disk). Raises
    :class:`~dsh_memory.errors.SemanticUnavailableError` without the extra and
    :class:`~dsh_memory.errors.VectorsFailedError` when ``.sync`` cannot hold them.
    """
    from dsh_memory.errors import SemanticUnavailableError, VectorsFailedError  # noqa: PLC0415

    reason = embedding.unavailable_reason(DISTRIBUTION)
    if reason is not None:
        raise SemanticUnavailableError(reason.replace("; ranking lexically instead", ""))
    from dsh_memory.search import index_update, vector_store, vector_sync  # noqa: PLC0415

    try:
        index_update.refresh_index(root)
        try:
            outcome = vector_sync.sync(root, progress=progress)
        except vector_store.VectorStoreError:
            vector_store.discard(root)
            outcome = vector_sync.sync(root, progress=progress)
        path = vector_store.vectors_path(root)
        with index_store.connect(path, readonly=True) as connection:
            (count,) = connection.execute("SELECT count(*) FROM vectors").fetchone()
        size = path.stat().st_size
    except (
        vector_store.VectorStoreError,
        index_store.IndexUnavailable,
        sqlite3.Error,
        OSError,
    ) as exc:
        raise VectorsFailedError(f"cannot build the vectors in .sync: {exc}") from exc
    return {
        "encoded": outcome.encoded,
        "vectors": int(count),
        "model": embedding.model_id(),
        "path": f".sync/{vector_store.VECTORS_NAME}",
        "bytes": size,
    }

"""Hybrid ranking for dsh-compound: recall's lexical ranking fused with the lessons' meaning.

The rule is dsh-common's (:func:`dsh_common.embedding.fuse`, docs/hybrid-ranking.md): the
lexical candidates in recall's own order, plus lessons whose vector is close enough to the
query's, ordered by the cosine standardised within each document language plus half the
lexical score's share of the best. Every accepted record of the scan is eligible; the
scan's bounds and skipped notes are recall's.

A lesson's vector is the model's encoding of :func:`embedding_text` (title, tags, when to
use, problem, root cause, resolution), kept by :mod:`dsh_compound.vector_store` under the
SHA-256 of that text and the model id, together with the record file's digest: an
unchanged record file (the recall cache knows its digest) is matched without even
rebuilding its text. Missing or stale vectors are encoded on the spot up to a limit - a
hook may take a few, the library a few dozen, the command line any number (with a
progress bar) - and beyond it the ranking is lexical and a warning says how to build them
(``dsh-compound index``). Without the ``[semantic]`` extra the ranking is lexical too, with
the warning dsh-common words (``unavailable_reason``).

numpy and the model are imported here only, and only when hybrid ranking runs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_compound import vector_store

if TYPE_CHECKING:
    import numpy as np

    from dsh_common.embedding.fusion import FusedHit, SemanticIndex
    from dsh_compound.scanning import StoredRecord

DISTRIBUTION = "dsh-compound"
#: Missing vectors the library (and the MCP server) encodes within one recall (~6 ms each).
ENCODE_LIMIT = 64
#: Missing vectors a hook encodes before it ranks lexically instead.
HOOK_ENCODE_LIMIT = 4
#: ``progress(done, total)`` while vectors are encoded.
Progress = Callable[[int, int], object]

# The last vectors this process loaded, and the index built on them, per file: a
# long-lived process (the MCP server) reads them once while the file stays the same.
_LOADED: dict[str, tuple[tuple[int, ...], vector_store.StoredVectors]] = {}
_INDEXES: dict[str, tuple[tuple[Any, ...], SemanticIndex]] = {}


def embedding_text(metadata: dict[str, Any]) -> str:
    """What the model encodes for a lesson: its text fields, the most telling first.

    The model reads at most 2,000 characters; title, tags and when-to-use come before the
    long fields so that a lesson with 4,000-character fields is still known by them.
    """
    parts = [
        metadata["title"],
        ", ".join(metadata["tags"]),
        metadata["whenToUse"],
        metadata["problem"],
        metadata["rootCause"],
        metadata["resolution"],
    ]
    return "\n".join(part.strip() for part in parts if part.strip())


def text_digest(text: str) -> str:
    """SHA-256 of the encoded text (UTF-8; a lone surrogate as U+FFFD, as the encoder sees it)."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class VectorBuild:
    """What preparing a corpus's vectors did: encoded now, reused, dropped."""

    __slots__ = ("encoded", "missing", "path", "removed", "reused")

    def __init__(self, path: str) -> None:
        self.path = path
        self.encoded = 0
        self.reused = 0
        self.removed = 0
        self.missing = 0  # left unencoded (over the limit)

    def as_dict(self, model: str) -> dict[str, Any]:
        return {
            "model": model,
            "encoded": self.encoded,
            "reused": self.reused,
            "removed": self.removed,
            "path": self.path,
        }


def unavailable() -> str | None:
    """Why hybrid ranking cannot run here (the ``[semantic]`` extra), or None."""
    from dsh_common.embedding import unavailable_reason  # noqa: PLC0415

    return unavailable_reason(DISTRIBUTION)


def _stored(
    path: str, canonical: str, model: str, dimension: int
) -> vector_store.StoredVectors | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        _LOADED.pop(path, None)
        return None
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _LOADED.get(path)
    if known is not None and known[0] == identity and known[1].model == model:
        return known[1]
    loaded = vector_store.load(Path(path), canonical, model, dimension)
    if loaded is None:
        _LOADED.pop(path, None)
    else:
        _LOADED[path] = (identity, loaded)
    return loaded


def corpus_index(
    canonical: str,
    records: Sequence[StoredRecord],
    *,
    encode_limit: int | None,
    progress: Progress | None = None,
) -> tuple[SemanticIndex | None, VectorBuild, str | None]:
    """The semantic index of ``records`` (ids as keys), encoding what is missing.

    Returns ``(index, build, warning)``: the index is None, with a warning, when more than
    ``encode_limit`` vectors are missing (None: encode all). Raises
    ``SemanticUnavailableError`` without the extra.
    """
    from dsh_common import embedding  # noqa: PLC0415
    from dsh_common.embedding.fusion import SemanticIndex  # noqa: PLC0415

    model = embedding.model_id()
    path = str(vector_store.vectors_path(canonical))
    build = VectorBuild(path)
    stored = _stored(path, canonical, model, embedding.DIMENSION)
    rows = stored.rows if stored is not None else {}
    plan: list[tuple[str, str, str, int | None, str]] = []  # id, digest, language, row, source
    missing: list[tuple[int, str]] = []  # position in plan, text to encode
    for record in records:
        known = rows.get(record.id)
        if known is not None and known[3:] == (record.digest,):
            plan.append((record.id, known[0], known[1], known[2], record.digest))
            continue
        text = embedding_text(record.metadata)
        digest = text_digest(text)
        if known is not None and known[0] == digest:
            plan.append((record.id, digest, known[1], known[2], record.digest))
            continue
        plan.append((record.id, digest, "", None, record.digest))
        missing.append((len(plan) - 1, text))
    build.reused = len(plan) - len(missing)
    build.removed = len(set(rows) - {entry[0] for entry in plan})
    if encode_limit is not None and len(missing) > encode_limit:
        build.missing = len(missing)
        return (
            None,
            build,
            (
                f"{len(missing)} lessons have no vectors for hybrid ranking yet (more than "
                f"{encode_limit} to encode here): run `dsh-compound index` to build them; "
                "ranking lexically instead"
            ),
        )
    vectors = None
    if missing:
        vectors = embedding.encode([text for _, text in missing], progress=progress)
    build.encoded = len(missing)
    languages = {position: embedding.detect_language(text) for position, text in missing}
    matrix = _assemble(stored, plan, missing, vectors, embedding.DIMENSION)
    entries = [
        (record_id, digest, languages.get(position, language), source)
        for position, (record_id, digest, language, _, source) in enumerate(plan)
    ]
    if missing or build.removed or stored is None or _sources_moved(rows, entries):
        data = vector_store.render(canonical, model, entries, matrix)
        vector_store.save(Path(path), data)
    key = (model, *((entry[0], entry[1]) for entry in entries))
    cached = _INDEXES.get(path)
    if cached is not None and cached[0] == key and not missing:
        return cached[1], build, None
    index = SemanticIndex.build([e[0] for e in entries], matrix, [e[2] for e in entries])
    _INDEXES[path] = (key, index)
    return index, build, None


def _sources_moved(
    rows: dict[str, tuple[str, str, int, str]], entries: list[tuple[str, str, str, str]]
) -> bool:
    """Whether a record file changed but not its text (its new digest is worth keeping)."""
    return any(rows[e[0]][3] != e[3] for e in entries if e[0] in rows)


def _assemble(
    stored: vector_store.StoredVectors | None,
    plan: list[tuple[str, str, str, int | None, str]],
    missing: list[tuple[int, str]],
    vectors: np.ndarray[Any, np.dtype[np.float32]] | None,
    dimension: int,
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The matrix of ``plan``'s rows: stored rows where known, new vectors where encoded."""
    import numpy as np  # noqa: PLC0415

    known_rows = [row for _, _, _, row, _ in plan if row is not None]
    if stored is not None and not missing and known_rows == list(range(len(stored.rows))):
        return stored.matrix  # the file's rows, in this very order: no copy
    matrix = np.empty((len(plan), dimension), dtype=np.float32)
    for position, (_, _, _, row, _) in enumerate(plan):
        if row is not None and stored is not None:
            matrix[position] = stored.matrix[row]
    if vectors is not None:
        for (position, _), vector in zip(missing, vectors, strict=True):
            matrix[position] = vector
    return matrix


class HybridRanking:
    """The fused ranking of one query, or why there is none (then rank lexically)."""

    __slots__ = ("build", "hits", "warning")

    def __init__(
        self, hits: list[FusedHit] | None, warning: str | None, build: VectorBuild | None
    ) -> None:
        self.hits = hits
        self.warning = warning
        self.build = build


def rank(
    canonical: str,
    records: Sequence[StoredRecord],
    lexical: Sequence[tuple[int, StoredRecord]],
    query: str,
    *,
    encode_limit: int | None,
    progress: Progress | None = None,
) -> HybridRanking:
    """Fuse recall's ``lexical`` ranking of ``records`` with the query's meaning."""
    reason = unavailable()
    if reason is not None:
        return HybridRanking(None, reason, None)
    from dsh_common import embedding  # noqa: PLC0415
    from dsh_common.embedding.fusion import fuse  # noqa: PLC0415

    index, build, warning = corpus_index(
        canonical, records, encode_limit=encode_limit, progress=progress
    )
    if index is None:
        return HybridRanking(None, warning, build)
    query_vector = embedding.encode([query])[0]
    pairs: list[tuple[str, float]] = [(record.id, score) for score, record in lexical]
    hits = fuse(pairs, index, index.cosines(query_vector))
    return HybridRanking(hits, None, build)

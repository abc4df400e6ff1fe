"""``dsh-compound index``: prepare everything recall reads, ahead of the first query.

Reads the corpus through the recall cache (writing it for every settled record) and, with
the ``[semantic]`` extra, encodes the vector of every lesson that has none or a stale one
(:mod:`dsh_compound.semantic`), reporting progress. Without the extra the vectors are
skipped and a warning says what to install; the recall cache is built either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dsh_compound.corpus_index import read_corpus
from dsh_compound.recall_cache import cache_path
from dsh_compound.workspace import select_workspace


def build_index(
    workspace: str | os.PathLike[str], *, progress: Callable[[int, int], object] | None = None
) -> dict[str, Any]:
    """``{workspace, records, scanned, truncated, recallCache, vectors, warnings}``.

    ``vectors`` is ``{model, encoded, reused, removed, path}`` (None without the extra);
    ``progress(done, total)`` is called while vectors are encoded.
    """
    from dsh_compound import semantic  # noqa: PLC0415

    selected = select_workspace(workspace)
    canonical = str(selected.canonical)
    view = read_corpus(selected)
    scan = view.scan
    vectors: dict[str, Any] | None = None
    reason = semantic.unavailable()
    if reason is not None:
        scan.warnings.add_first(reason.replace("; ranking lexically instead", ""))
    else:
        from dsh_common.embedding import model_id  # noqa: PLC0415

        _, build, _ = semantic.corpus_index(
            canonical, view.records, encode_limit=None, progress=progress
        )
        vectors = build.as_dict(model_id())
    return {
        "workspace": canonical,
        "records": len(view.records),
        "scanned": scan.scanned,
        "truncated": scan.truncated,
        "recallCache": str(cache_path(canonical)),
        "vectors": vectors,
        "warnings": scan.warnings.as_list(),
    }

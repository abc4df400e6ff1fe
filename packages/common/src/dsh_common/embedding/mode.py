"""The ranking switch every product shares: ``DSH_RANKING`` and ``--ranking``.

``lexical`` (the default) is each product's own ranking, byte for byte what it always was;
``hybrid`` adds the semantic channel of :mod:`dsh_common.embedding`. An explicit choice
(a ``--ranking`` option, a library or tool argument) wins over the environment; an unset or
blank variable means the default. Anything else is refused with one stable error, so a typo
in an agent's configuration is reported instead of silently ranking lexically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

from dsh_common.errors import DshError

Ranking = Literal["lexical", "hybrid"]

LEXICAL: Final = "lexical"
HYBRID: Final = "hybrid"
RANKINGS: Final[tuple[Ranking, ...]] = ("lexical", "hybrid")
DEFAULT_RANKING: Final[Ranking] = "lexical"
#: The environment variable every product, hook and MCP server reads.
ENVIRONMENT_VARIABLE: Final = "DSH_RANKING"


class InvalidRankingError(DshError, ValueError):
    """A ranking name that is neither ``lexical`` nor ``hybrid``."""

    code = "invalid-ranking"


def parse_ranking(value: object, *, source: str = "ranking") -> Ranking:
    """``value`` as a ranking name (case and surrounding space ignored), or raise."""
    if isinstance(value, str):
        name = value.strip().lower()
        if name == LEXICAL:
            return "lexical"
        if name == HYBRID:
            return "hybrid"
    raise InvalidRankingError(
        f"{source} must be one of {', '.join(RANKINGS)}, not {value!r}",
        details={"allowed": list(RANKINGS)},
    )


def resolve_ranking(
    explicit: object = None, *, environ: Mapping[str, str] | None = None
) -> Ranking:
    """The ranking to use: ``explicit`` when given, else ``$DSH_RANKING``, else lexical."""
    if explicit is not None:
        return parse_ranking(explicit)
    value = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE, "")
    if not value.strip():
        return DEFAULT_RANKING
    return parse_ranking(value, source=ENVIRONMENT_VARIABLE)

"""``setup --ranking hybrid|lexical``: the one ranking switch, written into the agent configs.

Every product's ``setup`` offers it (:func:`dsh_common.cli.add_setup_command`).
``--ranking hybrid`` writes ``DSH_RANKING=hybrid`` into the product's MCP server entry
(``env``) and in front of its hook commands (``DSH_RANKING=hybrid /abs/dsh-… hook …``), the
variable every product's server and hooks read, then builds the embedding weight cache
(:func:`dsh_common.embedding.warm`), so that the first hook maps the model instead of
unpacking it. ``--ranking lexical`` - the default ranking - takes the variable out of our
entries again; everything else in them, and every entry that is not ours, stays as it was.
Left out, whatever the entries say stays.

Without the ``[semantic]`` extra, ``--ranking hybrid`` still writes the variable and the
result carries a warning naming the extra to install: each product then ranks lexically and
says so (a hook never fails for it), and ranks by meaning as soon as the extra is there; a
bootstrap script that sets up every product does not fail halfway for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from dsh_common.errors import DshError

__all__ = ["VARIABLE", "finish", "ranking_variables"]

VARIABLE: Final = "DSH_RANKING"


def ranking_variables(value: str, *, remove: bool) -> dict[str, str | None]:
    """The variables setup owns for ``--ranking value`` (None as a value: take it out)."""
    from dsh_common.embedding.mode import parse_ranking  # noqa: PLC0415

    if remove:
        raise DshError(
            "--ranking has no meaning with --remove (it removes our entries, the variable "
            "with them)",
            code="invalid-arguments",
        )
    ranking = parse_ranking(value, source="--ranking")
    return {VARIABLE: "hybrid" if ranking == "hybrid" else None}


def finish(
    result: dict[str, Any],
    variables: Mapping[str, str | None],
    distribution: str,
    *,
    dry_run: bool,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``result`` with ``ranking``, and ``weights`` (the cache, warmed) or ``warnings``."""
    from dsh_common import embedding  # noqa: PLC0415 - light until warm() runs

    hybrid = variables.get(VARIABLE) == "hybrid"
    result["ranking"] = "hybrid" if hybrid else "lexical"
    warnings: list[str] = []
    if hybrid:
        reason = embedding.unavailable_reason(distribution)
        if reason is not None:
            warnings.append(reason)
        elif not dry_run:
            try:
                result["weights"] = embedding.warm()
            except (DshError, OSError) as error:
                warnings.append(
                    f"the model's weight cache could not be built ({error}); the first "
                    "hybrid hook builds it"
                )
    elif (os.environ if environ is None else environ).get(VARIABLE, "").strip().lower() == (
        "hybrid"
    ):
        result["notes"].append(
            f"{VARIABLE}=hybrid is set in this environment, and a host started from it passes "
            "it on: unset it too for lexical ranking."
        )
    if warnings:
        result["warnings"] = warnings
    return result

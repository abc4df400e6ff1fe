"""A griffe extension for the documentation site: Sphinx roles in docstrings become code.

The docstrings are written for readers of the source and use reST roles
(``:func:`recall```, ``:class:`~dsh_memory.service.MemoryService```). mkdocstrings renders
docstrings as Markdown, where a role would show as ``:func:`` followed by the name. This turns
each role into the code span it stands for (``~`` keeps the last dotted part, as in Sphinx).
It links nothing: a role names a module or helper that has no page of its own as often as one
that has, and an unresolved link would fail the strict build.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx role replaced by a Markdown code span of its target."""

    def code(match: re.Match[str]) -> str:
        target = match[2]
        if match[1]:
            target = target.rsplit(".", 1)[-1]
        return f"`{target}`"

    return _ROLE.sub(code, text)


class PlainSphinxRoles(griffe.Extension):
    """Rewrites each loaded object's docstring with :func:`plain_roles`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)

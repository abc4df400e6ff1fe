"""The ``memory`` namespace (work in progress)."""

from __future__ import annotations


class MemoryService:
    """The spec's ``memory.*`` methods, each returning an ``{ok, value}`` envelope."""

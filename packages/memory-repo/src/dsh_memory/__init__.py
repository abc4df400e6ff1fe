"""dsh-memory: a Git-backed memory repository for AI coding agents.

The public entry point is :class:`MemoryService` (the spec's ``memory`` namespace); the
``dsh-memory`` command prints exactly its envelopes. Submodules are imported on use so the
command starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_memory.errors import MemoryRepoError

if TYPE_CHECKING:
    from dsh_memory.service import MemoryService

__version__ = "0.1.0"

__all__ = ["MemoryRepoError", "MemoryService", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not import git/SQLite machinery.
    if name == "MemoryService":
        from dsh_memory.service import MemoryService  # noqa: PLC0415

        return MemoryService
    raise AttributeError(f"module 'dsh_memory' has no attribute {name!r}")

"""dsh-memory: a Git-backed memory repository for AI coding agents.

The public entry point is :class:`MemoryService` (the ``memory`` namespace,
docs/compatibility/memory.md); the
``dsh-memory`` command prints exactly its envelopes. Submodules are imported on use so the
command starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_common.lazy import lazy_exports
from dsh_memory.errors import MemoryRepoError

if TYPE_CHECKING:
    from dsh_memory.service import MemoryService

__version__ = "0.1.0"

__all__ = ["MemoryRepoError", "MemoryService", "__version__"]

# Lazy: importing the package must not import git/SQLite machinery.
__getattr__ = lazy_exports(__name__, {"MemoryService": "dsh_memory.service"})

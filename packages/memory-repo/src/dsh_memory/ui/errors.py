"""Failures of ``dsh-memory ui`` itself (the page's API answers with the service's codes)."""

from __future__ import annotations

from dsh_memory.errors import MemoryRepoError


class UiUnavailableError(MemoryRepoError, ImportError):
    """The ``[ui]`` extra (Starlette, uvicorn) is not installed."""

    code = "ui-unavailable"


class UiInvalidRequestError(MemoryRepoError, ValueError):
    """A ``--port`` outside 0-65535."""

    code = "ui-invalid-request"


class UiPortUnavailableError(MemoryRepoError, OSError):
    """The port cannot be bound on 127.0.0.1 (in use, or not permitted)."""

    code = "ui-port-unavailable"

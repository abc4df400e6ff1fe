"""Test-only crash points: make this process die by SIGKILL at a named phase.

Recovery code is only as good as the crashes it was tested against, and a crash cannot be
simulated by raising an exception (``finally`` blocks and lock releases would still run).
So the writers call :func:`crash_point` at the moments where a real crash would leave the
repository half-way (before and after the HEAD compare-and-swap, before the journal
commit...). When the environment variable ``DSH_MEMORY_TEST_KILL_AT`` names that point, the
process sends itself ``SIGKILL``: nothing after it runs, exactly as if the machine had lost
power or the OOM killer had struck.

**Test-only.** Nothing sets this variable outside the test suite; leaving it unset (the
normal case) makes every crash point a no-op costing one dictionary lookup.

Points used by dsh-memory's writers (see the README for the list):
``before-cas`` (commit built, HEAD not moved), ``after-cas`` (HEAD moved, live index and
work tree not yet updated), ``after-index`` (live index updated, work tree not yet),
``before-journal`` (work tree written, journal commit not yet made).
"""

from __future__ import annotations

import os
import signal

#: The environment variable naming the crash point to die at (test-only).
KILL_AT_ENV = "DSH_MEMORY_TEST_KILL_AT"


def crash_point(name: str) -> None:
    """SIGKILL this process when ``$DSH_MEMORY_TEST_KILL_AT`` equals ``name`` (test-only)."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)

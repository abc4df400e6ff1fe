"""Test-only crash points: make a writer die, or find its disk full, at a named step.

Recovery code is only as good as the crashes it was tested against, and a crash cannot be
simulated by raising an exception (``finally`` blocks and lock releases would still run).
So the writers call :func:`crash_point` between the steps where a real crash would leave the
repository half-way. Two test-only environment variables act there:

- ``DSH_MEMORY_TEST_KILL_AT=<point>``: the process sends itself ``SIGKILL`` - nothing after it
  runs, exactly as if the machine had lost power or the OOM killer had struck;
- ``DSH_MEMORY_TEST_FULL_AT=<point>`` with ``DSH_MEMORY_TEST_FILLER=<file>``: the point fills
  the file system holding ``<file>`` (a small tmpfs the test mounted) until the kernel
  answers "no space left", and the writer carries on into a real full disk.

The points, in the order a writer reaches them (every writer of :mod:`dsh_memory.write.pipeline`
passes the six pipeline points; the sync passes its two own first, a pull its one):

==================  ===========================================================================
``staging``         sync only: the lock is held, no session redacted yet
``validating``      sync only: the agent finished, its staging copy is not yet validated
``after-fetch``     pull only: the remote's branch is fetched, nothing of the memory changed
``after-recovery``  the recovery point exists (HEAD, or a checkpoint commit); no apply commit
``before-cas``      the apply commit is built and recorded in the active run; HEAD not moved
``after-cas``       HEAD holds the apply commit; live index and work tree not yet updated
``after-index``     the live index is updated; the work tree not yet
``before-journal``  index and work tree are done; the journal commit is not made yet
``after-journal``   the journal commit is made; the lock and active-run record not yet removed
==================  ===========================================================================

**Test-only.** Nothing sets these variables outside the test suite; unset (the normal case)
each point costs one dictionary lookup.
"""

from __future__ import annotations

import errno
import os
import signal

#: The environment variable naming the point to die at (test-only).
KILL_AT_ENV = "DSH_MEMORY_TEST_KILL_AT"
#: The environment variable naming the point from which the disk is full (test-only).
FULL_AT_ENV = "DSH_MEMORY_TEST_FULL_AT"
#: The file :data:`FULL_AT_ENV` grows until its file system is full.
FILLER_ENV = "DSH_MEMORY_TEST_FILLER"

STAGING = "staging"
VALIDATING = "validating"
AFTER_FETCH = "after-fetch"
AFTER_RECOVERY = "after-recovery"
BEFORE_CAS = "before-cas"
AFTER_CAS = "after-cas"
AFTER_INDEX = "after-index"
BEFORE_JOURNAL = "before-journal"
AFTER_JOURNAL = "after-journal"

#: The points every pipeline writer passes, in order.
PIPELINE_POINTS: tuple[str, ...] = (
    AFTER_RECOVERY,
    BEFORE_CAS,
    AFTER_CAS,
    AFTER_INDEX,
    BEFORE_JOURNAL,
    AFTER_JOURNAL,
)
#: Every crash point, in the order a sync (or, for ``after-fetch``, a pull) reaches them.
POINTS: tuple[str, ...] = (STAGING, VALIDATING, AFTER_FETCH, *PIPELINE_POINTS)

#: A filler never grows past this: the variable must only ever meet a small test tmpfs.
_MAX_FILL_BYTES = 512 * 1024 * 1024


def crash_point(name: str) -> None:
    """Die (``$DSH_MEMORY_TEST_KILL_AT``) or fill the disk (``$DSH_MEMORY_TEST_FULL_AT``)
    when the variable names this point (test-only)."""
    if name not in POINTS:
        raise ValueError(f"unknown crash point {name!r}")  # a typo would be a point never hit
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(FULL_AT_ENV) == name:
        fill_file_system(os.environ[FILLER_ENV])


def fill_file_system(filler: str) -> None:
    """Grow ``filler`` until its file system reports ``ENOSPC`` (or ``EFBIG``)."""
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    written = 0
    try:
        for chunk in (1 << 16, 1 << 12, 1):
            block = b"\0" * chunk
            while written < _MAX_FILL_BYTES:
                try:
                    written += os.write(fd, block)
                except OSError as exc:
                    if exc.errno not in (errno.ENOSPC, errno.EFBIG):
                        raise
                    break
    finally:
        os.close(fd)

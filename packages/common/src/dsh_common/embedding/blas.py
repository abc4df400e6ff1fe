"""One BLAS thread while the model encodes, whatever the process's BLAS would use otherwise.

Encoding one sentence multiplies matrices of a few dozen rows. OpenBLAS (numpy's bundled
BLAS on Linux and Windows) splits even those across all cores; on a machine whose cores
are busy - an agent, a build, the test suite - its threads wait for each other and one
encode took ~100 ms instead of ~12 ms (measured on the 2-core development machine under
load). So :func:`single_thread` sets OpenBLAS to one thread for the duration of an encode
and restores the previous count afterwards; nothing else in the process is affected once
it returns.

The library is the one numpy already loaded (``RTLD_NOLOAD``: no second copy is ever
loaded), found in numpy's bundled-library folder; ``ctypes`` is imported by numpy itself,
so this costs nothing at start-up. Where numpy uses another BLAS (Accelerate on recent
macOS wheels, MKL builds) nothing is found and nothing is changed; the vectors do not depend
on the thread count either way (a test encodes under 1 and 2 threads and compares bytes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

_SYMBOLS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)
_lock = threading.Lock()
_controls: list[tuple[Any, Any] | None] = []


def _library_candidates() -> list[Path]:
    package = Path(np.__file__).resolve().parent
    folders = (package.parent / "numpy.libs", package / ".dylibs", package / "_core")
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found.extend(sorted(folder.glob("*openblas*")))
    return found


def _find_controls() -> tuple[Any, Any] | None:
    mode = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_LOCAL", 0)
    for path in _library_candidates():
        try:
            library = ctypes.CDLL(str(path), mode=mode)
        except OSError:  # not loaded in this process (or not a library): leave it alone
            continue
        for get_name, set_name in _SYMBOLS:
            getter = getattr(library, get_name, None)
            setter = getattr(library, set_name, None)
            if getter is not None and setter is not None:
                getter.restype = ctypes.c_int
                getter.argtypes = []
                setter.restype = None
                setter.argtypes = [ctypes.c_int]
                return getter, setter
    return None


def controls() -> tuple[Any, Any] | None:
    """OpenBLAS's ``(get_num_threads, set_num_threads)`` in this process, or None."""
    if not _controls:
        with _lock:
            if not _controls:
                _controls.append(_find_controls())
    return _controls[0]


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the body with one OpenBLAS thread; the previous count is restored after."""
    found = controls()
    if found is None:
        yield
        return
    get_threads, set_threads = found
    previous = int(get_threads())
    if previous == 1:
        yield
        return
    set_threads(1)
    try:
        yield
    finally:
        set_threads(previous)

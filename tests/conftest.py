"""Every cross-package test runs in the toolkit's hermetic home (dsh_test_support.home).

``HOME`` is a fresh folder outside ``tmp_path``, so a test that gives a command a home of
its own under ``tmp_path`` (setup's tests) still sees only what that command wrote there.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def hermetic_home(hermetic_home: Path) -> Path:
    return hermetic_home

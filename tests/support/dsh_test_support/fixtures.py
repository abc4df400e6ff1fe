"""The toolkit's pytest fixtures, registered once for the whole repository.

The repository's ``conftest.py`` names this module in ``pytest_plugins``, so every test
directory can request these fixtures; none is autouse here. A package makes one autouse
for its own tests with a thin override in its ``conftest.py``::

    @pytest.fixture(autouse=True)
    def hermetic_home(hermetic_home: Path) -> Path:
        return hermetic_home
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_test_support import home


@pytest.fixture
def hermetic_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A fresh home for the test (:func:`dsh_test_support.home.enter`): ``HOME`` outside
    ``tmp_path`` (so ``tmp_path`` holds only what the test made), ``DSH_HOME`` at
    ``$HOME/.dsh``, git's fixed identity, and no variable that could leak a developer's
    settings. The home folder is returned."""
    return home.enter(monkeypatch, tmp_path_factory.mktemp("home")).home

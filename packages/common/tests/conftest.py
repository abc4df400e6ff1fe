"""Hermetic environment for every dsh-common test: nothing touches the real home or git config."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsh_test_support.gitcmd import commit_file, init


@pytest.fixture(autouse=True)
def hermetic_home(hermetic_home: Path) -> Path:
    """Every dsh-common test runs in the toolkit's hermetic home (dsh_test_support.home)."""
    return hermetic_home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, ``tracked.txt``."""
    root = init(tmp_path / "repo")
    commit_file(root, "tracked.txt", "hello\n", "first")
    return root


@pytest.fixture(scope="session")
def weight_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A weight cache folder for the session (the first encoder below builds its file)."""
    return tmp_path_factory.mktemp("embedding") / "cache" / "embedding"


@pytest.fixture(scope="session")
def encoder(weight_cache_dir: Path) -> object:
    """The real bundled model, its weights mapped from the session's cache file."""
    from dsh_common.embedding.model import load_encoder

    first = load_encoder(weight_cache_dir)
    assert first.cache_status in {"built", "mapped"}, first.cache_status
    mapped = load_encoder(weight_cache_dir)
    assert mapped.cache_status == "mapped", mapped.cache_status
    return mapped

"""Hermetic environment for every dsh-common test: nothing touches the real home or git config."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def hermetic_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = dsh test\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    yield home


def git(cwd: Path, *args: str) -> str:
    """Plain git for building fixtures (the code under test uses GitRunner)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, ``tracked.txt``."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "tracked.txt").write_text("hello\n")
    git(root, "add", "tracked.txt")
    git(root, "commit", "-q", "-m", "first")
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

"""Shared fixtures: every test runs with HOME, DSH_HOME and git's config inside tmp_path.

dsh-common's GitRunner strips every ``GIT_*`` variable (so ``GIT_CONFIG_GLOBAL`` does not
reach it); git then reads ``$HOME/.gitconfig`` - which is why the fixed identity is
written there as well as to the file ``GIT_CONFIG_GLOBAL`` names for plain ``git`` calls.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

IDENTITY = "[user]\n\tname = Memory Test\n\temail = memory-test@example.com\n"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(IDENTITY)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("DSH_MEMORY_ROOT", raising=False)
    monkeypatch.delenv("DSH_DEBUG", raising=False)
    return home


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    """An initialised memory repository at the default root ($DSH_HOME/storages/memory)."""
    from dsh_memory.initialize import initialize_repository

    root = tmp_path / "dsh" / "storages" / "memory"
    initialize_repository(root)
    return root


def git(root: Path, *args: str, check: bool = True) -> str:
    """Plain git for test set-up and assertions (never used by the code under test)."""
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=check)
    return result.stdout


@pytest.fixture
def run_git() -> Callable[..., str]:
    return git


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def write_file() -> Callable[[Path, str, str], Path]:
    return write


def commit_all(root: Path, message: str = "test commit") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def commit() -> Callable[..., str]:
    return commit_all


@pytest.fixture
def cli_env() -> dict[str, str]:
    """The environment for a real ``dsh-memory`` subprocess (the isolated one above)."""
    return dict(os.environ)

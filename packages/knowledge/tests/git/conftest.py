"""Fixtures for the Git provenance, freshness and health tests: real repositories in tmp_path.

Git runs hermetically: ``HOME``, ``DSH_HOME`` and git's global config point into tmp_path, the
system config is ignored, and no inherited ``GIT_*`` variable leaks into the setup commands.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "git-home"
    home.mkdir(exist_ok=True)
    global_config = home / ".gitconfig"
    global_config.write_text(
        "[user]\n\tname = Test Author\n\temail = author@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    for key in list(os.environ):
        if key.startswith("GIT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    yield home


class Repo:
    """A real git repository with a fixed identity and small helpers for the setups."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def git(self, *args: str, check: bool = True) -> str:
        env = {**os.environ, **IDENTITY}
        result = subprocess.run(
            ["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"git {args} failed: {result.stderr}")
        return result.stdout.strip()

    def write(self, relative: str, text: str) -> Path:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode())
        return target

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def init_repo(path: Path, *extra: str) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", *extra, str(path)], check=True)
    return Repo(path)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository with two committed files: src/app.py and docs/guide.md."""
    created = init_repo(tmp_path / "repo")
    created.write("src/app.py", "print('hello')\n")
    created.write("docs/guide.md", "# Guide\n")
    created.commit("initial")
    return created


@pytest.fixture
def new_repo(tmp_path: Path) -> Callable[..., Repo]:
    def make(name: str = "other", *extra: str) -> Repo:
        return init_repo(tmp_path / name, *extra)

    return make


def file_evidence(commit: str | None, path: str, **extra: Any) -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "type": "file",
        "source": path,
        "timestamp": "2026-11-30T12:00:00.000Z",
    }
    if commit is not None:
        evidence["gitProvenance"] = {"commit": commit, "path": path}
    evidence.update(extra)
    return evidence


def knowledge_item(
    evidence: list[dict[str, Any]], *, item_id: str = "k-1", workspace: str = "/work/app"
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "fact",
        "content": "The app prints hello.",
        "scope": {"workspace": workspace},
        "status": "verified",
        "creationOrigin": "explicit",
        "evidence": evidence,
        "createdAt": "2026-11-30T12:00:00.000Z",
        "updatedAt": "2026-11-30T12:00:00.000Z",
    }


@pytest.fixture
def make_evidence() -> Callable[..., dict[str, Any]]:
    return file_evidence


@pytest.fixture
def make_item() -> Callable[..., dict[str, Any]]:
    return knowledge_item


SESSION_EVIDENCE = {"type": "session", "source": "session-1", "timestamp": "2026-11-30T12:00:00Z"}


@pytest.fixture
def session_evidence() -> dict[str, Any]:
    return dict(SESSION_EVIDENCE)


@pytest.fixture
def marker_script(tmp_path: Path) -> Callable[[str], tuple[Path, Path]]:
    """A program that, if anything ever runs it, leaves a marker file behind."""

    def make(name: str) -> tuple[Path, Path]:
        marker = tmp_path / f"{name}.ran"
        script = tmp_path / f"{name}.sh"
        script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\ncat\n")
        script.chmod(0o755)
        return script, marker

    return make

"""Fixtures for the Git provenance, freshness and health tests: real repositories in tmp_path.

Every test runs in the package's hermetic home (the toolkit's: HOME, DSH_HOME and git's
global config in a fresh folder, git's fixed identity, no inherited ``GIT_*`` variable);
plain git for the set-ups is :mod:`dsh_test_support.gitcmd`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import gitcmd


class Repo:
    """A real git repository and small helpers for the setups."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def git(self, *args: str, check: bool = True) -> str:
        """Plain ``git ARGS`` in the repository; its stdout, stripped."""
        return gitcmd.git(self.path, *args, check=check).strip()

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
        return gitcmd.head(self.path)


def init_repo(path: Path, *extra: str) -> Repo:
    """A new repository at ``path`` on branch ``main``; ``extra`` goes to ``git init``."""
    path.mkdir(parents=True, exist_ok=True)
    gitcmd.git(path, "init", "-q", "-b", "main", *extra)
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

"""Helpers shared by the agent-surface tests: a real git work tree and the installed command."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


def git(path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    result = subprocess.run(
        ["git", *args], cwd=path, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A repository at ``path`` with ``files`` committed on ``main``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def command() -> str:
    """The installed ``dsh-knowledge`` console script of this environment."""
    beside = Path(sys.executable).parent / "dsh-knowledge"
    found = str(beside) if beside.exists() else shutil.which("dsh-knowledge")
    assert found, "dsh-knowledge is not installed in this environment"
    return found

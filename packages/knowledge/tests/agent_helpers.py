"""Helpers shared by the agent-surface tests: a real git work tree and the installed command."""

from __future__ import annotations

from pathlib import Path

from dsh_test_support import commands, gitcmd


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A repository at ``path`` with ``files`` committed on ``main``."""
    gitcmd.init(path)
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    gitcmd.commit_all(path, "initial")
    return path


def command() -> str:
    """The installed ``dsh-knowledge`` console script of this environment."""
    return str(commands.program("dsh-knowledge"))

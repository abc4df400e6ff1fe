"""Where a command's data lives when the user did not say: the default workspace.

A command run from anywhere inside a repository should find the repository's data, as
``git`` itself does. The top level is found by looking for ``.git`` (a directory, or the
file a worktree or submodule has) in the current directory and its parents - without
running git, so the default costs no process start and no repository config is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _has_git_entry(directory: Path) -> bool:
    try:
        mode = (directory / ".git").lstat().st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


def git_top_level(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest directory at or above ``start`` (default: cwd) holding ``.git``, or None."""
    here = Path(os.path.realpath(start if start is not None else os.getcwd()))
    for directory in (here, *here.parents):
        if _has_git_entry(directory):
            return directory
    return None


def default_workspace(start: str | os.PathLike[str] | None = None) -> str:
    """The git top level of ``start`` (default: cwd), else ``start`` itself, canonical."""
    here = os.path.realpath(start if start is not None else os.getcwd())
    top = git_top_level(here)
    return str(top) if top is not None else here


def canonical_directory(value: str) -> str:
    """``value`` as its canonical absolute path when it names a directory, else unchanged.

    ``.``, ``./x/`` and a symlinked spelling of a directory all become one string, so a
    scope stored under one spelling is matched under another.
    """
    try:
        if os.path.isdir(value):
            return os.path.realpath(value)
    except (OSError, ValueError):
        pass
    return value


def ancestor_with(start: str | os.PathLike[str], relative: str) -> Path | None:
    """The nearest proper ancestor of ``start`` in which ``relative`` is a directory."""
    here = Path(os.path.realpath(start))
    for directory in here.parents:
        try:
            if stat.S_ISDIR((directory / relative).lstat().st_mode):
                return directory
        except OSError:
            continue
    return None

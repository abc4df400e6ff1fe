"""Which workspace a command works in when none is given: one rule for every front end.

The command line (full parser and fast path), the hooks and the MCP server all call
:func:`find_workspace`, so ``recall`` run from a directory finds exactly the lessons the
prompt hook shows there. The rule, as ``git`` finds its repository:

1. the nearest directory at or above the starting one that holds the corpus
   (``docs/solutions/dsh-compound/``), never looking above the git top level - a
   sub-project of a monorepo keeps its own lessons, and a corpus of an enclosing project
   is not this repository's;
2. else the git top level (the nearest directory holding ``.git``, a directory or the file
   of a worktree or submodule): where a first ``capture`` creates the corpus;
3. else the starting directory itself (outside any repository, a corpus above it is still
   found by step 1).

Paths are canonical (symlinks resolved). Standard library only, before anything heavy is
imported: a hook runs at every prompt.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dsh_compound.limits import CORPUS_DIRECTORY

_CORPUS = Path(*CORPUS_DIRECTORY.split("/"))


def _is_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _has_git_entry(directory: Path) -> bool:
    try:
        mode = (directory / ".git").lstat().st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


def find_workspace(start: str | os.PathLike[str] | None = None) -> Path:
    """The workspace for a session or command started in ``start`` (default: the current
    directory), by the rule of the module docstring."""
    here = Path(os.path.realpath(start if start is not None else os.getcwd()))
    for candidate in (here, *here.parents):
        if _is_directory(candidate / _CORPUS) or _has_git_entry(candidate):
            # A corpus below the top level, or the top level itself (with or without one).
            return candidate
    return here

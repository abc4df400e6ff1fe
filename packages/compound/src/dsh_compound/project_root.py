"""Which directory an agent session works in: the project root above its working directory.

Used by the hooks and the MCP server, before anything heavy is imported (standard library
only): a hook runs at every prompt.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh_compound.limits import CORPUS_DIRECTORY


def find_workspace(start: str | os.PathLike[str]) -> Path:
    """The workspace an agent works in: the nearest ancestor of ``start`` (itself included)
    that holds the lesson corpus or is a Git work tree root, else ``start``.

    Agents start in a sub-directory as often as at the root; lessons and their source
    paths are relative to the project root, so recall from ``src/`` must find them.
    """
    here = Path(os.path.abspath(os.fspath(start)))
    corpus = Path(*CORPUS_DIRECTORY.split("/"))
    for candidate in (here, *here.parents):
        if (candidate / corpus).is_dir() or (candidate / ".git").exists():
            return candidate
    return here

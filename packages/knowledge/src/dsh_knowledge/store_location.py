"""Which knowledge database a process opens: the one resolver every front end calls.

``--db`` (the CLI's global option, the hook's and the MCP server's own), else
``$DSH_KNOWLEDGE_DB``, else ``$DSH_HOME/knowledge/knowledge.sqlite`` (``~/.dsh`` when
``DSH_HOME`` is unset or blank). The CLI, its fast path, the hooks, the MCP server, the
library (``KnowledgeStore()`` with no argument) and ``setup`` all resolve through
:func:`resolve_database`, so ``add`` writes the very store the agent's hook and MCP server
read. A relative path is made absolute against the current directory here, once: ``setup``
writes that absolute path into the agent configs, whose processes start elsewhere.

This module imports neither typer nor the store: the hook path must start fast.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DB_ENV", "default_database_path", "resolve_database"]

DB_ENV = "DSH_KNOWLEDGE_DB"
MEMORY = ":memory:"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value if value.strip() else None


def default_database_path() -> Path:
    """``$DSH_HOME/knowledge/knowledge.sqlite``; ``~/.dsh`` when DSH_HOME is unset or blank."""
    home = _env("DSH_HOME")
    base = Path(home) if home else Path.home() / ".dsh"
    return base / "knowledge" / "knowledge.sqlite"


def _absolute(location: str) -> str:
    if location == MEMORY:
        return location
    # abspath, not resolve(): symlinks are the store's business (it resolves on open), and a
    # path that does not exist yet must stay spelled as given.
    return os.path.abspath(location)


def resolve_database(explicit: str | os.PathLike[str] | None = None) -> str:
    """The database to open: ``explicit``, else ``$DSH_KNOWLEDGE_DB``, else the default.

    A blank ``explicit`` counts as not given. The result is an absolute path (or
    ``:memory:``).
    """
    if explicit is not None:
        given = os.fspath(explicit)
        if given.strip():
            return _absolute(given)
    from_env = _env(DB_ENV)
    if from_env is not None:
        return _absolute(from_env)
    return str(default_database_path())


def is_default(location: str) -> bool:
    """Whether ``location`` is the default database (``setup`` then writes no ``--db``)."""
    return location == str(default_database_path())

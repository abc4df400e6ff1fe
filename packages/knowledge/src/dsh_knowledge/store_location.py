"""Which knowledge database a process opens: the one resolver every front end calls.

``--db`` (the CLI's global option, the hook's and the MCP server's own), else
``$DSH_KNOWLEDGE_DB``, else ``$DSH_HOME/knowledge/knowledge.sqlite``; a path or a
``postgresql://`` / ``postgres://`` URL (``~/.dsh`` when
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

__all__ = [
    "DB_ENV",
    "default_database_path",
    "display_location",
    "has_password",
    "is_default",
    "is_postgres_url",
    "redact_url",
    "resolve_database",
]

DB_ENV = "DSH_KNOWLEDGE_DB"
MEMORY = ":memory:"
URL_SCHEMES = ("postgresql://", "postgres://")
#: What a password in a URL is shown as.
HIDDEN = "***"
# libpq connection parameters whose value is a secret when given in a URL's query string.
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` is a PostgreSQL URL (``postgresql://`` or ``postgres://``)."""
    return location[:13].lower().startswith(URL_SCHEMES)


def redact_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@``, ``?password=``) shown as ``***``.

    Everything else is kept as written, so the host, port, database and options a message
    names are the ones the user gave. Used for every output, error and log line.
    """
    from urllib.parse import parse_qsl, urlencode  # noqa: PLC0415 - only for URLs

    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    # The userinfo ends at the last "@" before the query: a password may hold "/" or "@".
    before_query, question, query = rest.partition("?")
    at = before_query.rfind("@")
    if at >= 0:
        user, colon, _password = before_query[:at].partition(":")
        before_query = f"{user}{':' + HIDDEN if colon else ''}@{before_query[at + 1 :]}"
    if question:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in _SECRET_PARAMETERS for name, _ in pairs):
            hidden = [(n, HIDDEN if n.lower() in _SECRET_PARAMETERS else v) for n, v in pairs]
            query = urlencode(hidden, safe="/*")
    return f"{scheme}://{before_query}{question}{query}"


def has_password(url: str) -> bool:
    """Whether ``url`` is a PostgreSQL URL carrying a password (userinfo or query string)."""
    return is_postgres_url(url) and redact_url(url) != url


def display_location(location: str) -> str:
    """``location`` as it may be printed: a path as is, a URL without its password."""
    return redact_url(location) if is_postgres_url(location) else location


def _env(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value if value.strip() else None


def default_database_path() -> Path:
    """``$DSH_HOME/knowledge/knowledge.sqlite``; ``~/.dsh`` when DSH_HOME is unset or blank."""
    home = _env("DSH_HOME")
    base = Path(home) if home else Path.home() / ".dsh"
    return base / "knowledge" / "knowledge.sqlite"


def _absolute(location: str) -> str:
    if location == MEMORY or is_postgres_url(location):
        return location
    # abspath, not resolve(): symlinks are the store's business (it resolves on open), and a
    # path that does not exist yet must stay spelled as given.
    return os.path.abspath(location)


def resolve_database(explicit: str | os.PathLike[str] | None = None) -> str:
    """The database to open: ``explicit``, else ``$DSH_KNOWLEDGE_DB``, else the default.

    A blank ``explicit`` counts as not given. The result is an absolute path, ``:memory:``,
    or a PostgreSQL URL exactly as given (libpq reads it: ``PG*`` variables, ``~/.pgpass``,
    ``?host=/socket/dir``, ``sslmode``).
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

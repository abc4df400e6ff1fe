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
import re
from pathlib import Path

__all__ = [
    "DB_ENV",
    "default_database_path",
    "display_location",
    "has_password",
    "is_default",
    "is_postgres_url",
    "misread_userinfo",
    "redact_url",
    "resolve_database",
    "scrub",
    "url_secrets",
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


# A query string's first parameter ("?name="), told from a "?" inside a password.
_QUERY_START = re.compile(r"\?[A-Za-z_]+=")


def _userinfo_end(rest: str) -> tuple[int, bool]:
    """Where the userinfo of ``rest`` (a URL after ``://``) ends: the index of its ``@``, or
    -1; and whether libpq reads that part as something else (see below).

    libpq takes as userinfo everything up to an ``@`` met before the first ``/`` (a ``?``
    does not stop it, so an unencoded ``?`` belongs to the password); the last such ``@``
    hides whatever libpq reads, since a password may hold ``@`` too. With no ``@`` before
    the first ``/`` but a ``:`` there and an ``@`` after it, the password most likely holds
    an unencoded ``/``: libpq then reads ``user:pa`` as host and port and the rest of the
    password as the database name. That text is hidden all the same (a database name with
    an ``@`` in it is hidden too: over-hiding costs a less precise message, never a secret).
    """
    slash = rest.find("/")
    head = rest if slash < 0 else rest[:slash]
    at = head.rfind("@")
    if at >= 0 or slash < 0:
        return at, False
    if ":" not in head:
        return -1, False
    query = _QUERY_START.search(rest, slash)
    at = rest.rfind("@", slash, query.start() if query else len(rest))
    return at, at >= 0


def _parts(url: str) -> tuple[str, str, str, str, str] | None:
    """``(scheme, userinfo, host and path, "?" or "", query)`` of a URL, or None without
    ``://``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    at, _ = _userinfo_end(rest)
    userinfo, tail = (rest[:at], rest[at:]) if at >= 0 else ("", rest)
    where, question, query = tail.partition("?")
    return scheme, userinfo, where, question, query


def redact_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@``, ``?password=``) shown as ``***``.

    Everything else is kept as written, so the host, port, database and options a message
    names are the ones the user gave. Used for every output, error and log line.
    """
    from urllib.parse import parse_qsl, urlencode  # noqa: PLC0415 - only for URLs

    parts = _parts(url)
    if parts is None:
        return url
    scheme, userinfo, where, question, query = parts
    user, colon, _password = userinfo.partition(":")
    shown = f"{scheme}://{user}{':' + HIDDEN if colon else ''}{where}{question}"
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in _SECRET_PARAMETERS for name, _ in pairs):
            hidden = [(n, HIDDEN if n.lower() in _SECRET_PARAMETERS else v) for n, v in pairs]
            query = urlencode(hidden, safe="/*")
    return shown + query


def url_secrets(url: str) -> tuple[str, ...]:
    """Every spelling of the passwords in ``url`` (as written, and percent-decoded), longest
    first: the strings that must never appear in a message."""
    from urllib.parse import unquote  # noqa: PLC0415 - only for URLs

    parts = _parts(url) if is_postgres_url(url) else None
    if parts is None:
        return ()
    _, userinfo, _, _, query = parts
    found: set[str] = set()
    _user, colon, password = userinfo.partition(":")
    if colon:
        found.update((password, unquote(password)))
        if misread_userinfo(url):
            # libpq splits such a password into host, port, query and database name, and
            # quotes the pieces: each piece long enough to be told from ordinary text.
            found.update(piece for piece in re.split(r"[/?@&=]", password) if len(piece) >= 3)
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if unquote(name).lower() in _SECRET_PARAMETERS:
            found.update((value, unquote(value), unquote(value.replace("+", " "))))
    return tuple(sorted((s for s in found if s), key=lambda s: (-len(s), s)))


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's or libpq's message) with the raw ``url`` shown redacted and every
    spelling of its passwords as ``***``: libpq quotes what it could not parse."""
    secrets = url_secrets(url)
    if not secrets:
        return text
    text = text.replace(url, redact_url(url))
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


def misread_userinfo(url: str) -> bool:
    """Whether libpq reads part of ``url``'s password as host, port and database (an
    unencoded ``/`` in it): the host and port it tried are then not worth naming."""
    _scheme, sep, rest = url.partition("://")
    return bool(sep) and is_postgres_url(url) and _userinfo_end(rest)[1]


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

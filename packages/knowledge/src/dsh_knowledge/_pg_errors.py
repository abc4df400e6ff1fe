"""PostgreSQL failures a user can meet, as the package's documented errors.

The same promise as :mod:`dsh_knowledge._storage_errors` for SQLite: a server that is down,
unreachable or restarting, a wrong password, a read-only hot standby, a full disk - facts
about the deployment, never ``internal-error``. Messages name the database by its URL with
the password replaced (:func:`dsh_knowledge.store_location.redact_url`) and, when the server
could not be reached, the host and port tried. libpq's own text may quote what it could not
parse (``invalid percent-encoded token: "p%zz…"``, the whole URL): every driver message is
scrubbed of the URL and each spelling of its passwords before it becomes part of ours
(:func:`dsh_knowledge.store_location.scrub`).

Serialisation failures and deadlocks (SQLSTATE 40001, 40P01) become :class:`RetryableError`,
which :meth:`PostgresStore.write` retries from the start; a lock wait that timed out (55P03)
becomes :class:`LockTimeoutError`, which a best-effort write treats as "busy, skipped", as
it treats :class:`ReadOnlyError` (a hot standby) as "read-only, skipped".
"""

from __future__ import annotations

import os
from typing import Any

from dsh_knowledge._storage_errors import printable
from dsh_knowledge.errors import (
    DatabaseBusyError,
    KnowledgeError,
    StorageError,
    StorageUnavailableError,
    ValidationError,
)
from dsh_knowledge.store_location import misread_userinfo, scrub

__all__ = [
    "ConnectionLostError",
    "LockTimeoutError",
    "ReadOnlyError",
    "RetryableError",
    "connect_error",
    "reason",
    "server_address",
    "translate",
    "unparsable_url",
]

_RETRYABLE = {"40001", "40P01"}
_UNAVAILABLE_CLASSES = ("08", "57", "53")  # connection, operator intervention, resources


class RetryableError(DatabaseBusyError):
    """A serialisation failure or deadlock: the whole transaction may simply run again."""


class LockTimeoutError(DatabaseBusyError):
    """A row or table lock was not granted within the transaction's lock_timeout."""


class ReadOnlyError(StorageError):
    """The server refused a write: a hot standby, or ``default_transaction_read_only``."""


class ConnectionLostError(StorageUnavailableError):
    """The connection broke under a statement (server restart, network). ``during_commit``
    says whether the outcome of a COMMIT is unknown."""

    def __init__(self, message: str, *, during_commit: bool = False) -> None:
        super().__init__(message)
        self.during_commit = during_commit


def reason(error: BaseException, url: str) -> str:
    """The driver's message for ``error`` on one line, without any secret of ``url``."""
    text = " ".join(scrub(str(error), url).split())
    return printable(text.removeprefix("connection failed: "))


def server_address(conninfo: dict[str, Any]) -> str:
    """``host H, port P`` as libpq would try them (URL, then PGHOST/PGPORT, then defaults)."""
    host = conninfo.get("host") or conninfo.get("hostaddr") or os.environ.get("PGHOST")
    port = conninfo.get("port") or os.environ.get("PGPORT") or "5432"
    where = host if host else "the default local socket"
    return f"host {where}, port {port}"


MISREAD = (
    'libpq read part of the password as the host, port and database name: a "/" or "@" in a '
    "password must be percent-encoded (%2F, %40), or the password kept out of the URL "
    "(~/.pgpass, PGPASSWORD)"
)


def unparsable_url(error: BaseException, display: str, url: str) -> KnowledgeError:
    """The error for a URL libpq cannot parse (its message quotes the offending text)."""
    why = MISREAD if misread_userinfo(url) else reason(error, url)
    return ValidationError(f"Not a PostgreSQL URL libpq can read: {display} ({why}).")


def connect_error(
    error: BaseException, display: str, url: str, conninfo: dict[str, Any]
) -> KnowledgeError:
    """The error for a connection that could not be made (server down, wrong password...)."""
    if misread_userinfo(url):
        # The host and port libpq tried are pieces of the password: neither is named.
        return StorageUnavailableError(
            f"Cannot connect to the knowledge database {display}: {MISREAD}."
        )
    return StorageUnavailableError(
        f"Cannot connect to the knowledge database {display} ({server_address(conninfo)}): "
        f"{reason(error, url)}"
    )


def translate(
    error: BaseException, display: str, driver: Any, *, url: str, during_commit: bool = False
) -> BaseException:
    """The documented error for a driver failure, or ``error`` itself when it is a bug.

    ``driver`` is psycopg or :mod:`dsh_knowledge._libpq` (both name their error classes
    alike); ``url`` is the one connected to, whose secrets no message may hold. The
    translation keeps the server's code as ``sqlstate``.
    """
    translated = _translate(error, display, driver, url, during_commit)
    if translated is not error:
        translated.sqlstate = getattr(error, "sqlstate", None)  # type: ignore[attr-defined]
    return translated


def _translate(
    error: BaseException, display: str, driver: Any, url: str, during_commit: bool
) -> BaseException:
    state = getattr(error, "sqlstate", None) or ""
    where = f"The knowledge database {display}"
    detail = reason(error, url)
    if state in _RETRYABLE:
        return RetryableError(f"{where} stayed busy with conflicting writers; try again.")
    if state == "55P03":
        return LockTimeoutError(f"{where} stayed locked by other writers; try again.")
    if state == "25006":  # read_only_sql_transaction: a hot standby, or a read-only setting
        return ReadOnlyError(f"{where} is read-only ({detail}); nothing changed.")
    if state == "53100":
        return StorageError(
            f"disk full: the knowledge database {display} could not be written ({detail}); "
            "nothing changed."
        )
    if state in {"22021", "22P05"}:
        return ValidationError(f"Text the database cannot store: {detail}")
    if state == "54000":
        return ValidationError(f"A value is larger than PostgreSQL can store or index ({detail}).")
    if state in {"42501", "42P01", "3D000", "28000", "28P01"}:
        return StorageError(f"{where} could not be used: {detail}")
    if isinstance(error, driver.OperationalError) and (
        not state or state.startswith(_UNAVAILABLE_CLASSES)
    ):
        return ConnectionLostError(
            f"{where} became unavailable: {detail}", during_commit=during_commit
        )
    if isinstance(error, driver.DataError) and "NUL" in str(error):
        # Raised by psycopg before sending: PostgreSQL text cannot hold U+0000.
        return ValidationError("Text must not contain NUL (U+0000) characters on PostgreSQL.")
    return error

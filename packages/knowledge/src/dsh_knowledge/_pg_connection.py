"""One PostgreSQL connection behind the small DB-API subset the repository layer speaks.

The repository writes portable SQL with ``?`` placeholders (SQLite's); here each statement is
translated once (``?`` -> ``%s``, ``%`` -> ``%%``) and cached. The connection runs in
autocommit mode and :class:`PgConnection` issues ``BEGIN`` / ``COMMIT`` itself, as the SQLite
backend does, so a statement outside a transaction commits on its own.

The driver is psycopg, except in the prompt hook, which uses the ctypes libpq client of
:mod:`dsh_knowledge._libpq` (``light=True``: psycopg's import alone would cost the hook more
than its whole budget). Every driver error is translated where it happens
(:mod:`dsh_knowledge._pg_errors`): no driver exception reaches the layers above. A
connection that broke while idle (the server restarted since the last command of a
long-lived MCP server) is replaced and the statement sent again; inside a transaction the
loss is reported, and the store's write loop decides.

``prepare_threshold=None``: no server-side prepared statements, so a PgBouncer in
transaction mode in front of the server works.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from typing import Any

from dsh_knowledge._pg_errors import (
    ConnectionLostError,
    connect_error,
    reason,
    translate,
    unparsable_url,
)
from dsh_knowledge.errors import PostgresDriverMissingError

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "PgConnection", "sql_for_psycopg"]

#: Seconds to wait for the server when neither the URL nor PGCONNECT_TIMEOUT says.
DEFAULT_CONNECT_TIMEOUT = 5
APPLICATION_NAME = "dsh-knowledge"


@functools.lru_cache(maxsize=512)
def sql_for_psycopg(sql: str) -> str:
    """``?`` placeholders to ``%s`` and literal ``%`` to ``%%`` (our SQL has no ``?`` in
    string literals)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Driver:
    """What PgConnection needs of a driver: psycopg, or the hook's ctypes libpq client."""

    def __init__(self, module: Any, conninfo_to_dict: Any) -> None:
        self.module = module
        self.connect = module.connect
        self.Error = module.Error
        self.OperationalError = module.OperationalError
        self.DataError = module.DataError
        self.ProgrammingError = module.ProgrammingError
        self.conninfo_to_dict = conninfo_to_dict


def _driver(light: bool) -> _Driver:
    if light:
        from dsh_knowledge import _libpq  # noqa: PLC0415

        if _libpq.enabled():
            return _Driver(_libpq, _libpq.conninfo_to_dict)
    try:
        import psycopg  # noqa: PLC0415 - optional extra, loaded only for a URL
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
    except ImportError as error:
        raise PostgresDriverMissingError(
            "A PostgreSQL database needs the optional extra: pip install 'dsh-knowledge[postgres]'."
        ) from error
    _silence(psycopg.__name__)
    return _Driver(psycopg, conninfo_to_dict)


def _silence(logger_name: str) -> None:
    """No log line of the driver reaches stderr (nor an application's log).

    psycopg logs what it ignores while cleaning up after an error we report ourselves
    ("error ignored terminating <psycopg.Pipeline …>: pipeline aborted" when the server
    refuses pipelined rows); with no handler configured Python would print it on stderr,
    ahead of the one JSON error a command prints. Every driver failure reaches the user once,
    translated (:mod:`dsh_knowledge._pg_errors`), never as the driver's own log line.
    """
    import logging  # noqa: PLC0415 - psycopg has loaded it already

    logger = logging.getLogger(logger_name)
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


class PgConnection:
    """A PostgreSQL connection with ``execute``/``executemany`` over ``?`` SQL."""

    def __init__(
        self,
        url: str,
        display: str,
        *,
        connect_timeout: float | None = None,
        light: bool = False,
    ) -> None:
        self._driver = _driver(light)
        self._url = url
        self.display = display
        self._timeout = connect_timeout
        self._transaction = False
        self._conn: Any = None
        self._connect()

    # --- connecting ---------------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        given = self._driver.conninfo_to_dict(self._url)
        options: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
        if "connect_timeout" not in given and not os.environ.get("PGCONNECT_TIMEOUT"):
            timeout = self._timeout if self._timeout is not None else DEFAULT_CONNECT_TIMEOUT
            options["connect_timeout"] = max(1, round(timeout))
        if "application_name" not in given and not os.environ.get("PGAPPNAME"):
            options["application_name"] = APPLICATION_NAME
        return options

    def _connect(self) -> None:
        driver = self._driver
        try:
            options = self._options()
        except driver.ProgrammingError as error:  # not a URL libpq can parse
            raise unparsable_url(error, self.display, self._url) from None
        try:
            self._conn = driver.connect(self._url, **options)
        except driver.Error as error:
            # from None: the driver's exception chain holds nothing the message does not say
            # (and may hold what it must not: libpq's text can quote the password).
            conninfo = driver.conninfo_to_dict(self._url)
            raise connect_error(error, self.display, self._url, conninfo) from None

    def reason(self, error: BaseException) -> str:
        """The driver's message for ``error``, fit to print (no secret of the URL in it)."""
        return reason(error, self._url)

    def _usable(self) -> bool:
        return self._conn is not None and not self._conn.closed and not self._conn.broken

    # --- statements ---------------------------------------------------------------------

    def _run(self, method: str, sql: str, params: Any) -> Any:
        driver = self._driver
        if not self._usable():
            if self._transaction:
                self._transaction = False
                raise ConnectionLostError(
                    f"The knowledge database {self.display} became unavailable: "
                    "the connection was lost."
                )
            self._connect()
        for attempt in range(2):
            cursor = self._conn.cursor()
            try:
                getattr(cursor, method)(sql_for_psycopg(sql), params)
            except driver.Error as error:
                lost, inside = self._conn.broken, self._transaction
                if lost and inside:
                    self._transaction = False  # the server rolled it back; the caller reruns
                translated = translate(error, self.display, driver, url=self._url)
                idle = lost and not inside
                if attempt == 0 and idle and isinstance(translated, ConnectionLostError):
                    # Idle connection lost (server restarted): one fresh connection. Inside a
                    # transaction the loss goes up: only the whole transaction may run again.
                    self._connect()
                    continue
                if translated is error:
                    raise
                raise translated from None
            return cursor
        raise AssertionError("unreachable")  # pragma: no cover

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._run("execute", sql, tuple(params))

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Any:
        return self._run("executemany", sql, [tuple(row) for row in params])

    # --- transactions -------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._transaction

    def begin(self, statement: str = "BEGIN") -> None:
        self.execute(statement)
        self._transaction = True

    def commit(self) -> None:
        driver = self._driver
        try:
            self._conn.execute("COMMIT")
        except driver.Error as error:
            self._transaction = False
            translated = translate(error, self.display, driver, url=self._url, during_commit=True)
            if translated is error:
                raise
            raise translated from None
        self._transaction = False

    def rollback(self) -> None:
        """End a failed transaction; a broken connection has nothing left to roll back."""
        self._transaction = False
        if not self._usable():
            return
        try:
            self._conn.execute("ROLLBACK")
        except self._driver.Error:
            pass

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

    @property
    def driver_error(self) -> type[BaseException]:
        """The driver's root exception class (for the few callers that must name it)."""
        error: type[BaseException] = self._driver.Error
        return error

    @property
    def driver_name(self) -> str:
        """``psycopg`` or ``libpq`` (the hook's ctypes client)."""
        return "libpq" if self._driver.module.__name__.endswith("_libpq") else "psycopg"

    @property
    def raw(self) -> Any:
        """The driver's connection itself (tests and the benchmark use it)."""
        return self._conn

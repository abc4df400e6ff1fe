"""A minimal libpq client over ctypes: the prompt hook's PostgreSQL driver.

The hook runs before every agent prompt and must finish in tens of milliseconds; importing
psycopg costs 100-250 ms (it loads asyncio, typing_extensions and its whole type system),
while loading libpq itself costs a few. So the hook speaks to libpq directly - the very
libpq that ``psycopg[binary]`` bundles, found on disk without importing psycopg - through the
small part of psycopg's interface :class:`~dsh_knowledge._pg_connection.PgConnection` uses:
``connect``, ``cursor().execute/executemany/fetchone/fetchall``, ``closed``/``broken``, and
errors carrying ``sqlstate``. Everything else (the CLI, the MCP server, the library) uses
psycopg; a differential test runs the hook through both and requires identical output.

Only what our SQL needs is converted: parameters are sent as text (``None`` as NULL; a list
as an array literal, ``bytes`` as a ``bytea`` hex literal), results read back as text and
turned into ``int`` (int2/int4/int8/oid), ``bool``, ``bytes`` (``bytea``: hybrid ranking's
stored vectors) or ``str``. Text holding NUL is refused before sending, as psycopg refuses it (libpq
would cut it short). Server notices are dropped, never printed.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "Connection",
    "DataError",
    "Error",
    "IntegrityError",
    "OperationalError",
    "ProgrammingError",
    "available",
    "connect",
    "conninfo_to_dict",
]

_CONNECTION_OK = 0
_PGRES_COMMAND_OK = 1
_PGRES_TUPLES_OK = 2
_PG_DIAG_SQLSTATE = ord("C")
_INTEGERS = {20, 21, 23, 26}  # int8, int2, int4, oid
_BOOL = 16
_BYTEA = 17


class Error(Exception):
    """A libpq failure; ``sqlstate`` is the server's code when it sent one."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class OperationalError(Error):
    pass


class DataError(Error):
    pass


class IntegrityError(Error):
    pass


class ProgrammingError(Error):
    pass


def _error_for(message: str, sqlstate: str | None, broken: bool) -> Error:
    kind: type[Error] = Error
    if broken or (sqlstate or "").startswith(("08", "57", "53", "40", "55")):
        kind = OperationalError
    elif (sqlstate or "").startswith("23"):
        kind = IntegrityError
    elif (sqlstate or "").startswith("22"):
        kind = DataError
    elif (sqlstate or "").startswith("42"):
        kind = ProgrammingError
    return kind(message, sqlstate)


# --- loading libpq ------------------------------------------------------------------------------

_LIB: Any = None
_NOTICE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_IGNORE_NOTICE = _NOTICE(lambda _arg, _message: None)


def _candidates() -> Iterator[str]:
    spec = importlib.util.find_spec("psycopg_binary")  # a path lookup: nothing is executed
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent.parent / "psycopg_binary.libs"
        yield from sorted(str(p) for p in bundled.glob("libpq-*.so*"))
    yield "libpq.so.5"


def _signatures(lib: Any) -> None:
    c = ctypes
    table: dict[str, tuple[Any, list[Any]]] = {
        "PQconnectdbParams": (c.c_void_p, [c.POINTER(c.c_char_p), c.POINTER(c.c_char_p), c.c_int]),
        "PQstatus": (c.c_int, [c.c_void_p]),
        "PQerrorMessage": (c.c_char_p, [c.c_void_p]),
        "PQfinish": (None, [c.c_void_p]),
        "PQsetNoticeProcessor": (c.c_void_p, [c.c_void_p, _NOTICE, c.c_void_p]),
        "PQexec": (c.c_void_p, [c.c_void_p, c.c_char_p]),
        "PQexecParams": (
            c.c_void_p,
            [
                c.c_void_p,
                c.c_char_p,
                c.c_int,
                c.c_void_p,
                c.POINTER(c.c_char_p),
                c.c_void_p,
                c.c_void_p,
                c.c_int,
            ],
        ),
        "PQresultStatus": (c.c_int, [c.c_void_p]),
        "PQresultErrorField": (c.c_char_p, [c.c_void_p, c.c_int]),
        "PQresultErrorMessage": (c.c_char_p, [c.c_void_p]),
        "PQntuples": (c.c_int, [c.c_void_p]),
        "PQnfields": (c.c_int, [c.c_void_p]),
        "PQftype": (c.c_uint, [c.c_void_p, c.c_int]),
        "PQgetisnull": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "PQgetlength": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "PQgetvalue": (c.c_void_p, [c.c_void_p, c.c_int, c.c_int]),
        "PQclear": (None, [c.c_void_p]),
        "PQconninfoParse": (c.c_void_p, [c.c_char_p, c.POINTER(c.c_void_p)]),
        "PQconninfoFree": (None, [c.c_void_p]),
        "PQfreemem": (None, [c.c_void_p]),
    }
    for name, (restype, argtypes) in table.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def _library() -> Any:
    global _LIB  # noqa: PLW0603 - loaded once per process
    if _LIB is None:
        for candidate in _candidates():
            try:
                lib = ctypes.CDLL(candidate)
            except OSError:
                continue
            _signatures(lib)
            _LIB = lib
            break
        else:
            raise OSError("libpq is not available")
    return _LIB


def available() -> bool:
    """Whether a libpq can be loaded (else callers use psycopg)."""
    try:
        _library()
    except (OSError, AttributeError):
        return False
    return True


# --- connection info --------------------------------------------------------------------------


class _ConninfoOption(ctypes.Structure):
    _fields_ = [  # ctypes reads the C layout of PQconninfoOption from this attribute
        ("keyword", ctypes.c_char_p),
        ("envvar", ctypes.c_char_p),
        ("compiled", ctypes.c_char_p),
        ("val", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("dispchar", ctypes.c_char_p),
        ("dispsize", ctypes.c_int),
    ]


def conninfo_to_dict(conninfo: str) -> dict[str, str]:
    """The parameters a URL or ``key=value`` string sets (as psycopg's function of that name)."""
    lib = _library()
    message = ctypes.c_void_p()
    options = lib.PQconninfoParse(conninfo.encode("utf-8"), ctypes.byref(message))
    if not options:
        text = ""
        if message.value is not None:
            text = ctypes.string_at(message.value).decode("utf-8", "replace")
            lib.PQfreemem(message)
        raise ProgrammingError(f"invalid connection string: {text.strip()}")
    try:
        found: dict[str, str] = {}
        array = ctypes.cast(options, ctypes.POINTER(_ConninfoOption))
        index = 0
        while array[index].keyword is not None:
            if array[index].val is not None:
                found[array[index].keyword.decode()] = array[index].val.decode("utf-8", "replace")
            index += 1
        return found
    finally:
        lib.PQconninfoFree(options)


# --- values -------------------------------------------------------------------------------------


def _text(value: str) -> bytes:
    if "\x00" in value:
        raise DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
    return value.encode("utf-8")


def _array_element(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _parameter(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, (list, tuple)):
        return _text("{" + ",".join(_array_element(v) for v in value) + "}")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"\\x" + bytes(value).hex().encode("ascii")  # bytea's text form
    return _text(str(value))


def _numbered(query: str) -> str:
    """psycopg's ``%s`` / ``%%`` placeholders as libpq's ``$1, $2 …`` and ``%``."""
    out: list[str] = []
    number = 0
    index = 0
    while index < len(query):
        char = query[index]
        if char == "%" and index + 1 < len(query):
            following = query[index + 1]
            if following == "s":
                number += 1
                out.append(f"${number}")
                index += 2
                continue
            if following == "%":
                out.append("%")
                index += 2
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _convert(raw: bytes, oid: int) -> Any:
    if oid == _BYTEA:  # the server's text form: \x and two hex digits a byte
        if not raw.startswith(b"\\x"):
            raise DataError("bytea values must be sent as hex (bytea_output = 'hex')")
        return bytes.fromhex(raw[2:].decode("ascii"))
    text = raw.decode("utf-8")
    if oid in _INTEGERS:
        return int(text)
    if oid == _BOOL:
        return text == "t"
    return text


# --- connection and cursor ------------------------------------------------------------------------


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._rows: list[tuple[Any, ...]] = []
        self._position = 0

    def execute(self, query: str, params: Sequence[Any] = ()) -> Cursor:
        self._rows = self._connection._run(query, params)
        self._position = 0
        return self

    def executemany(self, query: str, params_seq: Iterable[Sequence[Any]]) -> Cursor:
        for params in params_seq:
            self._connection._run(query, params)
        self._rows, self._position = [], 0
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._position >= len(self._rows):
            return None
        row = self._rows[self._position]
        self._position += 1
        return row

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows[self._position :]
        self._position = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row


class Connection:
    """One libpq connection (autocommit: every BEGIN/COMMIT is the caller's)."""

    def __init__(self, handle: int, lib: Any) -> None:
        self._handle: int | None = handle
        self._lib = lib
        lib.PQsetNoticeProcessor(handle, _IGNORE_NOTICE, None)

    @property
    def closed(self) -> bool:
        return self._handle is None

    @property
    def broken(self) -> bool:
        return self._handle is not None and self._lib.PQstatus(self._handle) != _CONNECTION_OK

    def cursor(self) -> Cursor:
        return Cursor(self)

    def execute(self, query: str, params: Sequence[Any] = ()) -> Cursor:
        return Cursor(self).execute(query, params)

    def close(self) -> None:
        if self._handle is not None:
            self._lib.PQfinish(self._handle)
            self._handle = None

    def _run(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        lib = self._lib
        if self._handle is None:
            raise OperationalError("the connection is closed")
        sql = _numbered(query).encode("utf-8")
        if params:
            sent = [_parameter(value) for value in params]
            array = (ctypes.c_char_p * len(sent))(*sent)
            result = lib.PQexecParams(self._handle, sql, len(sent), None, array, None, None, 0)
        else:
            result = lib.PQexec(self._handle, sql)
        if not result:
            message = (lib.PQerrorMessage(self._handle) or b"").decode("utf-8", "replace")
            raise _error_for(message.strip() or "the server sent no result", None, self.broken)
        try:
            status = lib.PQresultStatus(result)
            if status == _PGRES_COMMAND_OK:
                return []
            if status != _PGRES_TUPLES_OK:
                state = lib.PQresultErrorField(result, _PG_DIAG_SQLSTATE)
                message = (lib.PQresultErrorMessage(result) or b"").decode("utf-8", "replace")
                raise _error_for(message.strip(), state.decode() if state else None, self.broken)
            columns = lib.PQnfields(result)
            oids = [lib.PQftype(result, column) for column in range(columns)]
            rows: list[tuple[Any, ...]] = []
            for row in range(lib.PQntuples(result)):
                values: list[Any] = []
                for column, oid in enumerate(oids):
                    if lib.PQgetisnull(result, row, column):
                        values.append(None)
                        continue
                    size = lib.PQgetlength(result, row, column)
                    raw = ctypes.string_at(lib.PQgetvalue(result, row, column), size)
                    values.append(_convert(raw, oid))
                rows.append(tuple(values))
            return rows
        finally:
            lib.PQclear(result)


def connect(conninfo: str, **options: Any) -> Connection:
    """A connection to ``conninfo`` (a URL or ``key=value`` string) plus libpq ``options``.

    ``autocommit`` and ``prepare_threshold`` (psycopg's) are accepted and mean what they mean
    there: this client never opens transactions itself and never prepares statements.
    """
    lib = _library()
    extra = {
        key: str(value)
        for key, value in options.items()
        if key not in {"autocommit", "prepare_threshold"}
    }
    extra.setdefault("client_encoding", "UTF8")
    keywords = [b"dbname", *(key.encode() for key in extra), None]
    values = [conninfo.encode("utf-8"), *(value.encode("utf-8") for value in extra.values()), None]
    handle = lib.PQconnectdbParams(
        (ctypes.c_char_p * len(keywords))(*keywords), (ctypes.c_char_p * len(values))(*values), 1
    )
    if not handle:
        raise OperationalError("connection failed: out of memory")
    if lib.PQstatus(handle) != _CONNECTION_OK:
        message = (lib.PQerrorMessage(handle) or b"").decode("utf-8", "replace").strip()
        lib.PQfinish(handle)
        raise OperationalError(f"connection failed: {message}")
    return Connection(handle, lib)


def enabled() -> bool:
    """Whether the light client may be used (``DSH_KNOWLEDGE_LIBPQ=0`` turns it off)."""
    return os.environ.get("DSH_KNOWLEDGE_LIBPQ", "1") != "0" and available()

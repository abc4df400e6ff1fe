"""The PostgreSQL backend: the same store on a shared server (``dsh-knowledge[postgres]``).

Opened by ``KnowledgeStore("postgresql://…")`` (or ``postgres://``); libpq reads the URL, so
``PGHOST``/``PGUSER``/``PGPASSWORD``/``PGDATABASE``, ``~/.pgpass``, ``?host=/socket/dir`` and
``sslmode`` work as everywhere else. The password is never shown: :attr:`path` is the URL with
it replaced.

Transactions keep SQLite's guarantees. PostgreSQL's default isolation (READ COMMITTED) does
not serialise a read-modify-write, so every lifecycle change locks its rows first
(:meth:`lock_items`, ``SELECT … FOR UPDATE`` in id order); a serialisation failure or a
deadlock (SQLSTATE 40001, 40P01) reruns the whole transaction, with back-off, as SQLite's busy
retry does. A connection lost before ``COMMIT`` (the server restarted) reruns it once on a new
connection; lost *during* ``COMMIT`` the outcome is unknown and is reported as such. Reads that
need one snapshot run in a ``REPEATABLE READ READ ONLY`` transaction, which a hot standby
serves too.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from dsh_knowledge._pg_connection import PgConnection
from dsh_knowledge._pg_errors import (
    ConnectionLostError,
    LockTimeoutError,
    ReadOnlyError,
    RetryableError,
)
from dsh_knowledge._pg_schema import SCHEMA_TABLES, migrate
from dsh_knowledge._pg_search import index_pending
from dsh_knowledge._storage_errors import printable
from dsh_knowledge._store_base import KnowledgeStore
from dsh_knowledge.errors import DatabaseBusyError, StorageError, ValidationError
from dsh_knowledge.store_location import redact_url, resolve_database
from dsh_knowledge.vectors import refresh_touched

T = TypeVar("T")

# Total time a writer keeps retrying conflicting transactions (as on SQLite).
WRITE_RETRY_SECONDS = 60.0
# The prompt hook's bookkeeping waits at most this long for a row lock, then is skipped.
RECORD_LOCK_TIMEOUT = "1s"
_ASCII_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = "abcdefghijklmnopqrstuvwxyz"
_FOLD = str.maketrans(_ASCII_UPPER, _ASCII_LOWER)


class PostgresStore(KnowledgeStore):
    """A knowledge database on a PostgreSQL server."""

    kind = "postgresql"
    no_limit = "ALL"
    greatest = "GREATEST"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        connect_timeout: float | None = None,
        light_driver: bool = False,
    ) -> None:
        url = resolve_database() if path is None else os.fspath(path)
        if "\x00" in url or printable(url) != url:
            raise ValidationError(
                "Database URL must be valid Unicode without NUL characters: "
                f"{printable(redact_url(url))}"
            )
        self.path = redact_url(url)
        self.search_cache = {}
        self.index_ready = True
        # light_driver: the hook's ctypes libpq client instead of psycopg (start-up time).
        self.connection = PgConnection(
            url, self.path, connect_timeout=connect_timeout, light=light_driver
        )
        try:
            migrate(self, create=create)
        except BaseException:
            self.connection.close()
            raise

    def check_encoding(self, encoding: str) -> None:
        """Refuse a database that cannot hold any text (SQL_ASCII, LATIN1...)."""
        if encoding.upper() not in {"UTF8", "UTF-8"}:
            raise StorageError(
                f"The knowledge database {self.path} uses the encoding {encoding}; "
                "dsh-knowledge needs a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8')."
            )

    # --- transactions -------------------------------------------------------------------

    def _attempt(self, work: Callable[[], T], index: bool) -> T:
        db = self.connection
        db.begin()
        try:
            result = work()
            if index:
                # Triggers queued every item this transaction touched: re-index them
                # before commit, so the search index never lags our own writes, and
                # bring their stored vectors (hybrid ranking) in step the same way.
                touched = index_pending(db)
                if touched:
                    refresh_touched(self, touched)
            db.commit()
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise
        return result

    def write(self, work: Callable[[], T], *, index: bool = True) -> T:
        """Run ``work`` in one transaction; rerun from the start on conflicts.

        ``work`` must be safe to run again: a conflict rolls everything back first.
        """
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        delay = 0.005
        reconnected = False
        while True:
            try:
                return self._attempt(work, index)
            except RetryableError as error:
                if time.monotonic() >= deadline:
                    raise DatabaseBusyError(
                        "The knowledge database stayed busy with conflicting writers; try again."
                    ) from error
            except ConnectionLostError as error:
                if error.during_commit:
                    raise ConnectionLostError(
                        f"The connection to the knowledge database {self.path} was lost while "
                        "committing: the change may or may not have been saved; check before "
                        "repeating it."
                    ) from None
                if reconnected:
                    raise
                reconnected = True  # the next statement opens a new connection
                continue
            # Jitter keeps several waiting writers from retrying in lock-step.
            import random  # noqa: PLC0415 - only when writers conflict (not at start-up)

            time.sleep(delay * (0.5 + random.random()))  # noqa: S311 - not crypto
            delay = min(delay * 2, 0.25)

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """One snapshot for several SELECTs (inside a write: that transaction's view)."""
        db = self.connection
        if db.in_transaction:
            yield db
            return
        db.begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise
        if db.in_transaction:
            db.commit()

    def close(self) -> None:
        self.connection.close()

    def lock_items(self, item_ids: Sequence[str]) -> None:
        # In id order (byte order, COLLATE "C"): two writers locking the same pair of
        # items take them in the same order and cannot deadlock each other.
        self.connection.execute(
            "SELECT id FROM knowledge WHERE id = ANY(?) ORDER BY id FOR UPDATE",
            (sorted(set(item_ids)),),
        )

    def lock_writers(self, purpose: str) -> None:
        # A transaction-level advisory lock, keyed by the name: released by COMMIT/ROLLBACK.
        self.connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (purpose,))

    # --- the dialect --------------------------------------------------------------------

    def contains_clause(self, column: str, text: str) -> tuple[str, list[Any]]:
        # SQLite's LIKE folds ASCII letters only; translate() does exactly that here.
        return (
            f"strpos(translate({column}, '{_ASCII_UPPER}', '{_ASCII_LOWER}'), ?) > 0",
            [text.translate(_FOLD)],
        )

    def table_exists(self, name: str) -> bool:
        if name in SCHEMA_TABLES:  # part of the migrated schema, which the open checked
            return True
        row = self.connection.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()
        return bool(row[0])

    def best_effort_write(self, work: Callable[[], None]) -> bool:
        def bounded() -> None:
            self.connection.execute(f"SET LOCAL lock_timeout = '{RECORD_LOCK_TIMEOUT}'")
            work()

        try:
            self._attempt(bounded, index=False)
        except (LockTimeoutError, RetryableError, ReadOnlyError):
            # Busy, or a hot standby that serves reads only: the bookkeeping is skipped,
            # and what it was bookkeeping for (the prompt hook's block) still happens.
            return False
        return True

    def settle_after_bulk_write(self) -> None:
        # Freshly loaded pages are not yet marked all-visible and the statistics are those
        # of an empty table: the ranked query ran about three times slower (10,000 items:
        # 13 ms against 4.5 ms) until autovacuum came by. VACUUM cannot run inside a
        # transaction; it is best effort (the data is committed; a role that does not own
        # the tables only gets a notice, which is dropped).
        with contextlib.suppress(StorageError, self.connection.driver_error):
            self.connection.execute(
                "VACUUM (ANALYZE) knowledge, knowledge_evidence, knowledge_search_doc, "
                "knowledge_search_vocab, knowledge_search_pending"
            )

    def deployment_warnings(self) -> list[str]:
        # Asked of pg_trgm itself rather than read off the locale name: what matters is
        # whether a Han character yields trigrams (it does not under LC_CTYPE = C).
        try:
            row = self.connection.execute(
                "SELECT cardinality(show_trgm(?)) = 0, current_setting('lc_ctype')", ("漢字",)
            ).fetchone()
        except (StorageError, self.connection.driver_error):  # pg_trgm not on the search path
            return []
        if not row[0]:
            return []
        return [
            f"The knowledge database {self.path} has the character type (LC_CTYPE) "
            f"{row[1]}, under which Chinese and other non-ASCII text yields no trigrams: "
            "such queries scan every item of the scope (same results, slower). Create the "
            "database with a UTF-8 character type (--locale C.UTF-8) and import into it."
        ]

    def sync_search_index(self) -> None:
        db = self.connection
        if db.execute("SELECT EXISTS (SELECT 1 FROM knowledge_search_pending)").fetchone()[0]:
            # Queued by an edit made outside dsh-knowledge (psql): the write drains it. A
            # hot standby cannot; it answers from the index as the primary left it.
            with contextlib.suppress(ReadOnlyError):
                self.write(lambda: None)

"""The one storage interface the repository layer uses, and the choice of its implementation.

``KnowledgeStore(location)`` opens an SQLite file (:class:`~dsh_knowledge._sqlite_store.
SQLiteStore`) or, for a ``postgresql://`` / ``postgres://`` URL, a PostgreSQL database
(:class:`~dsh_knowledge._pg_store.PostgresStore`, which needs ``dsh-knowledge[postgres]``).
Both give the repository, retrieval and agent layers the same things:

- ``connection.execute(sql, params)`` / ``executemany`` with ``?`` placeholders, rows as
  tuples (the PostgreSQL connection translates placeholders for psycopg);
- ``write(work)``: ``work`` in one serialised transaction, retried from the start on
  contention (SQLite ``BEGIN IMMEDIATE``; PostgreSQL row locks taken by
  :meth:`lock_items`, and a retry on serialisation failures and deadlocks);
- ``read()``: one consistent snapshot for several SELECTs;
- the few SQL spellings that differ (:meth:`contains_clause`, :attr:`no_limit`,
  :attr:`greatest`), the tables outside the numbered schema (:meth:`table_exists`), and
  best-effort writes for the prompt hook's bookkeeping (:meth:`best_effort_write`).

Scoring and ranking never happen in a backend: they are Python (:mod:`dsh_knowledge.scoring`),
so they cannot differ between the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from dsh_knowledge.store_location import is_postgres_url, resolve_database

T = TypeVar("T")


class KnowledgeStore:
    """An open knowledge database: ``KnowledgeStore(path)``, ``KnowledgeStore(":memory:")``
    or ``KnowledgeStore("postgresql://…")``.

    ``KnowledgeStore()`` opens the database every front end resolves (``$DSH_KNOWLEDGE_DB``,
    else ``$DSH_HOME/knowledge/knowledge.sqlite``; see :mod:`dsh_knowledge.store_location`).
    ``create=False`` refuses to create a database or its schema (the hooks never do).
    PostgreSQL only: ``connect_timeout`` (seconds, unless the URL or ``PGCONNECT_TIMEOUT``
    says) and ``light_driver`` (the prompt hook's ctypes libpq client, not psycopg).
    """

    #: "sqlite" or "postgresql".
    kind: str = ""
    #: Where the store lives, safe to print: the file's path, or the URL without password.
    path: str = ""
    connection: Any
    #: Per-connection facts the retrieval layer may reuse until the database changes.
    search_cache: dict[str, Any]
    #: Whether retrieval can narrow candidates through an index (else it scans, same result).
    index_ready: bool = False
    #: ``LIMIT`` meaning "no limit" (SQLite: -1; PostgreSQL: ALL) before an ``OFFSET``.
    no_limit: str = "-1"
    #: The two-argument maximum function (SQLite: max; PostgreSQL: GREATEST).
    greatest: str = "max"

    def __new__(cls, path: str | os.PathLike[str] | None = None, **options: Any) -> KnowledgeStore:
        chosen: type[KnowledgeStore] = cls
        if cls is KnowledgeStore:
            location = resolve_database() if path is None else os.fspath(path)
            if is_postgres_url(location):
                from dsh_knowledge._pg_store import PostgresStore  # noqa: PLC0415 - optional

                chosen = PostgresStore
            else:
                from dsh_knowledge._sqlite_store import SQLiteStore  # noqa: PLC0415

                chosen = SQLiteStore
        return super().__new__(chosen)

    # --- the interface ------------------------------------------------------------------

    def write(self, work: Callable[[], T]) -> T:
        """Run ``work`` in one write transaction, retried from the start under contention."""
        raise NotImplementedError

    def read(self) -> AbstractContextManager[Any]:
        """A consistent snapshot for several SELECTs; yields the connection."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def lock_items(self, item_ids: Sequence[str]) -> None:
        """Inside :meth:`write`: hold the rows of ``item_ids`` until commit.

        A lifecycle change reads an item, checks a rule and writes it: the read must not go
        stale before the write (two supersedes of one item must not both win). SQLite's
        ``BEGIN IMMEDIATE`` already serialises whole transactions, so this is a no-op there.
        """

    def lock_writers(self, purpose: str) -> None:
        """Inside :meth:`write`: wait for, then hold until commit, the lock named ``purpose``.

        For a transaction that checks which rows are absent before inserting them (``import``):
        row locks cannot guard rows that do not exist yet. SQLite's ``BEGIN IMMEDIATE``
        already serialises whole transactions, so this is a no-op there.
        """

    def contains_clause(self, column: str, text: str) -> tuple[str, list[Any]]:
        """SQL (and parameters) for "``column`` contains ``text``, ASCII case folded"."""
        raise NotImplementedError

    def table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def best_effort_write(self, work: Callable[[], None]) -> bool:
        """Run ``work`` in one write transaction, waiting at most about a second for locks;
        False (nothing written) when it stayed busy."""
        raise NotImplementedError

    def settle_after_bulk_write(self) -> None:
        """After a large committed write (``import``): bring the planner's statistics and
        visibility information up to date now rather than whenever the database would."""

    def deployment_warnings(self) -> list[str]:
        """What a user should know about how this database is set up (``health`` says it):
        conditions that leave results right but slow, never errors."""
        return []

    def sync_search_index(self) -> None:
        """Bring the search index up to date with changes it has not seen (hand edits)."""

    def change_token(self) -> object | None:
        """Equal on two calls only if nothing was committed to the database in between, by
        this connection or any other; None where a backend cannot tell cheaply (then what
        a long-lived process derives from the tables is read again on every use)."""
        return None

    def __enter__(self) -> KnowledgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def escape_like(value: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` so LIKE matches the text literally (ESCAPE '\\')."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

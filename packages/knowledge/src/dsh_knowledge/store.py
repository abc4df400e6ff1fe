"""The knowledge store: ``KnowledgeStore(path_or_url)`` and the SQLite schema version.

:class:`KnowledgeStore` opens an SQLite file or a PostgreSQL URL behind one interface (see
:mod:`dsh_knowledge._store_base`); the SQLite backend is :mod:`dsh_knowledge._sqlite_store`,
the PostgreSQL one :mod:`dsh_knowledge._pg_store`.
"""

from __future__ import annotations

from dsh_knowledge._sqlite_store import (
    BUSY_TIMEOUT_MS,
    MIGRATIONS,
    RECORD_BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    WRITE_RETRY_SECONDS,
    SQLiteStore,
)
from dsh_knowledge._store_base import KnowledgeStore

__all__ = [
    "BUSY_TIMEOUT_MS",
    "MIGRATIONS",
    "RECORD_BUSY_TIMEOUT_MS",
    "SCHEMA_VERSION",
    "WRITE_RETRY_SECONDS",
    "KnowledgeStore",
    "SQLiteStore",
]

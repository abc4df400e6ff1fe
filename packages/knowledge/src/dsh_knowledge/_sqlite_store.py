"""The SQLite backend: connection, pragmas, schema migrations v1 -> v2 -> v3, write transactions.

The schema (tables, columns, checks, indexes, ``user_version``) is byte-for-byte the earlier
Node tool's, so a database written by either tool opens in the other. Each migration step
runs in its own ``BEGIN IMMEDIATE`` transaction together with the ``user_version`` bump: a
step that fails rolls back and leaves the file at its previous version with all its data.

Writers use ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers can never
deadlock upgrading a read lock), a busy timeout, and a bounded retry with back-off around
the whole transaction, so "database is locked" does not reach callers under ordinary
contention (several processes adding items at once).
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from dsh_knowledge._storage_errors import printable, storage_error
from dsh_knowledge._store_base import KnowledgeStore, escape_like
from dsh_knowledge.errors import (
    DatabaseBusyError,
    DatabaseCorruptError,
    MigrationError,
    SchemaTooNewError,
    StorageError,
    ValidationError,
)
from dsh_knowledge.search_index import ensure_search_index, index_pending, sync_search_index
from dsh_knowledge.store_location import resolve_database
from dsh_knowledge.vectors import refresh_touched

SCHEMA_VERSION = 3
BUSY_TIMEOUT_MS = 5000
# The prompt hook's bookkeeping waits at most this long for a busy file, then is skipped.
RECORD_BUSY_TIMEOUT_MS = 1000
# Total time a writer keeps retrying a busy database before giving up with database-busy.
WRITE_RETRY_SECONDS = 60.0

T = TypeVar("T")

SCHEMA_V1 = """
CREATE TABLE knowledge (
  id TEXT PRIMARY KEY NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('fact', 'decision', 'lesson')),
  content TEXT NOT NULL CHECK (length(trim(content)) > 0),
  workspace TEXT NOT NULL CHECK (length(trim(workspace)) > 0),
  project TEXT CHECK (project IS NULL OR length(trim(project)) > 0),
  status TEXT NOT NULL CHECK (status IN ('candidate', 'verified', 'superseded', 'archived')),
  replacement_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  FOREIGN KEY (replacement_id) REFERENCES knowledge(id) ON DELETE RESTRICT,
  CHECK (replacement_id IS NULL OR replacement_id <> id),
  CHECK (status <> 'superseded' OR replacement_id IS NOT NULL),
  CHECK (status NOT IN ('candidate', 'verified') OR replacement_id IS NULL)
);
CREATE TABLE knowledge_evidence (
  knowledge_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  type TEXT NOT NULL CHECK (type IN ('session', 'file', 'git')),
  source TEXT NOT NULL CHECK (length(trim(source)) > 0),
  locator TEXT,
  timestamp TEXT NOT NULL,
  PRIMARY KEY (knowledge_id, ordinal),
  FOREIGN KEY (knowledge_id) REFERENCES knowledge(id) ON DELETE CASCADE
);
CREATE INDEX knowledge_workspace_project_idx ON knowledge(workspace, project);
CREATE INDEX knowledge_project_idx ON knowledge(project);
CREATE INDEX knowledge_type_idx ON knowledge(type);
CREATE INDEX knowledge_status_idx ON knowledge(status);
CREATE INDEX knowledge_updated_at_idx ON knowledge(updated_at);
"""

# v2: the evidence table is rebuilt (SQLite cannot add a table CHECK to an existing table).
SCHEMA_V2 = """
CREATE TABLE knowledge_evidence_v2 (
  knowledge_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  type TEXT NOT NULL CHECK (type IN ('session', 'file', 'git')),
  source TEXT NOT NULL CHECK (length(trim(source)) > 0),
  locator TEXT,
  timestamp TEXT NOT NULL,
  git_commit TEXT,
  git_path TEXT,
  PRIMARY KEY (knowledge_id, ordinal),
  FOREIGN KEY (knowledge_id) REFERENCES knowledge(id) ON DELETE CASCADE,
  CHECK (
    (git_commit IS NULL AND git_path IS NULL) OR
    (type = 'file' AND git_commit IS NOT NULL AND git_path IS NOT NULL AND
     length(git_commit) IN (40, 64) AND git_commit NOT GLOB '*[^0-9a-fA-F]*' AND
     length(trim(git_path)) > 0 AND substr(git_path, 1, 1) <> '/' AND
     instr(git_path, char(92)) = 0)
  )
);
INSERT INTO knowledge_evidence_v2
  (knowledge_id, ordinal, type, source, locator, timestamp, git_commit, git_path)
SELECT knowledge_id, ordinal, type, source, locator, timestamp, NULL, NULL
FROM knowledge_evidence;
DROP TABLE knowledge_evidence;
ALTER TABLE knowledge_evidence_v2 RENAME TO knowledge_evidence;
"""

SCHEMA_V3 = """
ALTER TABLE knowledge ADD COLUMN creation_origin TEXT NOT NULL DEFAULT 'explicit'
  CHECK (creation_origin IN ('explicit', 'automatic'));
CREATE INDEX knowledge_origin_scope_status_idx
  ON knowledge(workspace, project, status, creation_origin);
"""

# dsh-knowledge 0.1.0 created this index with the columns in another order. The schema
# stays at version 3 (the Node tool knows no version 4), so the repair is detected by the
# index's columns rather than by user_version.
ORIGIN_INDEX = "knowledge_origin_scope_status_idx"
ORIGIN_INDEX_COLUMNS = ("workspace", "project", "status", "creation_origin")
ORIGIN_INDEX_DDL = (
    "CREATE INDEX knowledge_origin_scope_status_idx\n"
    "  ON knowledge(workspace, project, status, creation_origin)"
)

# Ordered, named migrations: (version reached, name, DDL).
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "create-knowledge-and-evidence", SCHEMA_V1),
    (2, "evidence-git-provenance", SCHEMA_V2),
    (3, "knowledge-creation-origin", SCHEMA_V3),
)


def _is_busy(error: sqlite3.Error) -> bool:
    text = str(error).lower()
    return "database is locked" in text or "database is busy" in text or "locked" in text


def _is_read_only(error: sqlite3.Error) -> bool:
    return str(getattr(error, "sqlite_errorname", "")).startswith("SQLITE_READONLY")


def _split_statements(script: str) -> list[str]:
    # Our DDL has no semicolons inside literals, so a plain split is exact. executescript()
    # would COMMIT the open transaction first, which is exactly what a migration must avoid.
    return [statement.strip() for statement in script.split(";") if statement.strip()]


def _create_private(path: Path) -> None:
    """Create the database's folder (0700) and an empty file (0600) if they are missing.

    Knowledge may quote private code and decisions: other local users must not read it.
    An existing folder or file keeps its mode (the owner chose it). SQLite gives its
    ``-wal``/``-journal`` files the database file's permissions, so they follow.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SQLiteStore(KnowledgeStore):
    """An SQLite knowledge database (a file, or ``:memory:``)."""

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        connect_timeout: float | None = None,  # PostgreSQL's: a file opens at once
        light_driver: bool = False,  # PostgreSQL's
    ) -> None:
        raw = resolve_database() if path is None else os.fspath(path)
        if not raw.strip():
            raise ValidationError("Database path must not be empty.")
        if printable(raw) != raw:
            # Undecodable bytes (argv, a directory listing): SQLite and our JSON output take
            # text only, and a file whose name we cannot print is not one we should create.
            raise ValidationError(
                f"Database path must be valid Unicode; it holds undecodable bytes: {printable(raw)}"
            )
        self.path = raw if raw == ":memory:" else str(Path(raw).resolve())
        self.search_cache = {}
        self.index_ready = False
        self._commits = 0  # our own commits (data_version counts the other connections')
        if self.path != ":memory:":
            if not create and not os.path.isfile(self.path):
                raise StorageError(f"The knowledge database {self.path} does not exist.")
            try:
                _create_private(Path(self.path))
            except OSError as error:
                raise StorageError(f"Cannot create the database directory: {error}") from error
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves (BEGIN IMMEDIATE for writes).
            self.connection = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as error:
            raise StorageError(f"Cannot open the knowledge database: {error}") from error
        try:
            try:
                self._configure()
            except sqlite3.DatabaseError as error:  # not a database, unreadable, read-only
                raise storage_error(error, self.path) or StorageError(
                    f"Cannot open the knowledge database: {printable(str(error))}"
                ) from error
            self._migrate()
            try:
                # False only on an SQLite without FTS5/trigram: retrieval then scans.
                self.index_ready = ensure_search_index(self)
            except sqlite3.Error as error:  # e.g. a read-only file that needs its index built
                known = storage_error(error, self.path)
                if isinstance(known, DatabaseCorruptError):
                    raise known from error
                raise StorageError(
                    f"Cannot prepare the search index: {printable(str(error))}"
                ) from error
        except BaseException:
            self.connection.close()
            raise

    # --- set-up ---------------------------------------------------------------------------

    def _configure(self) -> None:
        connection = self.connection
        self._retry(lambda: connection.execute("PRAGMA foreign_keys = ON"))
        self._retry(lambda: connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}"))
        self._retry(lambda: connection.execute("PRAGMA synchronous = NORMAL"))
        if self.path != ":memory:":
            self._retry(lambda: connection.execute("PRAGMA journal_mode = WAL").fetchone())

    @property
    def user_version(self) -> int:
        row = self.connection.execute("PRAGMA user_version").fetchone()
        return int(row[0])

    def _migrate(self) -> None:
        version = self.user_version
        if version > SCHEMA_VERSION:
            raise SchemaTooNewError(
                f"Database schema version {version} is newer than supported version "
                f"{SCHEMA_VERSION}."
            )
        for target, name, ddl in MIGRATIONS:
            if version >= target:
                continue

            def step(target: int = target, ddl: str = ddl) -> None:
                # Another process may have migrated while we waited for the write lock.
                if self.user_version >= target:
                    return
                for statement in _split_statements(ddl):
                    self.connection.execute(statement)
                self.connection.execute(f"PRAGMA user_version = {target}")

            try:
                self.write(step)
            except sqlite3.Error as error:
                known = storage_error(error, self.path)
                if isinstance(known, DatabaseCorruptError):
                    raise known from error
                full = known is not None and known.message.startswith("disk full")
                raise MigrationError(
                    f"Migration {target} ({name}) failed and was rolled back; the database "
                    f"is still at version {self.user_version}: "
                    + ("disk full: " if full else "")
                    + printable(str(error))
                ) from error
            version = self.user_version
        self._repair_origin_index()

    def _origin_index_columns(self) -> tuple[str, ...]:
        rows = self.connection.execute(f"PRAGMA index_info({ORIGIN_INDEX})").fetchall()
        return tuple(str(row[2]) for row in sorted(rows))

    def _repair_origin_index(self) -> None:
        """Recreate ``knowledge_origin_scope_status_idx`` if it is not the earlier tool's.

        One transaction (drop and create together), re-checked under the write lock since
        another process may have repaired it meanwhile. A read-only file keeps its old index:
        the index only speeds up queries, and reading must still work.
        """
        if self._origin_index_columns() == ORIGIN_INDEX_COLUMNS:
            return

        def repair() -> None:
            if self._origin_index_columns() == ORIGIN_INDEX_COLUMNS:
                return
            self.connection.execute(f"DROP INDEX IF EXISTS {ORIGIN_INDEX}")
            self.connection.execute(ORIGIN_INDEX_DDL)

        try:
            self.write(repair)
        except sqlite3.Error as error:
            if getattr(error, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
                return
            raise MigrationError(
                f"Repairing index {ORIGIN_INDEX} failed and was rolled back: {error}"
            ) from error

    # --- transactions ---------------------------------------------------------------------

    def _retry(self, action: Callable[[], T]) -> T:
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise
                if time.monotonic() >= deadline:
                    raise DatabaseBusyError(
                        "The knowledge database stayed locked by other writers; try again."
                    ) from error
                # Jitter keeps several waiting writers from retrying in lock-step.
                time.sleep(delay * (0.5 + random.random()))  # noqa: S311 - not crypto
                delay = min(delay * 2, 0.25)

    def write(self, work: Callable[[], T]) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction, retried while the file is busy.

        ``work`` must be safe to run again from the start: a busy error rolls everything
        back before the retry.
        """

        def attempt() -> T:
            self.connection.execute("BEGIN IMMEDIATE")
            try:
                result = work()
                if self.index_ready:
                    # Triggers queued every item this transaction touched; re-index them
                    # before commit so the search index never lags our own writes, and
                    # bring their stored vectors (hybrid ranking) in step the same way.
                    touched = index_pending(self.connection)
                    if touched:
                        refresh_touched(self, touched)
                self.connection.execute("COMMIT")
                self._commits += 1
            except BaseException:
                if self.connection.in_transaction:
                    self.connection.execute("ROLLBACK")
                raise
            return result

        return self._retry(attempt)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several SELECTs (a deferred read transaction)."""
        self.connection.execute("BEGIN")
        try:
            yield self.connection
        finally:
            if self.connection.in_transaction:
                self.connection.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()

    # --- the dialect ----------------------------------------------------------------------

    def contains_clause(self, column: str, text: str) -> tuple[str, list[Any]]:
        pattern = f"%{escape_like(text)}%"
        longest = self.connection.getlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH)
        if len(pattern.encode("utf-8", "surrogatepass")) <= longest:
            # SQLite's LIKE folds ASCII letters only, exactly like lower() below.
            return f"{column} LIKE ? ESCAPE '\\'", [pattern]
        # SQLite refuses LIKE patterns over 50,000 bytes ("pattern too complex"). instr on
        # lower() is the same literal, ASCII-case-insensitive match, without the cap.
        return f"instr(lower({column}), lower(?)) > 0", [text]

    def table_exists(self, name: str) -> bool:
        row = self.connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def best_effort_write(self, work: Callable[[], None]) -> bool:
        db = self.connection
        db.execute(f"PRAGMA busy_timeout = {RECORD_BUSY_TIMEOUT_MS}")
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                work()
                db.execute("COMMIT")
                self._commits += 1
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as error:
            # Busy, or a read-only file: the bookkeeping is skipped, and what it was
            # bookkeeping for (the prompt hook's block) still happens.
            if _is_busy(error) or _is_read_only(error):
                return False
            raise
        finally:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return True

    def sync_search_index(self) -> None:
        if self.index_ready:
            sync_search_index(self)

    def change_token(self) -> object | None:
        # data_version moves when another connection commits; our own commits are counted.
        return (self.connection.execute("PRAGMA data_version").fetchone()[0], self._commits)

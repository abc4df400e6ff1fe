"""The PostgreSQL schema: versioned migrations, each one transaction under an advisory lock.

Table and column names are the SQLite store's (``knowledge``, ``knowledge_evidence``,
``knowledge_search_doc`` ...), with the same checks, so one mental model and one query serve
both. Differences, each for a reason:

- every text column is ``COLLATE "C"``: ordering and comparison are by bytes, as SQLite's;
- ``workspace`` and ``project`` have hash indexes (a B-tree entry is capped at ~2.7 kB, and
  a workspace may be any long text, as it may be on SQLite);
- the search index is a ``pg_trgm`` GIN index over our own token stream (PostgreSQL's text
  search does not split Chinese; trigrams of our tokens do, given a UTF-8 database);
- the version lives in ``dshpy_schema_migrations`` (one row per applied step), not in
  ``PRAGMA user_version``, and the agent bookkeeping tables (``dshpy_session_injections``,
  ``dshpy_extraction_progress``) and hybrid ranking's ``item_vectors`` are migrations of
  their own rather than created on use.

:func:`migrate` applies the missing steps. Each runs in one transaction that first takes
``pg_advisory_xact_lock`` and re-reads the version, so ten processes opening a fresh
database at once create it once; a failing step rolls back whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_knowledge._vector_table import POSTGRES_DDL as _ITEM_VECTORS
from dsh_knowledge.errors import MigrationError, SchemaTooNewError, StorageError
from dsh_knowledge.models import now_timestamp

if TYPE_CHECKING:
    from dsh_knowledge._pg_store import PostgresStore

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

VERSION_TABLE = "dshpy_schema_migrations"
# Any fixed 64-bit number: the lock is scoped to the database.
ADVISORY_LOCK_KEY = 0x64_73_68_6B_6E_6F_77  # "dshknow"

_KNOWLEDGE = (
    """CREATE TABLE knowledge (
  id TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  type TEXT COLLATE "C" NOT NULL CHECK (type IN ('fact', 'decision', 'lesson')),
  content TEXT COLLATE "C" NOT NULL CHECK (length(trim(content)) > 0),
  workspace TEXT COLLATE "C" NOT NULL CHECK (length(trim(workspace)) > 0),
  project TEXT COLLATE "C" CHECK (project IS NULL OR length(trim(project)) > 0),
  status TEXT COLLATE "C" NOT NULL
    CHECK (status IN ('candidate', 'verified', 'superseded', 'archived')),
  replacement_id TEXT COLLATE "C" REFERENCES knowledge(id) ON DELETE RESTRICT,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  creation_origin TEXT COLLATE "C" NOT NULL DEFAULT 'explicit'
    CHECK (creation_origin IN ('explicit', 'automatic')),
  CHECK (replacement_id IS NULL OR replacement_id <> id),
  CHECK (status <> 'superseded' OR replacement_id IS NOT NULL),
  CHECK (status NOT IN ('candidate', 'verified') OR replacement_id IS NULL)
)""",
    """CREATE TABLE knowledge_evidence (
  knowledge_id TEXT COLLATE "C" NOT NULL REFERENCES knowledge(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  type TEXT COLLATE "C" NOT NULL CHECK (type IN ('session', 'file', 'git')),
  source TEXT COLLATE "C" NOT NULL CHECK (length(trim(source)) > 0),
  locator TEXT COLLATE "C",
  timestamp TEXT COLLATE "C" NOT NULL,
  git_commit TEXT COLLATE "C",
  git_path TEXT COLLATE "C",
  PRIMARY KEY (knowledge_id, ordinal),
  CHECK (
    (git_commit IS NULL AND git_path IS NULL) OR
    (type = 'file' AND git_commit IS NOT NULL AND git_path IS NOT NULL AND
     length(git_commit) IN (40, 64) AND git_commit !~ '[^0-9a-fA-F]' AND
     length(trim(git_path)) > 0 AND left(git_path, 1) <> '/' AND
     strpos(git_path, chr(92)) = 0)
  )
)""",
    "CREATE INDEX knowledge_workspace_idx ON knowledge USING hash (workspace)",
    "CREATE INDEX knowledge_project_idx ON knowledge USING hash (project)",
    "CREATE INDEX knowledge_type_idx ON knowledge (type)",
    "CREATE INDEX knowledge_status_idx ON knowledge (status)",
    "CREATE INDEX knowledge_updated_at_idx ON knowledge (updated_at)",
    "CREATE INDEX knowledge_replacement_idx ON knowledge (replacement_id)",
)

_SEARCH_INDEX = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """CREATE TABLE knowledge_search_doc (
  doc_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT COLLATE "C" NOT NULL UNIQUE,
  toks TEXT COLLATE "C" NOT NULL,
  norm TEXT COLLATE "C" NOT NULL,
  workspace TEXT COLLATE "C" NOT NULL,
  project TEXT COLLATE "C",
  status TEXT COLLATE "C" NOT NULL,
  creation_origin TEXT COLLATE "C" NOT NULL,
  type TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  evidence_count INTEGER NOT NULL,
  -- the timestamps as the ranking reads them (ms since the epoch; NULL: not parseable),
  -- parsed by our Python code at indexing, so SQL orders exactly as scoring.py does
  created_ms BIGINT,
  updated_ms BIGINT
)""",
    "CREATE INDEX knowledge_search_doc_toks ON knowledge_search_doc USING gin (toks gin_trgm_ops)",
    "CREATE INDEX knowledge_search_doc_workspace ON knowledge_search_doc USING hash (workspace)",
    'CREATE TABLE knowledge_search_pending (id TEXT COLLATE "C" PRIMARY KEY NOT NULL)',
    # Every token of 2..32 characters ever indexed (never pruned): lets a query skip LIKE
    # patterns for strings that are nobody's token, as on SQLite.
    'CREATE TABLE knowledge_search_vocab (term TEXT COLLATE "C" PRIMARY KEY NOT NULL)',
    # Triggers only queue an id; the store re-tokenises queued items in Python before each
    # commit, so an edit made with psql is indexed before the next query could miss it.
    """CREATE FUNCTION knowledge_search_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'knowledge' THEN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      INSERT INTO knowledge_search_pending (id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      INSERT INTO knowledge_search_pending (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
  ELSE
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      INSERT INTO knowledge_search_pending (id) VALUES (OLD.knowledge_id)
        ON CONFLICT DO NOTHING;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      INSERT INTO knowledge_search_pending (id) VALUES (NEW.knowledge_id)
        ON CONFLICT DO NOTHING;
    END IF;
  END IF;
  RETURN NULL;
END
$$""",
    "CREATE TRIGGER knowledge_search_after_change AFTER INSERT OR UPDATE OR DELETE "
    "ON knowledge FOR EACH ROW EXECUTE FUNCTION knowledge_search_queue()",
    "CREATE TRIGGER knowledge_search_evidence_change AFTER INSERT OR UPDATE OR DELETE "
    "ON knowledge_evidence FOR EACH ROW EXECUTE FUNCTION knowledge_search_queue()",
)

_AGENT_TABLES = (
    """CREATE TABLE dshpy_session_injections (
  session_id TEXT COLLATE "C" NOT NULL,
  knowledge_id TEXT COLLATE "C" NOT NULL,
  injected_ms BIGINT NOT NULL,
  PRIMARY KEY (session_id, knowledge_id)
)""",
    """CREATE TABLE dshpy_extraction_progress (
  session_id TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  last_seq BIGINT NOT NULL,
  seen_ms BIGINT NOT NULL
)""",
)

#: Ordered, named steps: (version reached, name, statements).
MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "create-knowledge-and-evidence", _KNOWLEDGE),
    (2, "search-index-trigram", _SEARCH_INDEX),
    (3, "agent-session-tables", _AGENT_TABLES),
    # Hybrid ranking's stored sentence vectors (dsh_knowledge._vector_table).
    (4, "item-vectors", _ITEM_VECTORS),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


#: Tables every migrated database has (agent bookkeeping included).
SCHEMA_TABLES = frozenset(
    {
        "knowledge",
        "knowledge_evidence",
        "knowledge_search_doc",
        "knowledge_search_pending",
        "knowledge_search_vocab",
        "dshpy_session_injections",
        "dshpy_extraction_progress",
        "item_vectors",
    }
)


def schema_version(store: PostgresStore) -> int | None:
    """The applied version, or None when the database has no knowledge schema yet.

    The same round trip checks the database's encoding (:meth:`PostgresStore.check_encoding`).
    """
    db = store.connection
    try:  # one round trip for a database that has the schema (every open but the first)
        row = db.execute(
            "SELECT current_setting('server_encoding'), "  # noqa: S608 - constant
            f"(SELECT coalesce(max(version), 0) FROM {VERSION_TABLE})"
        ).fetchone()
    except StorageError as error:
        if getattr(error, "sqlstate", None) != "42P01":  # undefined_table: no schema yet
            raise
        row = (db.execute("SELECT current_setting('server_encoding')").fetchone()[0], None)
    # Under SQL_ASCII the driver hands text back as bytes.
    encoding = row[0].decode("ascii", "replace") if isinstance(row[0], bytes) else str(row[0])
    store.check_encoding(encoding)
    return None if row[1] is None else int(row[1])


def migrate(store: PostgresStore, *, create: bool) -> None:
    """Apply every missing step (nothing is written when the schema is current)."""
    version = schema_version(store)
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"Database schema version {version} is newer than supported version {SCHEMA_VERSION}."
        )
    if version == SCHEMA_VERSION:
        return
    if version is None and not create:
        raise StorageError(f"The knowledge database {store.path} has no knowledge schema yet.")
    for target, name, statements in MIGRATIONS:
        if version is not None and version >= target:
            continue

        def step(target: int = target, name: str = name, ddl: tuple[str, ...] = statements) -> None:
            db = store.connection
            db.execute("SELECT pg_advisory_xact_lock(?)", (ADVISORY_LOCK_KEY,))
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version INTEGER PRIMARY KEY, "
                'name TEXT COLLATE "C" NOT NULL, applied_at TEXT COLLATE "C" NOT NULL)'
            )
            # Another process may have migrated while we waited for the lock.
            current = db.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}")  # noqa: S608 - constant
            if int(current.fetchone()[0]) >= target:
                return
            for statement in ddl:
                try:
                    db.execute(statement)
                except StorageError as error:
                    if "pg_trgm" in statement:
                        raise StorageError(
                            f"{error.message} - dsh-knowledge needs the pg_trgm extension "
                            "(PostgreSQL contrib): a superuser or the database owner can "
                            "run CREATE EXTENSION pg_trgm in this database."
                        ) from error
                    raise
            db.execute(
                f"INSERT INTO {VERSION_TABLE} (version, name, applied_at) VALUES (?, ?, ?)",  # noqa: S608 - constant
                (target, name, now_timestamp()),
            )

        try:
            store.write(step, index=False)
        except StorageError as error:
            if type(error) is not StorageError:  # unavailable, busy: say so as it is
                raise
            raise MigrationError(
                f"Migration {target} ({name}) failed and was rolled back; the database "
                f"is still at version {schema_version(store) or 0}: {error.message}"
            ) from error
        except store.connection.driver_error as error:
            raise MigrationError(
                f"Migration {target} ({name}) failed and was rolled back; the database "
                f"is still at version {schema_version(store) or 0}: "
                f"{store.connection.reason(error)}"
            ) from None
        version = target

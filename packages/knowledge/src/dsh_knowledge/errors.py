"""Errors of dsh-knowledge: one root, one leaf per stable kebab-case code.

The CLI prints ``{"error": {"code", "message"}}`` for every one of them. Messages reuse the
wording of the earlier Node tool where it had one (docs/compatibility/knowledge.md), so people
moving
between the two tools read the same sentences. Leaves also inherit the builtin that fits.
"""

from __future__ import annotations

from dsh_common.errors import DshError


class KnowledgeError(DshError):
    """Root of every foreseeable dsh-knowledge failure."""

    code = "knowledge-error"


class NotFoundError(KnowledgeError, LookupError):
    """No knowledge item has the requested id."""

    code = "not-found"


class ValidationError(KnowledgeError, ValueError):
    """Caller input (content, scope, evidence, filters, limits) is not acceptable."""

    code = "invalid-input"


class InvalidTransitionError(KnowledgeError, ValueError):
    """The lifecycle transition table forbids this status change."""

    code = "invalid-transition"


class InvalidSupersedeError(KnowledgeError, ValueError):
    """supersede() preconditions failed: self, not verified, or a different scope."""

    code = "invalid-supersede"


class ScopeChangeError(KnowledgeError, ValueError):
    """An item in a replacement relationship cannot move to another scope."""

    code = "scope-change-forbidden"


class SchemaTooNewError(KnowledgeError, RuntimeError):
    """The database's ``user_version`` is newer than this version understands."""

    code = "schema-too-new"


class StorageError(KnowledgeError, OSError):
    """The database could not be opened, read or written (read-only, disk full, I/O)."""

    code = "storage-error"


class StorageUnavailableError(StorageError):
    """The PostgreSQL server could not be reached or refused us (down, unreachable, wrong
    password, connection lost); the message names host and port, never a password."""

    code = "storage-unavailable"


class PostgresDriverMissingError(StorageError):
    """A PostgreSQL URL was given but the optional extra ``dsh-knowledge[postgres]`` is not
    installed."""

    code = "postgres-unavailable"


class DatabaseCorruptError(StorageError):
    """The file opened as SQLite, but a page of it is damaged (or it is not a database)."""

    code = "database-corrupt"


class MigrationError(StorageError):
    """A schema migration failed; it was rolled back and the file keeps its old version."""

    code = "migration-failed"


class DatabaseBusyError(StorageError):
    """Other writers kept the database locked past every retry."""

    code = "database-busy"


# --- Git-side errors (provenance / freshness / health) -------------------------------------
# The Git partner may add leaves below this line.


class GitProvenanceError(KnowledgeError, ValueError):
    """A gitProvenance object is malformed (commit not full hex, path not repository-relative)."""

    code = "invalid-git-provenance"


class HealthBatchError(KnowledgeError, ValueError):
    """A health batch is empty, has more than 16 items, or spans more than one workspace."""

    code = "invalid-health-batch"


# --- Git provenance / freshness / health ---


class HealthGuidanceInputError(KnowledgeError, TypeError):
    """create_health_guidance() got something other than a health status and known reasons.

    The message is fixed ("Invalid health guidance input.") and never echoes the input.
    """

    code = "invalid-health-guidance-input"

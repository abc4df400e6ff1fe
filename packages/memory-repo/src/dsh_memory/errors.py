"""Every foreseeable dsh-memory failure, one class per stable code.

The ``memory`` API never lets these escape: :class:`dsh_memory.service.MemoryService` turns
each into the contract's ``{"ok": false, "error": {"code": ...}}`` envelope. Library callers
that use the lower-level modules (``root``, ``transactions``, ``journal`` ...) catch them
directly. Every code, the earlier tool's and our own additions for inputs and operations it
gives no code to, is listed in docs/compatibility/memory.md (Error codes).
"""

from __future__ import annotations

import errno as _errno
from collections.abc import Mapping
from typing import Any

from dsh_common.errors import DshError, truncate

#: The longest message a front end prints. A value a message echoes is cut far shorter where
#: the message is made (``dsh_common.errors.shown``); this bounds whatever echoes more (a
#: path given on the command line, say), so no input comes back whole.
MAX_MESSAGE_CHARS = 2000


def render_error(code: str, message: str) -> dict[str, Any]:
    """The contract's failed envelope with a message for people: what every dsh-memory front end
    (command line, fast path, hook, ``mcp`` without its extra) prints on stderr."""
    return {"ok": False, "error": {"code": code, "message": truncate(message, MAX_MESSAGE_CHARS)}}


def failed_envelope(
    envelope: Mapping[str, Any], message: str | None, fallback: str | None = None
) -> dict[str, Any]:
    """A method's failed ``envelope`` as :func:`render_error` renders it, with its message for
    people: ``message`` (the service's ``last_error_message``: the envelope itself carries
    only the code) when there is one, else the envelope's own, else ``fallback`` (default:
    the code), so every front end answers both fields."""
    error = envelope["error"]
    code = str(error["code"])
    return render_error(code, message or error.get("message") or fallback or code)


class MemoryRepoError(DshError):
    """Root of every dsh-memory failure."""

    code = "memory-repo-error"


# -- settings ------------------------------------------------------------------------------


class SettingsUnavailableError(MemoryRepoError, OSError):
    """The host settings file cannot be read or parsed."""

    code = "settings-unavailable"


class SettingsInvalidRequestError(MemoryRepoError, ValueError):
    """``setEnabled`` got something other than a boolean."""

    code = "settings-invalid-request"


class SettingsWriteFailedError(MemoryRepoError, OSError):
    """The host settings file could not be written."""

    code = "settings-write-failed"


# -- repository and layout -----------------------------------------------------------------


class RepoUnavailableError(MemoryRepoError, OSError):
    """The configured memory root is not an accessible Git repository."""

    code = "repo-unavailable"


class InvalidMemoryPathError(MemoryRepoError, ValueError):
    """The memory root (or another path argument) is not valid UTF-8 (our own code)."""

    code = "invalid-path"


class UnsafeLayoutError(MemoryRepoError, ValueError):
    """The root or a payload/operational path is a symlink, or the root is not the top level."""

    code = "unsafe-layout"


class InitFailedError(MemoryRepoError, OSError):
    """``init`` could not create or commit the repository (our own code)."""

    code = "init-failed"


# -- transactions and the operation lock ---------------------------------------------------


class CheckpointFailedError(MemoryRepoError, RuntimeError):
    """The recovery checkpoint commit could not be built."""

    code = "checkpoint-failed"


class CommitFailedError(MemoryRepoError, RuntimeError):
    """The live index/HEAD update could not be completed safely (HEAD moved, git failed)."""

    code = "commit-failed"


class FinalizeFailedError(MemoryRepoError, OSError):
    """HEAD holds the run's commit, but the live index or work tree could not follow
    (a full disk, git failing): the run is journaled ``applied`` with this code and stays
    the active run until ``recover`` finishes it (our own code). ``errno`` is the cause's."""

    code = "finalize-failed"


class OperationInProgressError(MemoryRepoError, OSError):
    """Another writer holds ``.sync/operation.lock``."""

    code = "operation-in-progress"


class InterruptedRunError(MemoryRepoError, RuntimeError):
    """An earlier process died mid-run; the repository needs an explicit recovery."""

    code = "interrupted-run"


# -- clear ---------------------------------------------------------------------------------


class ClearFailedError(MemoryRepoError, RuntimeError):
    """Wrong confirmation, or clear staging failed safely."""

    code = "clear-failed"


# -- legacy migration ----------------------------------------------------------------------


class MigrationInvalidRequestError(MemoryRepoError, ValueError):
    """``dryRun`` missing or not a boolean."""

    code = "migration-invalid-request"


class MigrationFailedError(MemoryRepoError, OSError):
    """A filesystem error during migration: the code is ``migration-<errno name>``.

    The earlier tool reports ``migration-<errno>`` (``migration-eacces``, ...); without an
    errno the code is ``migration-failed``.
    """

    code = "migration-failed"

    @classmethod
    def from_os_error(cls, exc: OSError, message: str) -> MigrationFailedError:
        name = _errno.errorcode.get(exc.errno or 0)
        code = f"migration-{name.lower()}" if name else cls.code
        return cls(message, code=code)


# -- runs and rollback ---------------------------------------------------------------------


class RunsInvalidRequestError(MemoryRepoError, ValueError):
    """``runs`` got a malformed limit or filter (our own code: the earlier tool names none)."""

    code = "runs-invalid-request"


class RollbackInvalidConfirmationError(MemoryRepoError, ValueError):
    """The confirmation is not exactly ``ROLLBACK_MEMORY``."""

    code = "rollback-invalid-confirmation"


class RollbackRunNotFoundError(MemoryRepoError, LookupError):
    """No journaled run has that id."""

    code = "rollback-run-not-found"


class RollbackNotApplicableError(MemoryRepoError, ValueError):
    """The run is not ``applied``, lacks commits, or changed nothing."""

    code = "rollback-not-applicable"


class RollbackConflictError(MemoryRepoError, RuntimeError):
    """Newer payload writes happened after the run's apply commit."""

    code = "rollback-conflict"


class RollbackFailedError(MemoryRepoError, RuntimeError):
    """The rollback commit could not be completed safely."""

    code = "rollback-failed"


# -- search and context --------------------------------------------------------------------


class SearchInvalidRequestError(MemoryRepoError, ValueError):
    """Missing/blank query, no tokens, or a bad limit/scope/ranking."""

    code = "search-invalid-request"


class SearchFailedError(MemoryRepoError, RuntimeError):
    """Search could not read the payload."""

    code = "search-failed"


class ContextInvalidRequestError(MemoryRepoError, ValueError):
    """Blank query, or a limit outside 1-20, or a bad scope or ranking."""

    code = "context-invalid-request"


class SemanticUnavailableError(MemoryRepoError, RuntimeError):
    """``vectors`` was asked for where the optional ``[semantic]`` extra is not installed.

    (A hybrid search or context never fails for it: it ranks lexically and warns.)
    """

    code = "semantic-unavailable"


class VectorsFailedError(MemoryRepoError, RuntimeError):
    """The vectors of hybrid ranking could not be built: no usable search index or vector
    store in ``.sync``."""

    code = "vectors-failed"


class UsageInvalidError(MemoryRepoError, ValueError):
    """``.sync/usage.json`` is malformed, too large or not owner-only data."""

    code = "usage-invalid"


class UsageBusyError(MemoryRepoError, OSError):
    """The usage sidecar lock is held by a live process."""

    code = "usage-busy"


class ContextFailedError(MemoryRepoError, RuntimeError):
    """Context could not read the payload or record usage."""

    code = "context-failed"


# -- front matter, search index, usage --------------------------------------------------


# Front matter (schema v0.4). The earlier tool's codes (docs/compatibility/memory.md, Front matter);
# appended by the search/front-matter owner.


class InvalidMetadataError(MemoryRepoError, ValueError):
    """Front matter is malformed: a field has the wrong type or value, a line is unparsable,
    or a block scalar is used. The more specific failures below are subclasses."""

    code = "invalid-metadata"


class InvalidSchemaVersionError(InvalidMetadataError):
    """``schema_version`` is missing or not ``1``."""

    code = "invalid-schema-version"


class InvalidIdError(InvalidMetadataError):
    """``id`` is missing or does not match ``[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)?``."""

    code = "invalid-id"


class FlowStyleMetadataError(InvalidMetadataError):
    """A list is written flow-style (``tags: [a, b]``) instead of as a block list."""

    code = "flow-style-metadata"


# -- the write path: sync staging, previews, edits, recovery, bundles ----------------------
# Staging codes are the earlier tool's (docs/compatibility/memory.md, Staging limits); the agent,
# edit, recover
# and bundle codes are our own (docs/compatibility/memory.md, Error codes).


class StagingInvalidError(MemoryRepoError, ValueError):
    """The staging result holds a path outside the payload, or changed README.md."""

    code = "staging-invalid"


class FileTooLargeError(MemoryRepoError, ValueError):
    """A staged payload file is larger than 1 MiB."""

    code = "file-too-large"


class TooManyFilesError(MemoryRepoError, ValueError):
    """More than 50 files were added."""

    code = "too-many-files"


class ChangeTooLargeError(MemoryRepoError, ValueError):
    """Added plus modified files exceed 5 MiB."""

    code = "change-too-large"


class BinaryFileError(MemoryRepoError, ValueError):
    """A staged file is not UTF-8 text or holds a NUL byte."""

    code = "binary-file"


class SecretInContentError(MemoryRepoError, ValueError):
    """A new or changed file holds what dsh-common's secret detector calls a secret."""

    code = "secret-in-content"


class DuplicateIdError(MemoryRepoError, ValueError):
    """Two records carry the same front matter id."""

    code = "duplicate-id"


class LiveMemoryChangedError(MemoryRepoError, RuntimeError):
    """Live memory moved since the staging baseline (HEAD or payload content)."""

    code = "live-memory-changed"


class SyncFailedError(MemoryRepoError, RuntimeError):
    """The sync could not be completed (a session could not be read, staging failed)."""

    code = "sync-failed"


class SyncUnavailableError(MemoryRepoError, OSError):
    """The agent program cannot be found or started."""

    code = "sync-unavailable"


class SyncInvalidRequestError(MemoryRepoError, ValueError):
    """Bad dsh-memory-sync arguments (our own code)."""

    code = "sync-invalid-request"


class AgentFailedError(MemoryRepoError, RuntimeError):
    """The agent exited with a non-zero status (our own code)."""

    code = "agent-failed"


class AgentTimeoutError(MemoryRepoError, TimeoutError):
    """The agent ran past its time limit and was killed (our own code)."""

    code = "agent-timeout"


class ZstdUnavailableError(MemoryRepoError, OSError):
    """A zstd session log cannot be decompressed (fails closed, as the earlier tool)."""

    code = "zstd-unavailable"


class PreviewInvalidRequestError(MemoryRepoError, ValueError):
    """The preview id is missing or not ``YYYYMMDDTHHMMSSZ-<8 hex>``."""

    code = "preview-invalid-request"


class PreviewNotFoundError(MemoryRepoError, LookupError):
    """No pending preview has that id."""

    code = "preview-not-found"


class PreviewExpiredError(MemoryRepoError, ValueError):
    """The preview is older than its seven-day TTL."""

    code = "preview-expired"


class PreviewExistsError(MemoryRepoError, FileExistsError):
    """A preview with that id already exists."""

    code = "preview-exists"


class PreviewApplyFailedError(MemoryRepoError, RuntimeError):
    """The preview could not be applied safely."""

    code = "preview-apply-failed"


class EditInvalidRequestError(MemoryRepoError, ValueError):
    """write/remove got a path outside the payload or no content (our own code)."""

    code = "edit-invalid-request"


class EditNotFoundError(MemoryRepoError, LookupError):
    """remove named a file that does not exist (our own code)."""

    code = "edit-not-found"


class RecoverInvalidConfirmationError(MemoryRepoError, ValueError):
    """The confirmation is not exactly ``RECOVER_MEMORY`` (our own code)."""

    code = "recover-invalid-confirmation"


class RecoverFailedError(MemoryRepoError, RuntimeError):
    """Recovery could not be completed safely (our own code)."""

    code = "recover-failed"


class BundleInvalidRequestError(MemoryRepoError, ValueError):
    """export/import got a target that exists or a bundle without its manifest (own code)."""

    code = "bundle-invalid-request"


class BundleFailedError(MemoryRepoError, RuntimeError):
    """The bundle could not be written or read (our own code)."""

    code = "bundle-failed"


# -- a Git remote: pull and push (our own codes) --------------------------------------------


class RemoteInvalidError(MemoryRepoError, ValueError):
    """The remote URL is refused: a transport other than a path, file, https or ssh (``ext::``,
    ``fd::``, a helper), an option-like host, a password in a host:path URL..."""

    code = "remote-invalid"


class RemoteNotConfiguredError(MemoryRepoError, LookupError):
    """``pull``/``push`` without a remote (``dsh-memory remote set URL`` first)."""

    code = "remote-not-configured"


class RemoteUnavailableError(MemoryRepoError, OSError):
    """The remote could not be reached or refused us (network, authentication, no such
    repository); the message is redacted and nothing was changed."""

    code = "remote-unavailable"


class UnsafeConfigError(MemoryRepoError, ValueError):
    """The memory repository's own git config would redirect a transfer (``url.*.insteadOf``)
    or run a program during a merge (``merge.*.driver``): refused, nothing changed."""

    code = "unsafe-config"


class RemoteContentRefusedError(MemoryRepoError, ValueError):
    """The remote's history brings a path no memory holds (outside the layout, a symlink, a
    submodule, a name the work tree cannot hold): the pull is refused, nothing changed."""

    code = "remote-content-refused"


class PushRejectedError(MemoryRepoError, RuntimeError):
    """The remote has commits this memory does not (pull first), or refused the push; nothing
    was changed on either side."""

    code = "push-rejected"


class PushUnjournaledDeletionError(MemoryRepoError, RuntimeError):
    """The push would delete records from the remote that no journaled run deleted (a
    ``git rm`` by hand, an empty clone): refused, nothing pushed."""

    code = "push-unjournaled-deletion"


class RemoteFailedError(MemoryRepoError, RuntimeError):
    """A remote command could not be completed for another reason (our catch-all)."""

    code = "remote-failed"

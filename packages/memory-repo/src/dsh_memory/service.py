"""The ``memory`` namespace: one method per contract method (docs/compatibility/memory.md), each
returning an envelope.

Every method answers ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": {"code":
...}}`` and never raises for a foreseeable failure. It resolves the memory root itself
(callers - a browser UI, an agent tool - cannot supply a path; only the host's own
configuration or the ``--root`` of the command line can), and inspects the layout before
anything else, so an unsafe repository is refused before any read or write.

Method names are snake_case (``get_settings`` for ``memory.getSettings``);
:meth:`MemoryService.call` dispatches the contract's camelCase names with a JSON-style
parameter object, for tool servers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, GitError, SymlinkRejectedError, shown
from dsh_memory import errors
from dsh_memory.store.root import Layout, inspect_layout, resolve_memory_root

Envelope = dict[str, Any]

#: The code a method reports for an unexpected failure (the contract's catch-all per method).
_FALLBACK_CODES = {
    "init": "init-failed",
    "get_settings": "settings-unavailable",
    "set_enabled": "settings-write-failed",
    "status": "repo-unavailable",
    "health": "repo-unavailable",
    "clear": "clear-failed",
    "legacy_records": "migration-failed",
    "migrate_legacy": "migration-failed",
    "runs": "repo-unavailable",
    "rollback": "rollback-failed",
    "search": "search-failed",
    "context": "context-failed",
    "vectors": "vectors-failed",
    "previews": "repo-unavailable",
    "apply_preview": "preview-apply-failed",
    "discard_preview": "preview-not-found",
    "write": "commit-failed",
    "remove": "commit-failed",
    "adopt": "commit-failed",
    "recover": "recover-failed",
    "export_bundle": "bundle-failed",
    "import_bundle": "bundle-failed",
    "remote": "remote-failed",
    "set_remote": "remote-failed",
    "remove_remote": "remote-failed",
    "pull": "remote-failed",
    "push": "remote-failed",
}

_METHODS = {
    "getSettings": ("get_settings", ()),
    "setEnabled": ("set_enabled", ("enabled",)),
    "status": ("status", ()),
    "health": ("health", ()),
    "clear": ("clear", ("confirmation",)),
    "legacyRecords": ("legacy_records", ()),
    "migrateLegacy": ("migrate_legacy", ("dryRun",)),
    "runs": ("runs", ("limit", "operation", "status")),
    "rollback": ("rollback", ("runId", "confirmation")),
    "search": ("search", ("query", "limit", "scope", "ranking")),
    "context": ("context", ("query", "limit", "scope", "ranking")),
    "vectors": ("vectors", ()),
    "previews": ("previews", ()),
    "applyPreview": ("apply_preview", ("previewId",)),
    "discardPreview": ("discard_preview", ("previewId",)),
    "write": ("write", ("path", "content")),
    "remove": ("remove", ("path",)),
    "adopt": ("adopt", ()),
    "recover": ("recover", ("confirmation",)),
    "remote": ("remote", ()),
    "setRemote": ("set_remote", ("url",)),
    "removeRemote": ("remove_remote", ()),
    "pull": ("pull", ()),
    "push": ("push", ()),
}

_MISSING: Any = object()


class MemoryService:
    """The contract's ``memory.*`` methods over one memory root."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        settings_file: str | os.PathLike[str] | None = None,
        encode_budget: int | None = None,
        progress: Callable[[int, int], object] | None = None,
    ) -> None:
        self._root_option = root
        self._env = env
        self._settings_file = Path(settings_file) if settings_file is not None else None
        #: Hybrid ranking: how many records without a vector a search may encode on the spot
        #: (None: all), and who hears of a long build (the command line's progress bar).
        self._encode_budget = encode_budget
        self._progress = progress
        #: The human message of the last failure (the envelope carries only the code).
        self.last_error_message: str | None = None

    @property
    def root(self) -> Path:
        return resolve_memory_root(self._root_option, env=self._env)

    @property
    def settings_file(self) -> Path:
        from dsh_memory.store.settings import settings_path  # noqa: PLC0415

        return self._settings_file or settings_path(self._env)

    # -- envelope machinery ----------------------------------------------------------------

    def _envelope(self, method: str, action: Callable[[], Any]) -> Envelope:
        self.last_error_message = None
        try:
            return {"ok": True, "value": action()}
        except errors.MemoryRepoError as exc:
            return self._failure(exc.code, exc.message)
        except SymlinkRejectedError as exc:
            return self._failure("unsafe-layout", exc.message)
        except GitError as exc:
            return self._failure(_FALLBACK_CODES[method], exc.message)
        except DshError as exc:
            return self._failure(_FALLBACK_CODES[method], exc.message)
        except OSError as exc:
            return self._failure(_FALLBACK_CODES[method], str(exc))
        except (ValueError, UnicodeError, RuntimeError) as exc:
            # The envelope contract: a method answers, it does not raise. Anything we did not
            # foresee becomes the method's catch-all code, with the detail for people.
            return self._failure(_FALLBACK_CODES[method], f"unexpected {type(exc).__name__}: {exc}")

    def _failure(self, code: str, message: str) -> Envelope:
        self.last_error_message = message
        return {"ok": False, "error": {"code": code}}

    def _layout(self) -> Layout:
        return inspect_layout(self.root)

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Envelope:
        """Dispatch a contract method name (``"migrateLegacy"``) with its parameter object."""
        spec = _METHODS.get(method)
        if spec is None:
            return self._failure("unknown-method", f"no memory method {shown(method)}")
        name, fields = spec
        given = dict(params or {})
        kwargs = {_snake(field): given[field] for field in fields if field in given}
        bound: Callable[..., Envelope] = getattr(self, name)
        return bound(**kwargs)

    # -- repository ------------------------------------------------------------------------

    def init(self) -> Envelope:
        """Create the repository (idempotent). Not a contract method: the host's installer."""
        from dsh_memory.store.initialize import initialize_repository  # noqa: PLC0415

        return self._envelope("init", lambda: initialize_repository(self.root))

    # -- settings --------------------------------------------------------------------------

    def get_settings(self) -> Envelope:
        from dsh_memory.store.settings import read_enabled  # noqa: PLC0415

        return self._envelope("get_settings", lambda: {"enabled": read_enabled(self.settings_file)})

    def set_enabled(self, enabled: object = _MISSING) -> Envelope:
        from dsh_memory.store.settings import write_enabled  # noqa: PLC0415

        return self._envelope(
            "set_enabled", lambda: {"enabled": write_enabled(self.settings_file, enabled)}
        )

    # -- observability ---------------------------------------------------------------------

    def status(self) -> Envelope:
        from dsh_memory.store.observe import status  # noqa: PLC0415

        return self._envelope("status", lambda: status(self._layout()))

    def health(self) -> Envelope:
        from dsh_memory.store.observe import health  # noqa: PLC0415

        return self._envelope("health", lambda: health(self.root))

    def runs(self, limit: object = 20, operation: object = None, status: object = None) -> Envelope:
        from dsh_memory.store.observe import list_runs  # noqa: PLC0415

        return self._envelope("runs", lambda: list_runs(self._layout(), limit, operation, status))

    def legacy_records(self) -> Envelope:
        from dsh_memory.store.observe import legacy_records  # noqa: PLC0415

        return self._envelope("legacy_records", lambda: legacy_records(self._layout()))

    # -- writers ---------------------------------------------------------------------------

    def clear(self, confirmation: object = _MISSING) -> Envelope:
        from dsh_memory.write.operations import clear  # noqa: PLC0415

        def action() -> Any:
            if confirmation != "DELETE_MEMORY":  # refused before the repository is opened
                raise errors.ClearFailedError("clear needs the exact confirmation DELETE_MEMORY")
            return clear(self._layout(), confirmation)

        return self._envelope("clear", action)

    def migrate_legacy(self, dry_run: object = _MISSING) -> Envelope:
        from dsh_memory.write.operations import migrate_legacy  # noqa: PLC0415

        def action() -> Any:
            if not isinstance(dry_run, bool):
                raise errors.MigrationInvalidRequestError("dryRun must be a boolean")
            return migrate_legacy(self._layout(), dry_run)

        return self._envelope("migrate_legacy", action)

    def rollback(self, run_id: object = _MISSING, confirmation: object = _MISSING) -> Envelope:
        from dsh_memory.write.rollback import ROLLBACK_CONFIRMATION, rollback  # noqa: PLC0415

        def action() -> Any:
            if confirmation != ROLLBACK_CONFIRMATION:  # checked first, as the contract orders it
                raise errors.RollbackInvalidConfirmationError(
                    "rollback needs the exact confirmation ROLLBACK_MEMORY"
                )
            return rollback(self._layout(), run_id, confirmation)

        return self._envelope("rollback", action)

    # -- previews --------------------------------------------------------------------------

    def previews(self) -> Envelope:
        """``memory.previews()``: pending previews, newest first (expired ones cleaned)."""
        from dsh_memory.write.previews import pending_previews  # noqa: PLC0415

        return self._envelope(
            "previews", lambda: {"previews": pending_previews(self._layout().root, clean=True)}
        )

    def apply_preview(self, preview_id: object = _MISSING) -> Envelope:
        """``memory.applyPreview({previewId})``: one transaction, journaled as ``preview``."""
        from dsh_memory.write.preview_apply import apply_preview  # noqa: PLC0415
        from dsh_memory.write.previews import validate_preview_id  # noqa: PLC0415

        def action() -> Any:
            validate_preview_id(preview_id)  # before the repository is opened
            return apply_preview(self._layout(), preview_id)

        return self._envelope("apply_preview", action)

    def discard_preview(self, preview_id: object = _MISSING) -> Envelope:
        """``memory.discardPreview({previewId})``."""
        from dsh_memory.write.previews import discard_preview, validate_preview_id  # noqa: PLC0415

        def action() -> Any:
            validate_preview_id(preview_id)
            return discard_preview(self._layout().root, preview_id)

        return self._envelope("discard_preview", action)

    # -- a person's own edits --------------------------------------------------------------

    def write(self, path: object = _MISSING, content: object = _MISSING) -> Envelope:
        """Write one payload file as a journaled ``edit`` run (validated like a sync)."""
        from dsh_memory.write.edits import validate_write_path, write  # noqa: PLC0415

        def action() -> Any:
            validate_write_path(path)  # before the repository is opened
            return write(self._layout(), path, content)

        return self._envelope("write", action)

    def remove(self, path: object = _MISSING) -> Envelope:
        """Remove one payload file as a journaled ``edit`` run."""
        from dsh_memory.write.edits import remove, validate_edit_path  # noqa: PLC0415

        def action() -> Any:
            validate_edit_path(path)
            return remove(self._layout(), path)

        return self._envelope("remove", action)

    def adopt(self) -> Envelope:
        """Commit the hand edits in the payload as one journaled ``edit`` run."""
        from dsh_memory.write.edits import adopt  # noqa: PLC0415

        return self._envelope("adopt", lambda: adopt(self._layout()))

    def recover(self, confirmation: object = _MISSING) -> Envelope:
        """Make an interrupted run consistent (see :mod:`dsh_memory.write.recover`)."""
        from dsh_memory.write.recover import RECOVER_CONFIRMATION, recover  # noqa: PLC0415

        def action() -> Any:
            if confirmation != RECOVER_CONFIRMATION:
                raise errors.RecoverInvalidConfirmationError(
                    "recover needs the exact confirmation RECOVER_MEMORY"
                )
            return recover(self._layout(), confirmation)

        return self._envelope("recover", action)

    def export_bundle(self, file: object = _MISSING) -> Envelope:
        """A git bundle of the whole history plus its JSON manifest (never overwrites)."""
        from dsh_memory.write.bundle import export_bundle  # noqa: PLC0415

        return self._envelope("export_bundle", lambda: export_bundle(self._layout(), file))

    def import_bundle(self, file: object = _MISSING, new_root: object = _MISSING) -> Envelope:
        """A new memory root from a bundle (refuses an existing target)."""
        from dsh_memory.write.bundle import import_bundle  # noqa: PLC0415

        return self._envelope("import_bundle", lambda: import_bundle(file, new_root))

    # -- the Git remote: several machines, one memory ---------------------------------------

    def remote(self) -> Envelope:
        """The remote (URL redacted), ahead/behind, the last pull and push; null when unset."""
        from dsh_memory.remote.remote_config import show  # noqa: PLC0415

        return self._envelope("remote", lambda: show(self._layout()))

    def set_remote(self, url: object = _MISSING, base: str | None = None) -> Envelope:
        """Set the remote's URL (a relative path is taken against ``base``, else the cwd)."""
        from dsh_memory.remote.remote_config import checked, set_remote  # noqa: PLC0415

        def action() -> Any:
            if not isinstance(url, str):
                raise errors.RemoteInvalidError("remote set needs a URL")
            checked(url, base=base)  # before the repository is opened
            return set_remote(self._layout(), url, base=base)

        return self._envelope("set_remote", action)

    def remove_remote(self) -> Envelope:
        """Forget the remote (its URL, tracking ref and remembered state)."""
        from dsh_memory.remote.remote_config import remove_remote  # noqa: PLC0415

        return self._envelope("remove_remote", lambda: remove_remote(self._layout()))

    def pull(self) -> Envelope:
        """Fetch the remote and merge it in as one journaled ``pull`` run."""
        from dsh_memory.remote.pull import pull  # noqa: PLC0415

        return self._envelope("pull", lambda: pull(self._layout()))

    def push(self) -> Envelope:
        """Push HEAD to the remote, fast-forward only."""
        from dsh_memory.remote.push import push  # noqa: PLC0415

        return self._envelope("push", lambda: push(self._layout()))

    # -- read paths (search/context live in their own modules) -----------------------------

    def search(
        self,
        query: object = None,
        limit: object = None,
        scope: object = None,
        ranking: object = None,
    ) -> Envelope:
        def action() -> Any:
            from dsh_memory.search.search import search  # noqa: PLC0415

            return search(
                self._layout().root,
                query,
                limit,
                scope,
                ranking=ranking,
                encode_budget=self._encode_budget,
                progress=self._progress,
            )

        return self._envelope("search", action)

    def context(
        self,
        query: object = None,
        limit: object = None,
        scope: object = None,
        ranking: object = None,
    ) -> Envelope:
        def action() -> Any:
            from dsh_memory.search.context import context  # noqa: PLC0415
            from dsh_memory.store.root import inspect_memory_layout  # noqa: PLC0415

            # Usage is a write: only into a repository that carries the memory marker (the
            # layout check and the marker share one git process where they can).
            layout, recorded = inspect_memory_layout(self.root)
            return context(
                layout.root,
                query,
                limit,
                scope,
                record_use=recorded,
                ranking=ranking,
                encode_budget=self._encode_budget,
                progress=self._progress,
            )

        return self._envelope("context", action)

    def vectors(self) -> Envelope:
        """Build (or bring up to date) the vectors of hybrid ranking, whatever their number:
        what a first hybrid search would otherwise encode on the spot."""

        def action() -> Any:
            from dsh_memory.search.hybrid import build_vectors  # noqa: PLC0415

            return build_vectors(self._layout().root, progress=self._progress)

        return self._envelope("vectors", action)

    # -- the system prompt -----------------------------------------------------------------

    def prompt_section(self, language: str = "zh") -> str:
        """The memory system-prompt section; empty when memory is disabled."""
        from dsh_memory.prompt import prompt_section  # noqa: PLC0415
        from dsh_memory.store.settings import read_enabled  # noqa: PLC0415

        try:
            enabled = read_enabled(self.settings_file)
        except errors.MemoryRepoError:
            enabled = True  # an unreadable settings file falls back to the default
        try:
            root = self.root
        except errors.MemoryRepoError:
            return prompt_section(None, enabled=enabled, language=language)  # static text
        return prompt_section(root, enabled=enabled, language=language)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)

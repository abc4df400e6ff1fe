"""``dsh-memory-sync``: one consolidation run (or a preview of one, or a preview applied).

Parses the options (declared in :mod:`dsh_memory.cli_spec`), runs
:func:`dsh_memory.sync.syncrun.run_sync` (or
:func:`dsh_memory.remote.remote_sync.sync_with_remote` for ``--remote``) and prints its
JSON; the progress of the run goes to stderr unless ``--json``. A bare ``dsh-memory-sync``
runs a sync.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer

from dsh_common.cli import emit_json, run_app
from dsh_common.cli.typer_commands import command
from dsh_memory.cli._shared import emit
from dsh_memory.cli_spec import SYNC_PROGRAM
from dsh_memory.errors import render_error

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Consolidate new idle agent sessions into memory through a staging copy, an agent "
    "and one validated transaction (or a preview of it).",
)


def _progress(quiet: bool) -> Any:
    def report(message: str) -> None:
        if not quiet:
            sys.stderr.write(f"dsh-memory-sync: {message}\n")
            sys.stderr.flush()

    return report


@command(
    app,
    SYNC_PROGRAM[None],
    epilog="\b\nExamples:\n  dsh-memory-sync --dry-run\n  dsh-memory-sync --preview p1"
    "\n  dsh-memory-sync --apply-preview p1",
)
def sync_command(
    root: str | None,
    sessions_dir: str | None,
    claude_projects: str | None,
    codex_sessions: str | None,
    agent: str | None,
    agent_command: str | None,
    timeout: float,
    json_output: bool,
    dry_run: bool,
    scan_only: bool,
    preview: str | None,
    apply_preview: str | None,
    discard_preview: str | None,
    remote: bool,
) -> None:
    """Run one sync: new idle sessions in, an agent's edits to a staging copy checked and
    committed as one transaction (or stored for review with --preview ID)."""
    import os

    from dsh_memory.errors import SyncInvalidRequestError
    from dsh_memory.service import MemoryService
    from dsh_memory.store.root import resolve_memory_root
    from dsh_memory.sync.sessions import SessionSources
    from dsh_memory.sync.syncrun import SyncOptions, run_sync

    chosen = [
        name
        for name, given in (
            ("--dry-run", dry_run),
            ("--scan-only", scan_only),
            ("--preview", preview is not None),
            ("--apply-preview", apply_preview is not None),
            ("--discard-preview", discard_preview is not None),
        )
        if given
    ]
    if len(chosen) > 1:
        raise SyncInvalidRequestError(f"{' and '.join(chosen)} are mutually exclusive")
    if remote and chosen:
        raise SyncInvalidRequestError(f"--remote syncs with the remote; {chosen[0]} does not")
    if apply_preview is not None or discard_preview is not None:
        from dsh_memory.store.settings import read_enabled, settings_path
        from dsh_memory.sync.syncrun import DISABLED_MESSAGE

        if not read_enabled(settings_path()):  # the earlier tool checks this before anything
            _progress(False)(DISABLED_MESSAGE)
            emit_json({"ok": True, "status": "disabled", "message": DISABLED_MESSAGE})
            return
        service = MemoryService(root)
        envelope = (
            service.apply_preview(apply_preview)
            if apply_preview is not None
            else service.discard_preview(discard_preview)
        )
        emit(service, envelope)
        return
    env = dict(os.environ)
    mode = "dry-run" if dry_run else "scan-only" if scan_only else "preview" if preview else "sync"
    options = SyncOptions(
        root=resolve_memory_root(root),
        sources=SessionSources.defaults(
            env,
            sessions_dir=sessions_dir,
            claude_projects=claude_projects,
            codex_sessions=codex_sessions,
        ),
        env=env,
        agent=agent,
        agent_command=agent_command,
        timeout=timeout,
        mode=mode,
        preview_id=preview,
        progress=_progress(json_output),
    )
    if remote:
        from dsh_memory.remote.remote_sync import sync_with_remote

        result = sync_with_remote(options)
    else:
        result = run_sync(options)
    if result.get("status") == "disabled":
        _progress(False)(str(result["message"]))
    emit_json({"ok": True, **result})


def main() -> NoReturn:
    from dsh_memory import __version__

    sys.exit(
        run_app(
            app,
            program=SYNC_PROGRAM,
            render_error=render_error,
            version=__version__,
            bare_help=False,  # a bare dsh-memory-sync runs a sync
        )
    )


if __name__ == "__main__":
    main()

"""``dsh-memory-sync``: one consolidation run (or a preview of one, or a preview applied).

Parses the options, runs :func:`dsh_memory.syncrun.run_sync` (or
:func:`dsh_memory.remote_sync.sync_with_remote` for ``--remote``) and prints its JSON; the
progress of the run goes to stderr unless ``--json``. A bare ``dsh-memory-sync`` runs a sync.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, NoReturn

import typer

from dsh_common.cli import emit_json, run_app
from dsh_memory.cli._shared import RootOption, emit
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


@app.command()
def sync_command(
    root: RootOption = None,
    sessions_dir: Annotated[
        str | None, typer.Option("--sessions-dir", help="DSH logs (default $DSH_HOME/sessions).")
    ] = None,
    claude_projects: Annotated[
        str | None, typer.Option("--claude-projects", help="Default ~/.claude/projects.")
    ] = None,
    codex_sessions: Annotated[
        str | None, typer.Option("--codex-sessions", help="Default ~/.codex/sessions.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="dsh (default), claude, codex or command."),
    ] = None,
    agent_command: Annotated[
        str | None,
        typer.Option("--agent-command", help="The program to run (implies --agent command)."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Agent time limit (s).")] = 1800.0,
    json_output: Annotated[bool, typer.Option("--json", help="No progress on stderr.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report; write nothing.")] = False,
    scan_only: Annotated[
        bool, typer.Option("--scan-only", help="Only list the candidates (no agent).")
    ] = False,
    preview: Annotated[
        str | None, typer.Option("--preview", help="Store the result as preview ID.")
    ] = None,
    apply_preview: Annotated[
        str | None, typer.Option("--apply-preview", help="Apply preview ID.")
    ] = None,
    discard_preview: Annotated[
        str | None, typer.Option("--discard-preview", help="Discard preview ID.")
    ] = None,
    remote: Annotated[
        bool, typer.Option("--remote", help="Pull from the Git remote before, push after.")
    ] = False,
) -> None:
    """Run one sync (see the package README)."""
    import os

    from dsh_memory.errors import SyncInvalidRequestError
    from dsh_memory.root import resolve_memory_root
    from dsh_memory.service import MemoryService
    from dsh_memory.sessions import SessionSources
    from dsh_memory.syncrun import SyncOptions, run_sync

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
        from dsh_memory.settings import read_enabled, settings_path
        from dsh_memory.syncrun import DISABLED_MESSAGE

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
        from dsh_memory.remote_sync import sync_with_remote

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
            prog_name="dsh-memory-sync",
            render_error=render_error,
            version=__version__,
            path_options=("--root", "--sessions-dir", "--claude-projects", "--codex-sessions"),
            bare_help=False,  # a bare dsh-memory-sync runs a sync
        )
    )


if __name__ == "__main__":
    main()

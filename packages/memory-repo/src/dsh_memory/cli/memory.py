"""``dsh-memory``: one subcommand per ``memory`` method; parse, call, print.

Each command's options are declared in :mod:`dsh_memory.cli_spec` (read by the launcher's
fast path and the hook too). A successful envelope goes to stdout (exit 0), a failed one to
stderr (exit 1). Option values are taken as strings and handed to the method (``"21"``
becomes 21, ``"true"`` becomes True; anything else is passed through as given), so
malformed or out-of-range values come back as the method's own ``*-invalid-request`` code,
never as a parser error.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from dsh_common.cli import add_setup_command, emit_json, one_query, run_app
from dsh_common.cli.typer_commands import callback, command
from dsh_memory.cli._shared import emit
from dsh_memory.cli_spec import PROGRAM
from dsh_memory.errors import render_error

if TYPE_CHECKING:
    from dsh_common.agent_setup import Integration

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: rendering it with rich costs ~170 ms of imports at every `--help`.
    rich_markup_mode=None,
    help="The DPSK memory repository: status, health, clear, migration, runs, rollback, "
    "search and context. Prints the memory API's JSON envelope.",
)


def _integer_or_raw(value: str | None) -> object:
    from dsh_memory.cli_output import integer_or_raw

    return integer_or_raw(value)


def _boolean_or_raw(value: str | None) -> object:
    if value is None:
        return None
    return {"true": True, "false": False}.get(value.strip().lower(), value)


def _utf8(value: str | None, code: str, option: str) -> str | None:
    """An option value, or the method's ``code`` envelope when it is not valid UTF-8.

    Python hands undecodable argv bytes over as lone surrogates; nothing downstream can
    print, hash or store them, so they are refused here with the bytes escaped.
    """
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        emit_json(render_error(code, f"{option} is not valid UTF-8: {shown}"), stream=sys.stderr)
        raise typer.Exit(1) from None
    return value


def _service(ctx: typer.Context) -> Any:
    from dsh_memory.cli_output import vector_progress
    from dsh_memory.service import MemoryService

    root = ctx.obj.get("root") if isinstance(ctx.obj, dict) else None
    # Hybrid ranking encodes whatever vectors are missing, with a progress bar for many.
    return MemoryService(root, progress=vector_progress())


@callback(app, PROGRAM)
def main_options(ctx: typer.Context, root: str | None) -> None:
    """Options shared by every command."""
    ctx.obj = {"root": root}


@command(
    app, PROGRAM["init"], epilog="\b\nExample:\n  dsh-memory init --root ~/.dsh/storages/memory"
)
def init_command(ctx: typer.Context) -> None:
    """Create the memory repository (idempotent: a rerun leaves HEAD unchanged)."""
    service = _service(ctx)
    emit(service, service.init())


@command(app, PROGRAM["get-settings"], epilog="\b\nExample:\n  dsh-memory get-settings")
def get_settings_command(ctx: typer.Context) -> None:
    """Print memory.enabled from the host settings file."""
    service = _service(ctx)
    emit(service, service.get_settings())


@command(
    app, PROGRAM["set-enabled"], epilog="\b\nExample:\n  dsh-memory set-enabled --enabled true"
)
def set_enabled_command(ctx: typer.Context, enabled: str | None) -> None:
    """Persist memory.enabled in the host settings file."""
    service = _service(ctx)
    emit(service, service.set_enabled(_boolean_or_raw(enabled)))


@command(app, PROGRAM["status"], epilog="\b\nExample:\n  dsh-memory status --format text")
def status_command(ctx: typer.Context) -> None:
    """Metadata-only repository status (counts, dirtiness, last run, pending preview)."""
    service = _service(ctx)
    emit(service, service.status())


@command(app, PROGRAM["health"], epilog="\b\nExample:\n  dsh-memory health")
def health_command(ctx: typer.Context) -> None:
    """Lock, active run, journal and recovery health of the repository."""
    service = _service(ctx)
    emit(service, service.health())


@command(
    app, PROGRAM["clear"], epilog="\b\nExample:\n  dsh-memory clear --confirmation DELETE_MEMORY"
)
def clear_command(ctx: typer.Context, confirmation: str | None) -> None:
    """Clear the payload in one commit, after a recovery point."""
    service = _service(ctx)
    emit(service, service.clear(confirmation))


@command(app, PROGRAM["legacy-records"], epilog="\b\nExample:\n  dsh-memory legacy-records")
def legacy_records_command(ctx: typer.Context) -> None:
    """List records without front matter (metadata only)."""
    service = _service(ctx)
    emit(service, service.legacy_records())


@command(
    app,
    PROGRAM["migrate-legacy"],
    epilog="\b\nExample:\n  dsh-memory migrate-legacy --dry-run\n"
    "  dsh-memory migrate-legacy --apply",
)
def migrate_legacy_command(ctx: typer.Context, dry_run: str | None) -> None:
    """Give legacy records deterministic front matter (dry run or apply)."""
    service = _service(ctx)
    emit(service, service.migrate_legacy(_boolean_or_raw(dry_run)))


@command(app, PROGRAM["runs"], epilog="\b\nExample:\n  dsh-memory runs --limit 5")
def runs_command(
    ctx: typer.Context, limit: str | None, operation: str | None, status: str | None
) -> None:
    """Journaled runs, newest first."""
    service = _service(ctx)
    operation = _utf8(operation, "runs-invalid-request", "--operation")
    status = _utf8(status, "runs-invalid-request", "--status")
    emit(service, service.runs(_integer_or_raw(limit), operation, status))


@command(
    app,
    PROGRAM["rollback"],
    epilog="\b\nExample:\n  dsh-memory rollback --run-id RUN_ID --confirmation ROLLBACK_MEMORY",
)
def rollback_command(ctx: typer.Context, run_id: str | None, confirmation: str | None) -> None:
    """Undo a whole applied run with a new rollback commit."""
    service = _service(ctx)
    emit(service, service.rollback(run_id, confirmation))


@command(
    app, PROGRAM["search"], epilog='\b\nExample:\n  dsh-memory search "release checklist" --limit 5'
)
def search_command(
    ctx: typer.Context,
    text: str | None,
    query: str | None,
    limit: str | None,
    scope: str | None,
    ranking: str | None,
) -> None:
    """Full-text search over the records, with citations."""
    service = _service(ctx)
    query = _utf8(one_query(text, query), "search-invalid-request", "--query")
    scope = _utf8(scope, "search-invalid-request", "--scope")
    ranking = _utf8(ranking, "search-invalid-request", "--ranking")
    emit(service, service.search(query, _integer_or_raw(limit), scope, ranking))


@command(app, PROGRAM["context"], epilog='\b\nExample:\n  dsh-memory context "deploy" --limit 5')
def context_command(
    ctx: typer.Context,
    text: str | None,
    query: str | None,
    limit: str | None,
    scope: str | None,
    ranking: str | None,
) -> None:
    """Bounded records for an agent's context; records usage."""
    service = _service(ctx)
    query = _utf8(one_query(text, query), "context-invalid-request", "--query")
    scope = _utf8(scope, "context-invalid-request", "--scope")
    ranking = _utf8(ranking, "context-invalid-request", "--ranking")
    emit(service, service.context(query, _integer_or_raw(limit), scope, ranking))


@command(app, PROGRAM["vectors"], epilog="\b\nExample:\n  dsh-memory vectors")
def vectors_command(ctx: typer.Context) -> None:
    """Build the vectors hybrid ranking needs, with a progress bar ([semantic] extra)."""
    service = _service(ctx)
    emit(service, service.vectors())


@command(app, PROGRAM["previews"], epilog="\b\nExample:\n  dsh-memory previews")
def previews_command(ctx: typer.Context) -> None:
    """Pending sync previews, newest first."""
    service = _service(ctx)
    emit(service, service.previews())


@command(
    app,
    PROGRAM["apply-preview"],
    epilog="\b\nExample:\n  dsh-memory apply-preview --preview-id 20261201-120000",
)
def apply_preview_command(ctx: typer.Context, preview_id: str | None) -> None:
    """Apply a pending preview as one journaled transaction (operation preview)."""
    service = _service(ctx)
    emit(service, service.apply_preview(preview_id))


@command(
    app,
    PROGRAM["discard-preview"],
    epilog="\b\nExample:\n  dsh-memory discard-preview --preview-id 20261201-120000",
)
def discard_preview_command(ctx: typer.Context, preview_id: str | None) -> None:
    """Remove a pending preview without applying it."""
    service = _service(ctx)
    emit(service, service.discard_preview(preview_id))


@command(
    app,
    PROGRAM["write"],
    epilog="\b\nExample:\n  dsh-memory write handbook/uv.md --file notes/uv.md",
)
def write_command(ctx: typer.Context, path: str, file: str | None, source: str | None) -> None:
    """Write one record as a journaled edit run (rollback can undo it)."""
    from dsh_memory.errors import EditInvalidRequestError

    stdin = source == "-"
    if source not in (None, "-") or (file is None) == (not stdin):
        raise EditInvalidRequestError("give exactly one of --file F or - (stdin)")
    if file is not None:
        try:
            with open(file, "rb") as handle:
                content = handle.read(8 * 1024 * 1024)
        except OSError as exc:
            raise EditInvalidRequestError(f"{file} cannot be read: {exc}") from exc
    else:
        content = sys.stdin.buffer.read(8 * 1024 * 1024)
    service = _service(ctx)
    emit(service, service.write(path, content))


@command(app, PROGRAM["remove"], epilog="\b\nExample:\n  dsh-memory remove handbook/uv.md")
def remove_command(ctx: typer.Context, path: str) -> None:
    """Remove one record as a journaled edit run."""
    service = _service(ctx)
    emit(service, service.remove(path))


@command(app, PROGRAM["adopt"], epilog="\b\nExample:\n  dsh-memory adopt")
def adopt_command(ctx: typer.Context) -> None:
    """Validate and commit the hand edits in the payload as one journaled edit run."""
    service = _service(ctx)
    emit(service, service.adopt())


@command(
    app,
    PROGRAM["recover"],
    epilog="\b\nExample:\n  dsh-memory recover --confirmation RECOVER_MEMORY",
)
def recover_command(ctx: typer.Context, confirmation: str | None) -> None:
    """Make an interrupted run consistent and release its dead lock."""
    service = _service(ctx)
    emit(service, service.recover(confirmation))


@command(
    app,
    PROGRAM["remote"],
    epilog="\b\nExamples:\n  dsh-memory remote set git@github.com:me/memory.git\n"
    "  dsh-memory remote\n  dsh-memory remote remove",
)
def remote_command(ctx: typer.Context, action: str | None, url: str | None) -> None:
    """Show the memory's Git remote, set its URL, or remove it."""
    from dsh_common.cli import USAGE_ERROR_CODE
    from dsh_common.errors import DshError

    service = _service(ctx)
    if action is None and url is None:
        emit(service, service.remote())
    elif action == "set":
        emit(service, service.set_remote(url))
    elif action == "remove" and url is None:
        emit(service, service.remove_remote())
    else:
        raise DshError(
            "use `dsh-memory remote`, `dsh-memory remote set URL` or `dsh-memory remote remove`",
            code=USAGE_ERROR_CODE,
        )


@command(app, PROGRAM["pull"], epilog="\b\nExample:\n  dsh-memory pull")
def pull_command(ctx: typer.Context) -> None:
    """Fetch the remote and merge it in as one journaled run (never loses a record)."""
    service = _service(ctx)
    emit(service, service.pull())


@command(app, PROGRAM["push"], epilog="\b\nExample:\n  dsh-memory push")
def push_command(ctx: typer.Context) -> None:
    """Push this memory to the remote, fast-forward only (pull first when it moved)."""
    service = _service(ctx)
    emit(service, service.push())


@command(app, PROGRAM["export"], epilog="\b\nExample:\n  dsh-memory export --bundle memory.bundle")
def export_command(ctx: typer.Context, bundle: str | None) -> None:
    """Back the repository up as a git bundle plus FILE.manifest.json."""
    service = _service(ctx)
    emit(service, service.export_bundle(bundle))


@command(
    app,
    PROGRAM["import"],
    epilog="\b\nExample:\n  dsh-memory import --bundle memory.bundle --root ~/restored-memory",
)
def import_command(ctx: typer.Context, bundle: str | None, new_root: str | None) -> None:
    """Restore a bundle into a new memory root (never over an existing one)."""
    service = _service(ctx)
    emit(service, service.import_bundle(bundle, new_root))


@command(app, PROGRAM["prompt-section"], epilog="\b\nExample:\n  dsh-memory prompt-section")
def prompt_section_command(ctx: typer.Context) -> None:
    """Print the memory system-prompt section (nothing when memory is disabled)."""
    service = _service(ctx)
    sys.stdout.write(service.prompt_section())
    sys.stdout.flush()


@command(app, PROGRAM["mcp"], epilog="\b\nExample:\n  dsh-memory mcp")
def mcp_command(ctx: typer.Context) -> None:
    """Serve memory_search and memory_context over MCP on stdin/stdout ([mcp] extra)."""
    from dsh_common.mcp_stdio import import_server

    # Raised inside run_app, a missing extra is printed in dsh-memory's own envelope.
    server = import_server("dsh_memory.mcp_server", "dsh-memory")
    server.serve(ctx.obj.get("root") if isinstance(ctx.obj, dict) else None)


@command(
    app,
    PROGRAM["hook"],
    epilog='\b\nExample:\n  echo \'{"cwd": "."}\' | dsh-memory hook session-start',
)
def hook_command(
    ctx: typer.Context, event: str, mcp_server: str | None, host: str | None
) -> NoReturn:
    """Agent hook: print the memory prompt section as additionalContext."""
    from dsh_memory.hooks import main as hook_main

    # The declared options go on to the hook, and so does anything else (a newer setup's).
    options = PROGRAM["hook"].words({"mcp_server": mcp_server, "host": host})
    raise typer.Exit(hook_main([event, *options, *ctx.args]))


_HOOK_WORDS = {"mcp_server": "dsh-memory", "host": "{host}"}


def _memory_integration() -> Integration:
    from dsh_common.agent_setup import Integration

    return Integration(
        server="dsh-memory",
        program="dsh-memory",
        mcp_args=("mcp",),
        # The hook's declared options: the section then names the tools as the host shows
        # them ({host} is filled in by setup).
        hooks=(("SessionStart", ("hook", "session-start", *PROGRAM["hook"].words(_HOOK_WORDS))),),
        env_names=("DSH_HOME", "DSH_MEMORY_ROOT"),
    )


add_setup_command(
    app,
    _memory_integration,
    summary="Register the MCP server and the session-start hook in Claude Code or Codex.",
    examples=["dsh-memory setup claude-code --scope project --dry-run"],
)


@command(app, PROGRAM["ui"], epilog="\b\nExample:\n  dsh-memory ui --no-browser")
def ui_command(ctx: typer.Context, ui_root: str | None, port: int, no_browser: bool) -> None:
    """Serve the settings page on 127.0.0.1 until Ctrl-C (needs dsh-memory[ui])."""
    from dsh_memory.store.root import resolve_memory_root
    from dsh_memory.store.settings import settings_path
    from dsh_memory.ui.errors import UiUnavailableError

    try:
        from dsh_memory.ui.server import serve
    except ImportError as exc:
        raise UiUnavailableError(
            f"the settings page needs the ui extra: pip install 'dsh-memory[ui]' ({exc})"
        ) from exc
    root = ui_root or (ctx.obj.get("root") if isinstance(ctx.obj, dict) else None)
    # The root is fixed here, once: nothing the page sends can change it.
    serve(resolve_memory_root(root), settings_path(), port=port, open_browser=not no_browser)


def main() -> NoReturn:
    from dsh_memory import __version__

    # --root is refused as invalid-path before anything is created; other option values reach
    # the method, which answers its own *-invalid-request code.
    sys.exit(
        run_app(
            app,
            program=PROGRAM,
            render_error=render_error,
            version=__version__,
            refuse_undecodable_values=False,
        )
    )


if __name__ == "__main__":
    main()

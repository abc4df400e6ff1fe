"""``dsh-memory``: one subcommand per ``memory`` method; parse, call, print.

A successful envelope goes to stdout (exit 0), a failed one to stderr (exit 1). Option
values are taken as strings and handed to the method (``"21"`` becomes 21, ``"true"``
becomes True; anything else is passed through as given), so malformed or out-of-range
values come back as the method's own ``*-invalid-request`` code, never as a parser error.
"""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any

import typer

from dsh_common.cli import emit_json, run_app

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: rendering it with rich costs ~170 ms of imports at every `--help`.
    rich_markup_mode=None,
    help="The DPSK memory repository: status, health, clear, migration, runs, rollback, "
    "search and context. Prints the memory API's JSON envelope.",
)

RootOption = Annotated[
    str | None,
    typer.Option("--root", help="Memory root (default $DSH_MEMORY_ROOT, $DSH_HOME/storages/memory,"
                 " ~/.dsh/storages/memory)."),
]  # fmt: skip

_INTEGER = re.compile(r"^-?[0-9]+$")


def render_error(code: str, message: str) -> dict[str, Any]:
    """The spec's failed envelope, with a message for people."""
    return {"ok": False, "error": {"code": code, "message": message}}


def _integer_or_raw(value: str | None) -> object:
    if value is None:
        return None
    return int(value) if _INTEGER.fullmatch(value.strip()) else value


def _boolean_or_raw(value: str | None) -> object:
    if value is None:
        return None
    return {"true": True, "false": False}.get(value.strip().lower(), value)


def _one_query(positional: str | None, option: str | None) -> str | None:
    from dsh_memory.cli_output import one_query

    return one_query(positional, option)


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
    from dsh_memory.service import MemoryService

    root = ctx.obj.get("root") if isinstance(ctx.obj, dict) else None
    return MemoryService(root)


def _emit(service: Any, envelope: dict[str, Any]) -> None:
    if envelope.get("ok"):
        emit_json(envelope)
        return
    from dsh_memory.cli_output import emit_envelope

    # Printed by the module the fast path uses too (option names, the init hint).
    if emit_envelope(service, envelope):
        raise typer.Exit(1)


@app.callback()
def main_options(ctx: typer.Context, root: RootOption = None) -> None:
    """Options shared by every command."""
    ctx.obj = {"root": root}


@app.command("init", epilog="\b\nExample:\n  dsh-memory init --root ~/.dsh/storages/memory")
def init_command(ctx: typer.Context) -> None:
    """Create the memory repository (idempotent: a rerun leaves HEAD unchanged)."""
    service = _service(ctx)
    _emit(service, service.init())


@app.command("get-settings", epilog="\b\nExample:\n  dsh-memory get-settings")
def get_settings_command(ctx: typer.Context) -> None:
    """Print memory.enabled from the host settings file."""
    service = _service(ctx)
    _emit(service, service.get_settings())


@app.command("set-enabled", epilog="\b\nExample:\n  dsh-memory set-enabled --enabled true")
def set_enabled_command(
    ctx: typer.Context,
    enabled: Annotated[
        str | None,
        typer.Option("--enabled", help="true or false; --enabled alone or --disabled also work."),
    ] = None,
) -> None:
    """Persist memory.enabled in the host settings file."""
    service = _service(ctx)
    _emit(service, service.set_enabled(_boolean_or_raw(enabled)))


@app.command("status", epilog="\b\nExample:\n  dsh-memory status --format text")
def status_command(ctx: typer.Context) -> None:
    """Metadata-only repository status (counts, dirtiness, last run, pending preview)."""
    service = _service(ctx)
    _emit(service, service.status())


@app.command("health", epilog="\b\nExample:\n  dsh-memory health")
def health_command(ctx: typer.Context) -> None:
    """Lock, active run, journal and recovery health of the repository."""
    service = _service(ctx)
    _emit(service, service.health())


@app.command("clear", epilog="\b\nExample:\n  dsh-memory clear --confirmation DELETE_MEMORY")
def clear_command(
    ctx: typer.Context,
    confirmation: Annotated[
        str | None, typer.Option("--confirmation", help="Must be exactly DELETE_MEMORY.")
    ] = None,
) -> None:
    """Clear the payload in one commit, after a recovery point."""
    service = _service(ctx)
    _emit(service, service.clear(confirmation))


@app.command("legacy-records", epilog="\b\nExample:\n  dsh-memory legacy-records")
def legacy_records_command(ctx: typer.Context) -> None:
    """List records without front matter (metadata only)."""
    service = _service(ctx)
    _emit(service, service.legacy_records())


@app.command(
    "migrate-legacy",
    epilog="\b\nExample:\n  dsh-memory migrate-legacy --dry-run\n"
    "  dsh-memory migrate-legacy --apply",
)
def migrate_legacy_command(
    ctx: typer.Context,
    dry_run: Annotated[
        str | None,
        typer.Option(
            "--dry-run",
            help="Plan only (also --dry-run true); --apply or --dry-run false applies.",
        ),
    ] = None,
) -> None:
    """Give legacy records deterministic front matter (dry run or apply)."""
    service = _service(ctx)
    _emit(service, service.migrate_legacy(_boolean_or_raw(dry_run)))


@app.command("runs", epilog="\b\nExample:\n  dsh-memory runs --limit 5")
def runs_command(
    ctx: typer.Context,
    limit: Annotated[str | None, typer.Option("--limit", help="How many (default 20).")] = None,
    operation: Annotated[str | None, typer.Option("--operation", help="Exact match.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Exact match.")] = None,
) -> None:
    """Journaled runs, newest first."""
    service = _service(ctx)
    operation = _utf8(operation, "runs-invalid-request", "--operation")
    status = _utf8(status, "runs-invalid-request", "--status")
    _emit(service, service.runs(_integer_or_raw(limit), operation, status))


@app.command(
    "rollback",
    epilog="\b\nExample:\n  dsh-memory rollback --run-id RUN_ID --confirmation ROLLBACK_MEMORY",
)
def rollback_command(
    ctx: typer.Context,
    run_id: Annotated[str | None, typer.Option("--run-id", help="The run to undo.")] = None,
    confirmation: Annotated[
        str | None, typer.Option("--confirmation", help="Must be exactly ROLLBACK_MEMORY.")
    ] = None,
) -> None:
    """Undo a whole applied run with a new rollback commit."""
    service = _service(ctx)
    _emit(service, service.rollback(run_id, confirmation))


@app.command("search", epilog='\b\nExample:\n  dsh-memory search "release checklist" --limit 5')
def search_command(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(metavar="[QUERY]", help="Words to find.")] = None,
    query: Annotated[str | None, typer.Option("--query", help="Words to find.")] = None,
    limit: Annotated[str | None, typer.Option("--limit", help="Default 20.")] = None,
    scope: Annotated[
        str | None, typer.Option("--scope", help="active (default), archive or all.")
    ] = None,
) -> None:
    """Full-text search over the records, with citations."""
    service = _service(ctx)
    query = _utf8(_one_query(text, query), "search-invalid-request", "--query")
    scope = _utf8(scope, "search-invalid-request", "--scope")
    _emit(service, service.search(query, _integer_or_raw(limit), scope))


@app.command("context", epilog='\b\nExample:\n  dsh-memory context "deploy" --limit 5')
def context_command(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(metavar="[QUERY]", help="Optional words.")] = None,
    query: Annotated[str | None, typer.Option("--query", help="Optional words.")] = None,
    limit: Annotated[str | None, typer.Option("--limit", help="1-20, default 10.")] = None,
    scope: Annotated[
        str | None, typer.Option("--scope", help="active (default), archive or all.")
    ] = None,
) -> None:
    """Bounded records for an agent's context; records usage."""
    service = _service(ctx)
    query = _utf8(_one_query(text, query), "context-invalid-request", "--query")
    scope = _utf8(scope, "context-invalid-request", "--scope")
    _emit(service, service.context(query, _integer_or_raw(limit), scope))


@app.command("prompt-section", epilog="\b\nExample:\n  dsh-memory prompt-section")
def prompt_section_command(ctx: typer.Context) -> None:
    """Print the memory system-prompt section (nothing when memory is disabled)."""
    service = _service(ctx)
    sys.stdout.write(service.prompt_section())
    sys.stdout.flush()


@app.command("mcp")
def mcp_command(ctx: typer.Context) -> None:
    """Serve memory_search and memory_context over MCP on stdin/stdout ([mcp] extra)."""
    try:
        from dsh_memory.mcp_server import serve
    except ImportError:
        sys.stderr.write(
            '{"ok": false, "error": {"code": "mcp-unavailable", "message": "the MCP server '
            "needs the mcp extra: pip install 'dsh-memory[mcp]'\"}}\n"
        )
        raise typer.Exit(1) from None
    serve(ctx.obj.get("root") if isinstance(ctx.obj, dict) else None)


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def hook_command(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(help="session-start.")],
) -> None:
    """Agent hook: print the memory prompt section as additionalContext."""
    from dsh_memory.hooks import main as hook_main

    raise typer.Exit(hook_main([event, *ctx.args]))


@app.command("setup")
def setup_command(
    host: Annotated[str, typer.Argument(help="claude-code or codex.")],
    scope: Annotated[str, typer.Option("--scope", help="user (default) or project.")] = "user",
    project_dir: Annotated[
        str | None, typer.Option("--project-dir", help="Project root (default: cwd).")
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Undo exactly our entries.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the diff; write nothing.")
    ] = False,
) -> None:
    """Register the MCP server and the session-start hook in Claude Code or Codex."""
    from dsh_common.agent_setup import Integration, run_setup

    integration = Integration(
        server="dsh-memory",
        program="dsh-memory",
        mcp_args=("mcp",),
        hooks=(
            (
                "SessionStart",
                ("hook", "session-start", "--mcp-server", "dsh-memory", "--host", "{host}"),
            ),
        ),
        env_names=("DSH_HOME", "DSH_MEMORY_ROOT"),
    )
    emit_json(
        run_setup(
            integration,
            host,
            scope=scope,
            project_dir=project_dir,
            remove=remove,
            dry_run=dry_run,
        )
    )


@app.command("ui")
def ui_command(
    ctx: typer.Context,
    ui_root: RootOption = None,
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (default: a free one).")
    ] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL only; do not open a browser.")
    ] = False,
) -> None:
    """Serve the settings page on 127.0.0.1 until Ctrl-C (needs dsh-memory[ui])."""
    from dsh_memory.root import resolve_memory_root
    from dsh_memory.settings import settings_path
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


def main() -> None:
    from dsh_memory import __version__

    # --root is refused as invalid-path before anything is created; other option values reach
    # the method, which answers its own *-invalid-request code.
    sys.exit(
        run_app(
            app,
            prog_name="dsh-memory",
            render_error=render_error,
            global_options=("--root",),
            # `import --root NEW` names the root to create, not the one to use.
            local_options={"import": ("--root",)},
            version=__version__,
            flag_values={
                "migrate-legacy": {"--dry-run": "--apply"},
                "set-enabled": {"--enabled": "--disabled"},
            },
            path_options=("--root",),
            refuse_undecodable_values=False,
        )
    )


if __name__ == "__main__":
    main()

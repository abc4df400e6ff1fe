"""``dsh-knowledge``: the command line over the library. Parses, calls, prints JSON.

Every result goes to stdout as JSON; every foreseeable failure prints
``{"error": {"code", "message"}}`` to stderr and exits 1 (dsh_common.cli.run_app).
Library modules are imported inside the commands so that ``--help`` starts fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dsh_common.cli import add_setup_command, emit_json, run_app

# The command line's spelling rules live beside the fast path's (no typer there).
from dsh_knowledge.cli_results import filter_workspace as _filter_workspace
from dsh_knowledge.cli_results import local_checkout
from dsh_knowledge.cli_results import missing as _missing
from dsh_knowledge.cli_results import one_query as _one_query
from dsh_knowledge.cli_results import scope_workspace as _scope_workspace

#: Options whose value is a path: undecodable bytes there are invalid-path.
PATH_OPTIONS = ("--db", "--repo", "--workspace", "--from")

if TYPE_CHECKING:
    from dsh_common.agent_setup import Integration
    from dsh_knowledge.repository import KnowledgeRepository

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help: rendering it with rich costs ~170 ms of imports at every `--help`.
    rich_markup_mode=None,
    help="Local, evidence-backed project knowledge: store, lifecycle, ranked retrieval, "
    "Git freshness and health. Output is JSON.",
)

_state: dict[str, Any] = {}


@app.callback()
def main_options(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="SQLite file or postgresql:// URL (default $DSH_KNOWLEDGE_DB, else "
            "$DSH_HOME/knowledge/knowledge.sqlite, ~/.dsh when unset).",
        ),
    ] = None,
) -> None:
    """Local, evidence-backed project knowledge for coding agents."""
    from dsh_knowledge.store_location import resolve_database

    # Resolved here, once, by the resolver the hook, the MCP server and setup use.
    _state["db"] = resolve_database(db)


def _repository() -> KnowledgeRepository:
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.store import KnowledgeStore
    from dsh_knowledge.store_location import resolve_database

    store = KnowledgeStore(_state.get("db") or resolve_database())
    _state["store"] = store
    return KnowledgeRepository(store)


def _close() -> None:
    store = _state.pop("store", None)
    if store is not None:
        store.close()


def _usage(message: str) -> None:
    from dsh_knowledge.errors import ValidationError

    raise ValidationError(message)


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge add --type fact --content 'The API runs on port 8080.' "
    '--evidence \'{"type": "file", "source": "config/app.toml"}\''
)
def add(
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            help="Workspace scope; a directory is stored as its canonical path "
            "(default: the git top level of the current directory, else the directory).",
        ),
    ] = None,
    knowledge_type: Annotated[
        str | None, typer.Option("--type", help="fact, decision or lesson.")
    ] = None,
    content: Annotated[str | None, typer.Option("--content", help="The knowledge text.")] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project scope (omit: workspace-wide).")
    ] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option(
            "--evidence",
            help='One evidence object as JSON, repeatable: {"type","source","locator"?,'
            '"timestamp"?,"gitProvenance"?}. timestamp defaults to now.',
        ),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="Git repository of the file evidence: attach gitProvenance (commit and path) "
            "to each file evidence whose source is a clean, tracked file present in HEAD, "
            "and add a provenanceCapture report to the output (default: the workspace, "
            "when it is the top level of a git work tree and file evidence is given).",
        ),
    ] = None,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl",
            help="Add many items in one transaction: one JSON object per line with "
            '"type", "content" and optional "project", "evidence" (- reads stdin).',
        ),
    ] = None,
) -> None:
    """Add a knowledge item (status candidate, origin explicit); print it."""
    from dsh_common.jsonio import loads
    from dsh_knowledge.models import now_timestamp

    named = workspace is None  # the default: a configured workspace identity may name it
    workspace = _scope_workspace(workspace)
    if jsonl is not None:
        from dsh_knowledge.bulk import add_jsonl

        if knowledge_type is not None or content is not None or evidence:
            _usage("--jsonl cannot be combined with --type, --content or --evidence.")
        try:
            emit_json(add_jsonl(_repository(), jsonl, workspace=workspace, project=project))
        finally:
            _close()
        return
    if knowledge_type is None or content is None:
        _missing("--type and --content are required (or --jsonl FILE).")
    assert knowledge_type is not None and content is not None  # noqa: S101 - _usage raised

    records = []
    for raw in evidence or []:
        record = loads(raw, what="--evidence")
        if not isinstance(record, dict):
            _usage("--evidence must be one JSON object.")
        record.setdefault("timestamp", now_timestamp())
        records.append(record)
    from dsh_knowledge.privacy import ensure_no_secrets

    # Before git looks at any path or anything is stored: the same filter as knowledge_add.
    ensure_no_secrets(content, records)
    report = None
    if repo is None and records:
        from dsh_common.locate import git_top_level

        # A workspace identity is a name: the files are in the local checkout.
        local = local_checkout(workspace) if named else workspace
        if git_top_level(local) == Path(local):
            repo = local
    if repo is not None:
        from dsh_knowledge.provenance import attach_git_provenance

        # Opportunistic: a file that is dirty, untracked or outside HEAD is stored without
        # provenance and named in the report; it never blocks the add.
        records, report = attach_git_provenance(records, repo)
    scope = {"workspace": workspace, "project": project}
    try:
        item = _repository().create(
            type=knowledge_type, content=content, scope=scope, evidence=records
        )
    finally:
        _close()
    emit_json(item if repo is None else {**item, "provenanceCapture": report})


@app.command(epilog="\b\nExample:\n  dsh-knowledge get ID")
def get(item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")]) -> None:
    """Print one item (error not-found for an unknown id)."""
    try:
        emit_json(_repository().require(item_id))
    finally:
        _close()


def _set_status(item_ids: list[str], status: str) -> None:
    from dsh_knowledge.review import set_status

    try:
        items = set_status(_repository(), item_ids, status)
    finally:
        _close()
    # One id prints the item (as before); several print {"items": [...]}.
    emit_json(items[0] if len(item_ids) == 1 else {"items": items})


@app.command(epilog="\b\nExample:\n  dsh-knowledge verify ID1 ID2")
def verify(
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Item ids.")],
) -> None:
    """Mark candidates verified (all ids are checked before any change); print them."""
    _set_status(item_ids, "verified")


@app.command(epilog="\b\nExample:\n  dsh-knowledge archive ID")
def archive(
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Item ids.")],
) -> None:
    """Archive items (all ids are checked before any change); print them."""
    _set_status(item_ids, "archived")


@app.command(epilog="\b\nExample:\n  dsh-knowledge supersede OLD_ID --by NEW_ID")
def supersede(
    item_id: Annotated[str, typer.Argument(metavar="ID", help="The verified item to replace.")],
    by: Annotated[str, typer.Option("--by", help="The verified replacement item id.")],
) -> None:
    """Mark a verified item superseded by a verified item in the same scope; print it."""
    try:
        emit_json(_repository().supersede(item_id, by))
    finally:
        _close()


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge update ID --content 'The API runs on port 9090.'"
)
def update(
    item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")],
    content: Annotated[str | None, typer.Option("--content", help="New knowledge text.")] = None,
    knowledge_type: Annotated[
        str | None, typer.Option("--type", help="New type: fact, decision or lesson.")
    ] = None,
    evidence: Annotated[
        list[str] | None,
        typer.Option("--evidence", help="Replace all evidence: one JSON object, repeatable."),
    ] = None,
) -> None:
    """Change an item's content, type or evidence (the repository's rules apply); print it."""
    from dsh_common.jsonio import loads
    from dsh_knowledge.models import now_timestamp

    if content is None and knowledge_type is None and not evidence:
        _missing("Nothing to update: give --content, --type or --evidence.")
    records = None
    if evidence:
        records = []
        for raw in evidence:
            record = loads(raw, what="--evidence")
            if not isinstance(record, dict):
                _usage("--evidence must be one JSON object.")
            record.setdefault("timestamp", now_timestamp())
            records.append(record)
    from dsh_knowledge.privacy import ensure_no_secrets

    ensure_no_secrets(content, records or ())
    try:
        emit_json(
            _repository().update(item_id, type=knowledge_type, content=content, evidence=records)
        )
    finally:
        _close()


@app.command(name="list", epilog="\b\nExample:\n  dsh-knowledge list --status verified --limit 10")
def list_items(
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    workspace_wide: Annotated[
        bool, typer.Option("--workspace-wide", help="Only items without a project.")
    ] = False,
    knowledge_type: Annotated[str | None, typer.Option("--type", help="Type filter.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Status filter.")] = None,
    origin: Annotated[str | None, typer.Option("--origin", help="explicit or automatic.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N items.")] = None,
) -> None:
    """List items, newest updatedAt first: {"items": [...], "total", "truncated"}."""
    from dsh_knowledge.repository import UNSET

    if project is not None and workspace_wide:
        _usage("--project and --workspace-wide cannot be used together.")
    from dsh_common.cli import list_counts
    from dsh_knowledge.models import validate_limit

    if limit is not None:
        validate_limit(limit)
    try:
        repository = _repository()
        filters: dict[str, Any] = {
            "workspace": _filter_workspace(workspace),
            "project": None if workspace_wide else (project if project is not None else UNSET),
            "type": knowledge_type,
            "status": status,
            "creation_origin": origin,
        }
        shown = repository.list(**filters, limit=limit)
        total = len(shown) if limit is None else repository.count(**filters)
        emit_json({"items": shown, **list_counts(len(shown), total)})
    finally:
        _close()


@app.command(epilog="\b\nExample:\n  dsh-knowledge search 'port 8080' --limit 5")
def search(
    text: Annotated[
        str | None, typer.Argument(metavar="[QUERY]", help="Literal text to find in content.")
    ] = None,
    query: Annotated[str | None, typer.Option("--query", help="The same, as an option.")] = None,
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N items.")] = None,
) -> None:
    """Literal substring search: {"items": [...], "total", "truncated"}."""
    from dsh_knowledge.cli_results import search_output

    phrase = _one_query(text, query, "search")
    try:
        output = search_output(
            _repository(), phrase, workspace=workspace, project=project, limit=limit
        )
        emit_json(output)
    finally:
        _close()


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge retrieve 'which port does the API use' --limit 3"
)
def retrieve(
    text: Annotated[
        str | None, typer.Argument(metavar="[QUERY]", help="What you are looking for, in words.")
    ] = None,
    query: Annotated[str | None, typer.Option("--query", help="The same, as an option.")] = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            help="Workspace (default: the git top level of the current directory, else it).",
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project: its items rank first.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N (<= 100).")] = None,
    prefer: Annotated[
        list[str] | None, typer.Option("--prefer", help="Preferred type, repeatable, in order.")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="candidate or verified only.")
    ] = None,
    ranking: Annotated[
        str | None,
        typer.Option(
            "--ranking",
            help="lexical (default) or hybrid: by meaning too, across languages (needs the "
            "[semantic] extra; default $DSH_RANKING).",
        ),
    ] = None,
) -> None:
    """Ranked retrieval with explanations: {"results": [{"knowledge","score","explanation"}]}."""
    from dsh_knowledge.cli_results import retrieve_output

    phrase = _one_query(text, query, "retrieve")
    try:
        output = retrieve_output(
            _repository(),
            phrase,
            workspace=workspace,
            project=project,
            limit=limit,
            prefer=prefer,
            status=status,
            ranking=ranking,
        )
        emit_json(output)
    finally:
        _close()


@app.command(epilog="\b\nExample:\n  dsh-knowledge freshness ID --repo .")
def freshness(
    item_id: Annotated[str, typer.Argument(metavar="ID", help="Item id.")],
    repo: Annotated[
        Path | None,
        typer.Option("--repo", help="The Git work tree to compare with (default: its top level)."),
    ] = None,
) -> None:
    """Compare an item's Git-backed file evidence with the repository: the freshness report."""
    from dsh_knowledge.freshness import check_freshness

    if repo is None:
        from dsh_knowledge.workspace_identity import checkout_root

        repo = Path(checkout_root())

    try:
        item = _repository().require(item_id)
    finally:
        _close()
    emit_json(check_freshness(item, repo))


@app.command(
    epilog="\b\nExamples:\n  dsh-knowledge health ID1 ID2 --repo .\n"
    "  dsh-knowledge health --all --workspace ~/src/app"
)
def health(
    item_ids: Annotated[
        list[str] | None, typer.Argument(metavar="ID...", help="1 to 16 item ids.")
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option("--repo", help="The Git work tree to check against (default: the workspace)."),
    ] = None,
    guidance: Annotated[
        bool, typer.Option("--guidance", help="Add advisory guidance per result.")
    ] = False,
    all_items: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every candidate and verified item of the workspace, in batches of 16 "
            "(progress on stderr).",
        ),
    ] = False,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="With --all: the workspace (default: cwd's).")
    ] = None,
) -> None:
    """Health of 1-16 items of one workspace: {"results": [...]}."""
    from dsh_knowledge.health import check_health

    if all_items:
        from dsh_knowledge.bulk import health_all

        if item_ids:
            _missing("Give item ids or --all, not both.")
        scope = _scope_workspace(workspace)
        try:
            repository = _repository()
            report = health_all(
                repository, scope, repo or Path(local_checkout(scope)), include_guidance=guidance
            )
            emit_json(_with_warnings(report, repository.store.deployment_warnings()))
        finally:
            _close()
        return
    if not item_ids:
        _missing("Give 1 to 16 item ids, or --all.")
    assert item_ids is not None  # noqa: S101 - _usage raised
    try:
        repository = _repository()
        items = [repository.require(item_id) for item_id in item_ids]
        warnings = repository.store.deployment_warnings()
    finally:
        _close()
    stored = str(items[0]["scope"]["workspace"])
    where = repo if repo is not None else Path(local_checkout(stored)).resolve()
    report = {"results": check_health(items, where, include_guidance=guidance)}
    emit_json(_with_warnings(report, warnings))


def _with_warnings(report: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """``report`` with ``"warnings"`` about the database's set-up, when there are any."""
    return {**report, "warnings": warnings} if warnings else report


# --- review, extraction, late provenance ----------------------------------------------------


@app.command(epilog="\b\nExample:\n  dsh-knowledge review --workspace . --limit 10 --repo .")
def review(
    workspace: Annotated[str | None, typer.Option("--workspace", help="Workspace.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    workspace_wide: Annotated[
        bool, typer.Option("--workspace-wide", help="Only items without a project.")
    ] = False,
    origin: Annotated[
        str | None, typer.Option("--origin", help="explicit or automatic (default both).")
    ] = None,
    repo: Annotated[
        Path | None, typer.Option("--repo", help="Git work tree: add live health per item.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N candidates.")] = None,
) -> None:
    """Candidates to review, with evidence (and health with --repo): {"candidates": [...],
    "total", "truncated"}."""
    from dsh_common.cli import list_counts
    from dsh_knowledge.models import validate_limit
    from dsh_knowledge.repository import UNSET
    from dsh_knowledge.review import review_candidates

    if project is not None and workspace_wide:
        _usage("--project and --workspace-wide cannot be used together.")
    if limit is not None:
        validate_limit(limit)
    where = _filter_workspace(workspace)
    scope = None if workspace_wide else (project if project is not None else UNSET)
    try:
        repository = _repository()
        # Counted apart: health (with --repo) is checked for the shown candidates only.
        total = len(
            repository.list(
                workspace=where, project=scope, status="candidate", creation_origin=origin
            )
        )
        candidates = review_candidates(
            repository,
            workspace=where,
            project=scope,
            creation_origin=origin,
            repo_dir=repo,
            limit=limit,
        )
    finally:
        _close()
    emit_json({"candidates": candidates, **list_counts(len(candidates), total)})


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge extract --transcript ~/.claude/projects/p/session.jsonl"
)
def extract(
    transcript: Annotated[
        Path, typer.Option("--transcript", help="Claude Code transcript or DSH session log.")
    ],
    session_id: Annotated[
        str | None,
        typer.Option("--session-id", help="Session id (default: the one the file names)."),
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="Workspace (default: the file's cwd).")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Project (else $DSH_KNOWLEDGE_PROJECT).")
    ] = None,
) -> None:
    """Admit automatic candidates from a session's direct user messages (opt-in)."""
    from dsh_knowledge.agent_config import resolve_project
    from dsh_knowledge.extraction import extract_candidates
    from dsh_knowledge.transcripts import read_transcript

    parsed = read_transcript(transcript)
    session = session_id or parsed.session_id
    if not session:
        _usage("The transcript names no session; pass --session-id.")
    scope_workspace = workspace or parsed.cwd
    if not scope_workspace:
        _usage("The transcript names no working directory; pass --workspace.")
    assert session is not None and scope_workspace is not None  # noqa: S101 - _usage raised
    identity = None
    if workspace is None:  # the session's checkout may carry a workspace identity
        from dsh_knowledge.workspace_identity import workspace_identity

        identity = workspace_identity(scope_workspace)
    # Stored as add stores it: a directory by its canonical path ("." is no scope).
    scope_workspace = identity or _scope_workspace(scope_workspace)
    try:
        report = extract_candidates(
            _repository(),
            parsed.turns,
            session_id=session,
            workspace=scope_workspace,
            project=resolve_project(project),
        )
    finally:
        _close()
    emit_json(
        {
            "sessionId": session,
            "turns": len(parsed.turns),
            "unreadableLines": parsed.unreadable_lines,
            **report.to_json(),
        }
    )


@app.command(
    epilog="\b\nExample:\n  dsh-knowledge provenance 7831ed9b-ec99-4c51-b65e-082cd6b5b01a --repo ."
)
def provenance(
    item_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Item ids.")],
    repo: Annotated[
        Path | None, typer.Option("--repo", help="Git work tree (default: current directory).")
    ] = None,
) -> None:
    """Capture Git provenance for file evidence that lacks it, once committed and clean."""
    from dsh_knowledge.provenance_update import capture_missing_provenance

    try:
        results = capture_missing_provenance(
            _repository(), item_ids, repo if repo is not None else Path.cwd()
        )
    finally:
        _close()
    emit_json({"results": results})


@app.command(
    name="import",
    epilog="\b\nExamples:\n"
    "  dsh-knowledge --db postgresql://kb.internal/team import --from ~/.dsh/knowledge/"
    "knowledge.sqlite --dry-run\n"
    "  dsh-knowledge --db postgresql://kb.internal/team import --from ~/.dsh/knowledge/"
    "knowledge.sqlite --workspace-map /home/alice/payments=acme/payments",
)
def import_command(
    source: Annotated[
        str,
        typer.Option("--from", help="The store to copy from: an SQLite file or a PostgreSQL URL."),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be copied; write nothing.")
    ] = False,
    workspace_map: Annotated[
        list[str] | None,
        typer.Option(
            "--workspace-map",
            metavar="OLD=NEW",
            help="Re-scope items of workspace OLD (or a folder below it) to NEW; repeatable.",
        ),
    ] = None,
) -> None:
    """Copy every item of another store into this one (ids, evidence, status, supersede
    links, provenance and timestamps kept; ids already here are skipped), in one
    transaction."""
    from dsh_knowledge.transfer import import_store, parse_workspace_map

    mapping = parse_workspace_map(workspace_map or [])
    try:
        emit_json(import_store(_repository(), source, dry_run=dry_run, workspace_map=mapping))
    finally:
        _close()


vectors_app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="The stored sentence vectors hybrid ranking (--ranking hybrid) compares queries with.",
    epilog="\b\nExample:\n  dsh-knowledge vectors status",
)
app.add_typer(vectors_app, name="vectors")


@vectors_app.command(
    "build", epilog="\b\nExample:\n  dsh-knowledge vectors build   # once, after an import"
)
def vectors_build() -> None:
    """Encode every item that has no current vector (progress on stderr; needs the
    [semantic] extra): {"items", "encoded", "current", "model"}."""
    from dsh_knowledge.progress import ProgressBar
    from dsh_knowledge.vectors import build_vectors

    bar = ProgressBar("vectors", "items encoded")
    try:
        emit_json(build_vectors(_repository().store, progress=bar))
    finally:
        bar.close()
        _close()


@vectors_app.command("status", epilog="\b\nExample:\n  dsh-knowledge vectors status")
def vectors_status() -> None:
    """How many candidate and verified items have a current, missing or stale vector:
    {"items", "current", "missing", "stale", "model", "semanticAvailable"}."""
    from dsh_knowledge.vectors import vector_status

    try:
        emit_json(vector_status(_repository().store))
    finally:
        _close()


# --- agent delivery (the launcher routes these before typer loads; listed here for --help) ---


@app.command(
    name="mcp", epilog="\b\nExample:\n  dsh-knowledge mcp --db ~/.dsh/knowledge/knowledge.sqlite"
)
def mcp_command(
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="SQLite file or postgresql:// URL (else $DSH_KNOWLEDGE_DB, else default)."
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Default project (else $DSH_KNOWLEDGE_PROJECT).")
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="Session workspace (default: the cwd).")
    ] = None,
    session_id: Annotated[
        str | None,
        typer.Option("--session-id", help="Session evidence id (else $DSH_KNOWLEDGE_SESSION_ID)."),
    ] = None,
) -> None:
    """Serve the seven knowledge tools over MCP stdio (needs dsh-knowledge[mcp])."""
    from dsh_knowledge.launcher import _mcp

    args = []
    for flag, value in (
        ("--db", db),
        ("--project", project),
        ("--workspace", workspace),
        ("--session-id", session_id),
    ):
        if value is not None:
            args += [flag, value]
    raise typer.Exit(_mcp(args))


@app.command(
    name="hook",
    epilog='\b\nExample:\n  echo \'{"cwd": ".", "prompt": "which port"}\' | '
    "dsh-knowledge hook user-prompt-submit",
)
def hook_command(
    event: Annotated[str, typer.Argument(help="user-prompt-submit or stop")],
    db: Annotated[
        str | None, typer.Option("--db", help="SQLite file or postgresql:// URL.")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project.")] = None,
    auto_extract: Annotated[
        bool, typer.Option("--auto-extract", help="stop: extract candidates (opt-in).")
    ] = False,
) -> None:
    """Agent hook: payload JSON on stdin, hookSpecificOutput on stdout; silent on any error."""
    from dsh_knowledge.hooks import main as hook_main

    args = [event, *(["--auto-extract"] if auto_extract else [])]
    for flag, value in (("--db", db), ("--project", project)):
        if value is not None:
            args += [flag, value]
    raise typer.Exit(hook_main(args))


def _knowledge_integration() -> Integration:
    from dsh_common.agent_setup import Integration
    from dsh_knowledge.store_location import (
        display_location,
        has_password,
        is_default,
        resolve_database,
    )

    # The database the CLI uses right now (--db, else $DSH_KNOWLEDGE_DB, else the default),
    # written as an absolute --db into the server's and the hook's arguments, so the agent
    # reads the store `add` writes whatever directory and environment the host starts in.
    database = _state.get("db") or resolve_database()
    if has_password(database):
        from dsh_knowledge.errors import ValidationError

        # Agent config files are often committed (project scope) or synced: no secrets there.
        raise ValidationError(
            "setup does not write a password into agent configuration files: keep it in "
            "~/.pgpass (or PGPASSFILE) and give the URL without it: "
            f"{display_location(database)}"
        )
    db_args: tuple[str, ...] = () if is_default(database) else ("--db", database)
    return Integration(
        server="dsh-knowledge",
        program="dsh-knowledge",
        mcp_args=("mcp", *db_args),
        hooks=(("UserPromptSubmit", ("hook", "user-prompt-submit", *db_args)),),
        env_names=("DSH_HOME", "DSH_KNOWLEDGE_PROJECT", "DSH_KNOWLEDGE_WORKSPACE"),
    )


add_setup_command(
    app,
    _knowledge_integration,
    summary="Register the MCP server and the prompt hook in Claude Code or Codex (merging).",
    examples=["dsh-knowledge setup claude-code --dry-run"],
)


#: The scope options most commands define; written before the subcommand they still work.
COMMAND_OPTIONS = ("--workspace", "--project")


def _undecodable_url_with_password(arguments: list[str]) -> str | None:
    """The refusal of an undecodable URL holding a password, shown without the password.

    (The general undecodable-argument refusal echoes the value; a password must not be.)
    """
    from dsh_common.cli import is_undecodable
    from dsh_knowledge._storage_errors import printable
    from dsh_knowledge.store_location import has_password, redact_url

    previous = ""
    for argument in arguments:
        name, equals, value = argument.partition("=")
        option, shown = (name, value) if equals and name.startswith("--") else (previous, argument)
        previous = argument
        if is_undecodable(argument) and has_password(shown):
            where = f"{option} " if option.startswith("--") else ""
            return (
                f"{where}'{printable(redact_url(shown))}' is not valid UTF-8; nothing was changed."
            )
    return None


def main() -> None:
    """Console-script entry point."""
    from dsh_knowledge import __version__

    refused = _undecodable_url_with_password(sys.argv[1:])
    if refused is not None:
        from dsh_common.cli import emit_error

        sys.exit(emit_error("invalid-path", refused))
    # Undecodable arguments are refused before anything is opened (issue 8, point 12).
    sys.exit(
        run_app(
            app,
            prog_name="dsh-knowledge",
            path_options=PATH_OPTIONS,
            global_options=("--db",),
            # These pass their own --db on to the hook or the MCP server.
            local_options={"hook": ("--db",), "mcp": ("--db",)},
            # Defined by each command, also accepted before it: --workspace W search q.
            command_options=COMMAND_OPTIONS,
            version=__version__,
        )
    )


if __name__ == "__main__":
    main()

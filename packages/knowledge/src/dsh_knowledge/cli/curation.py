"""Keeping the store true to the code: freshness and health against a Git work tree, the
review queue, automatic extraction from a session and provenance captured late."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dsh_common.cli import emit_json
from dsh_common.cli.typer_commands import command
from dsh_knowledge.cli._app import app, repository_of, usage
from dsh_knowledge.cli_results import filter_workspace, missing, scope_workspace
from dsh_knowledge.cli_spec import PROGRAM


@command(app, PROGRAM["freshness"], epilog="\b\nExample:\n  dsh-knowledge freshness ID --repo .")
def freshness(ctx: typer.Context, item_id: str, repo: Path | None) -> None:
    """Compare an item's Git-backed file evidence with the repository: the freshness report."""
    from dsh_knowledge.freshness import check_freshness

    if repo is None:
        from dsh_knowledge.workspace_identity import checkout_root

        repo = Path(checkout_root())
    emit_json(check_freshness(repository_of(ctx).require(item_id), repo))


@command(
    app,
    PROGRAM["health"],
    epilog="\b\nExamples:\n  dsh-knowledge health ID1 ID2 --repo .\n"
    "  dsh-knowledge health --all --workspace ~/src/app",
)
def health(
    ctx: typer.Context,
    item_ids: list[str] | None,
    repo: Path | None,
    guidance: bool,
    all_items: bool,
    workspace: str | None,
) -> None:
    """Health of 1-16 items of one workspace: {"results": [...]}."""
    from dsh_knowledge.health import check_health
    from dsh_knowledge.workspace_identity import local_checkout

    if all_items:
        from dsh_knowledge.bulk import health_all

        if item_ids:
            missing("Give item ids or --all, not both.")
        scope = scope_workspace(workspace)
        repository = repository_of(ctx)
        report = health_all(
            repository, scope, repo or Path(local_checkout(scope)), include_guidance=guidance
        )
        emit_json(_with_warnings(report, repository.store.deployment_warnings()))
        return
    if not item_ids:
        missing("Give 1 to 16 item ids, or --all.")
    repository = repository_of(ctx)
    items = [repository.require(item_id) for item_id in item_ids]
    warnings = repository.store.deployment_warnings()
    stored = str(items[0]["scope"]["workspace"])
    where = repo if repo is not None else Path(local_checkout(stored)).resolve()
    report = {"results": check_health(items, where, include_guidance=guidance)}
    emit_json(_with_warnings(report, warnings))


def _with_warnings(report: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """``report`` with ``"warnings"`` about the database's set-up, when there are any."""
    return {**report, "warnings": warnings} if warnings else report


@command(
    app,
    PROGRAM["review"],
    epilog="\b\nExample:\n  dsh-knowledge review --workspace . --limit 10 --repo .",
)
def review(
    ctx: typer.Context,
    workspace: str | None,
    project: str | None,
    workspace_wide: bool,
    origin: str | None,
    repo: Path | None,
    limit: int | None,
) -> None:
    """Candidates to review, with evidence (and health with --repo): {"candidates": [...],
    "total", "truncated"}."""
    from dsh_common.cli import list_counts
    from dsh_knowledge.models import validate_limit
    from dsh_knowledge.repository import UNSET
    from dsh_knowledge.review import review_candidates

    if project is not None and workspace_wide:
        usage("--project and --workspace-wide cannot be used together.")
    if limit is not None:
        validate_limit(limit)
    where = filter_workspace(workspace)
    scope = None if workspace_wide else (project if project is not None else UNSET)
    repository = repository_of(ctx)
    # Counted apart: health (with --repo) is checked for the shown candidates only.
    total = len(
        repository.list(workspace=where, project=scope, status="candidate", creation_origin=origin)
    )
    candidates = review_candidates(
        repository,
        workspace=where,
        project=scope,
        creation_origin=origin,
        repo_dir=repo,
        limit=limit,
    )
    emit_json({"candidates": candidates, **list_counts(len(candidates), total)})


@command(
    app,
    PROGRAM["extract"],
    epilog="\b\nExample:\n  dsh-knowledge extract --transcript ~/.claude/projects/p/session.jsonl",
)
def extract(
    ctx: typer.Context,
    transcript: Path,
    session_id: str | None,
    workspace: str | None,
    project: str | None,
) -> None:
    """Admit automatic candidates from a session's direct user messages (opt-in)."""
    from dsh_knowledge.agent_config import resolve_project
    from dsh_knowledge.extraction import extract_candidates
    from dsh_knowledge.transcripts import read_transcript

    parsed = read_transcript(transcript)
    session = session_id or parsed.session_id
    if not session:
        usage("The transcript names no session; pass --session-id.")
    directory = workspace or parsed.cwd
    if not directory:
        usage("The transcript names no working directory; pass --workspace.")
    identity = None
    if workspace is None:  # the session's checkout may carry a workspace identity
        from dsh_knowledge.workspace_identity import workspace_identity

        identity = workspace_identity(directory)
    # Stored as add stores it: a directory by its canonical path ("." is no scope).
    scope = identity or scope_workspace(directory)
    report = extract_candidates(
        repository_of(ctx),
        parsed.turns,
        session_id=session,
        workspace=scope,
        project=resolve_project(project),
    )
    emit_json(
        {
            "sessionId": session,
            "turns": len(parsed.turns),
            "unreadableLines": parsed.unreadable_lines,
            **report.to_json(),
        }
    )


@command(
    app,
    PROGRAM["provenance"],
    epilog="\b\nExample:\n  dsh-knowledge provenance 7831ed9b-ec99-4c51-b65e-082cd6b5b01a --repo .",
)
def provenance(ctx: typer.Context, item_ids: list[str], repo: Path | None) -> None:
    """Capture Git provenance for file evidence that lacks it, once committed and clean."""
    from dsh_knowledge.provenance_update import capture_missing_provenance

    results = capture_missing_provenance(
        repository_of(ctx), item_ids, repo if repo is not None else Path.cwd()
    )
    emit_json({"results": results})

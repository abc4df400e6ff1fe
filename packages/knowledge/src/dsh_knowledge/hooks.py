"""Agent hooks: ``dsh-knowledge hook user-prompt-submit`` and ``hook stop`` (Claude Code, Codex).

The hook reads the host's JSON payload on stdin (``prompt``, ``cwd``, ``session_id`` - both
hosts send these; Claude Code adds ``transcript_path``, ``prompt_id``, ``permission_mode``,
Codex ``model``, ``turn_id``), retrieves knowledge for the prompt in the workspace ``cwd``
(or the checkout's workspace identity, :mod:`dsh_knowledge.workspace_identity`)
and prints ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
"additionalContext": "<dsh-knowledge>…"}}``.

It must never block or slow an agent's prompt: it prints nothing and exits 0 when nothing is
relevant, when the database does not exist (it is never created here; on PostgreSQL: holds
no knowledge schema), or on any error - a PostgreSQL server that is down, unreachable
(``HOOK_CONNECT_TIMEOUT``), read-only or refusing the password included.
``DSH_DEBUG=1`` writes the error to stderr, still with exit 0. This module imports neither
typer nor the MCP SDK: the launcher routes here before either could load. ``DSH_RANKING``
chooses the ranking (``hybrid``: by meaning too; numpy and the model load only then).

``hook stop`` (opt-in: ``--auto-extract`` or ``DSH_KNOWLEDGE_AUTO_EXTRACT=1``) runs automatic
extraction on the turns of ``transcript_path`` not yet looked at (see
:mod:`dsh_knowledge.auto_extract`) and prints nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dsh_common.agent_hooks import MAX_PAYLOAD_BYTES, context_document, run_hook

if TYPE_CHECKING:
    from dsh_knowledge.agent_config import AgentOptions
    from dsh_knowledge.store import KnowledgeStore

__all__ = [
    "HOOK_CONNECT_TIMEOUT",
    "MAX_PAYLOAD_BYTES",
    "main",
    "open_existing_store",
    "user_prompt_submit",
]

#: Seconds a hook waits for an unreachable PostgreSQL server before giving up silently
#: (unless the URL or PGCONNECT_TIMEOUT says otherwise): an agent's prompt waits for us.
HOOK_CONNECT_TIMEOUT = 2


def open_existing_store(db: str | os.PathLike[str]) -> KnowledgeStore | None:
    """The store at ``db`` if it already exists; a hook never creates a database or schema.

    An SQLite file that is not there is None without opening anything; a PostgreSQL URL
    is opened (psycopg is imported only then) and refused if it holds no knowledge schema.
    """
    from dsh_knowledge.store_location import is_postgres_url  # noqa: PLC0415 - lazy: start-up time

    location = os.fspath(db)
    if not is_postgres_url(location) and not os.path.isfile(location):
        return None
    # The interface module, not dsh_knowledge.store: a URL then never loads the SQLite backend.
    from dsh_knowledge._store_base import KnowledgeStore  # noqa: PLC0415 - lazy: start-up time

    return KnowledgeStore(
        location, create=False, connect_timeout=HOOK_CONNECT_TIMEOUT, light_driver=True
    )


def user_prompt_submit(
    payload: Mapping[str, Any], *, db: str | os.PathLike[str], project: str | None
) -> dict[str, Any] | None:
    """The hook output for ``payload``, or None when there is nothing to inject."""
    prompt = payload.get("prompt")
    cwd = payload.get("cwd")
    session = payload.get("session_id")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return None
    store = open_existing_store(db)
    if store is None:
        return None
    from dsh_knowledge.context_block import build_context  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.repository import KnowledgeRepository  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.workspace_identity import workspace_identity  # noqa: PLC0415

    try:
        block, _ = build_context(
            prompt,
            repository=KnowledgeRepository(store),
            # The checkout's shared name when one is configured, else its path (as before).
            workspace=workspace_identity(cwd) or cwd,
            project=project,
            session_id=session if isinstance(session, str) and session.strip() else None,
            ranking=hook_ranking(),
        )
    finally:
        store.close()
    if block is None:
        return None
    return context_document("UserPromptSubmit", block)


def hook_ranking() -> str:
    """``$DSH_RANKING`` for the prompt hook; a value it cannot read ranks lexically.

    A command refuses an unknown ranking name (``invalid-ranking``); the hook has nobody to
    tell and must still give the agent its context, so it falls back to the default. Hybrid
    without the ``[semantic]`` extra also ranks lexically (retrieval's own rule).
    """
    from dsh_common.embedding.mode import InvalidRankingError, resolve_ranking  # noqa: PLC0415

    try:
        ranking = resolve_ranking(None)
    except InvalidRankingError:
        return "lexical"
    if ranking == "hybrid":
        # A hook encodes one query on one thread: OpenBLAS's pool would only start threads
        # that spin for the process's short life (CPU a busy machine does not have).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return ranking


def _options(args: list[str]) -> AgentOptions:
    """The hook's options, as declared for ``hook`` (``dsh_knowledge.cli_spec``) and parsed
    as the MCP server parses its own."""
    from dsh_knowledge.agent_config import parse_agent_options  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.cli_spec import PROGRAM  # noqa: PLC0415

    return parse_agent_options(args, PROGRAM["hook"])


def _on_prompt(payload: Mapping[str, Any], args: list[str]) -> str | None:
    options = _options(args)
    output = user_prompt_submit(payload, db=options.db, project=options.project)
    return None if output is None else str(output["hookSpecificOutput"]["additionalContext"])


def _on_stop(payload: Mapping[str, Any], args: list[str]) -> str | None:
    options = _options(args)
    from dsh_knowledge.auto_extract import (  # noqa: PLC0415 - lazy: start-up time
        auto_extract_enabled,
        extract_after_turn,
    )

    if auto_extract_enabled(options.auto_extract):
        # Stop hooks print nothing: candidates wait silently for review.
        extract_after_turn(payload, db=options.db, project=options.project)
    return None


HANDLERS = {"user-prompt-submit": _on_prompt, "stop": _on_stop}


def main(argv: Sequence[str]) -> int:
    """``hook user-prompt-submit|stop [--db PATH] [--project NAME] [--auto-extract]``; exit 0.

    Run by :func:`dsh_common.agent_hooks.run_hook` (payload, output, silence on failure).
    Unlike the other products' hooks, an unknown or missing event is silent too: a prompt
    hook registered for an event this version does not know must not show an error.
    """
    if not argv or argv[0] not in HANDLERS:
        return 0
    return run_hook(argv[0], HANDLERS, list(argv[1:]))

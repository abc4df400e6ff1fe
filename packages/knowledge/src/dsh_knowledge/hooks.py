"""Agent hooks: ``dsh-knowledge hook user-prompt-submit`` and ``hook stop`` (Claude Code, Codex).

The hook reads the host's JSON payload on stdin (``prompt``, ``cwd``, ``session_id`` - both
hosts send these; Claude Code adds ``transcript_path``, ``prompt_id``, ``permission_mode``,
Codex ``model``, ``turn_id``), retrieves knowledge for the prompt in the workspace ``cwd``
and prints ``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
"additionalContext": "<dsh-knowledge>…"}}``.

It must never block or slow an agent's prompt: it prints nothing and exits 0 when nothing is
relevant, when the database does not exist (it is never created here), or on any error.
``DSH_DEBUG=1`` writes the error to stderr, still with exit 0. This module imports neither
typer nor the MCP SDK: the launcher routes here before either could load.

``hook stop`` (opt-in: ``--auto-extract`` or ``DSH_KNOWLEDGE_AUTO_EXTRACT=1``) runs automatic
extraction on the turns of ``transcript_path`` not yet looked at (see
:mod:`dsh_knowledge.auto_extract`) and prints nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

__all__ = ["MAX_PAYLOAD_BYTES", "main", "user_prompt_submit"]

MAX_PAYLOAD_BYTES = 1024 * 1024
_EVENTS = {"user-prompt-submit": "UserPromptSubmit", "stop": "Stop"}


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
    if not os.path.isfile(db):
        return None
    from dsh_knowledge.context_block import build_context  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.repository import KnowledgeRepository  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.store import KnowledgeStore  # noqa: PLC0415 - lazy: start-up time

    store = KnowledgeStore(db)
    try:
        block, _ = build_context(
            prompt,
            repository=KnowledgeRepository(store),
            workspace=cwd,
            project=project,
            session_id=session if isinstance(session, str) and session.strip() else None,
        )
    finally:
        store.close()
    if block is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": block}}


def _read_payload(stdin: TextIO) -> Any:
    raw = stdin.buffer.read(MAX_PAYLOAD_BYTES + 1) if hasattr(stdin, "buffer") else b""
    if len(raw) > MAX_PAYLOAD_BYTES:
        return None
    return json.loads(raw.decode("utf-8"))


def main(argv: Sequence[str]) -> int:
    """``hook user-prompt-submit|stop [--db PATH] [--project NAME] [--auto-extract]``; exit 0."""
    from dsh_common.agent_hooks import hook_deadline  # noqa: PLC0415 - standard library only

    try:
        # The budget covers the work, not the write: a document is never cut mid-line.
        with hook_deadline():
            output = _run(argv)
        if output is not None:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except Exception:  # an agent's prompt must never fail because of us
        if os.environ.get("DSH_DEBUG"):
            import traceback  # noqa: PLC0415 - only when debugging: it is slow to import

            traceback.print_exc()
    return 0


def _run(argv: Sequence[str]) -> dict[str, Any] | None:
    """The hook's work: the document to print, or None."""
    if not argv or argv[0] not in _EVENTS:
        return None
    from dsh_knowledge.agent_config import parse_agent_options  # noqa: PLC0415 - lazy: start-up time

    rest = [arg for arg in argv[1:] if arg != "--auto-extract"]
    options = parse_agent_options(rest, allowed=("--db", "--project"))
    payload = _read_payload(sys.stdin)
    if not isinstance(payload, dict):
        return None
    if argv[0] == "stop":
        from dsh_knowledge.auto_extract import (  # noqa: PLC0415 - lazy: start-up time
            auto_extract_enabled,
            extract_after_turn,
        )

        if auto_extract_enabled("--auto-extract" in argv[1:]):
            # Stop hooks print nothing: candidates wait silently for review.
            extract_after_turn(payload, db=options.db, project=options.project)
        return None
    return user_prompt_submit(payload, db=options.db, project=options.project)

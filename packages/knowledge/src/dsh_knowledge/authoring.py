"""Writing what a person or an agent says: the one door for adding and changing an item.

``dsh-knowledge add``, the agent tool ``knowledge_add`` and any other front end call
:func:`add_item`; ``dsh-knowledge update`` calls :func:`update_item`. Each front end parses
its own arguments (command-line options, a tool's JSON) and chooses its defaults for scope
and provenance with the helpers here; everything after that happens in one place, in this
order:

1. the privacy filter over the content and every evidence source and locator, before git
   reads a path or anything is stored;
2. the evidence: each record's ``timestamp`` defaults to now, and an agent session adds
   its own ``session`` record;
3. the store is opened (a front end may pass a function that opens it, so that a refused
   argument never waits for a database);
4. Git provenance for file evidence, opportunistic: a file that is dirty, untracked or
   outside ``HEAD`` is stored without it and named in the ``provenanceCapture`` report;
5. the repository's own validation and write (and, where the store keeps vectors for hybrid
   ranking, the new item's vector, in the same transaction).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.models import Evidence, Item, now_timestamp
from dsh_knowledge.privacy import ensure_no_secrets
from dsh_knowledge.repository import KnowledgeRepository

__all__ = [
    "MAX_SESSION_ID_CHARS",
    "AddedItem",
    "add_item",
    "capture_skip_reason",
    "default_provenance_repo",
    "evidence_from_json",
    "update_item",
]

#: A longer session id is not recorded as session evidence (the add still succeeds).
MAX_SESSION_ID_CHARS = 128

Opener = KnowledgeRepository | Callable[[], KnowledgeRepository]


class AddedItem(NamedTuple):
    """What :func:`add_item` stored, and the ``provenanceCapture`` report (None when no file
    evidence was attempted): ``{"attempted", "captured", "skipped", "warnings":
    [{"evidenceIndex", "reason"}]}``."""

    item: Item
    provenance_capture: dict[str, Any] | None


def add_item(
    repository: Opener,
    *,
    type: str,
    content: str,
    workspace: str,
    project: str | None = None,
    evidence: Iterable[Mapping[str, Any]] = (),
    repo: str | os.PathLike[str] | None = None,
    skip_capture: str | None = None,
    session_id: str | None = None,
) -> AddedItem:
    """Add one item (status ``candidate``, origin ``explicit``) in ``workspace``/``project``.

    ``repository`` is the repository, or a function that opens it (called after the privacy
    filter). ``repo`` is the Git work tree file evidence is read from for ``gitProvenance``
    (None: none is captured); ``skip_capture`` instead reports every file evidence skipped
    for that reason. ``session_id`` adds ``{"type": "session", "source": session_id}`` to
    the evidence unless it is there already (an id that is blank or longer than
    :data:`MAX_SESSION_ID_CHARS` is left out). The evidence given is not changed.
    """
    records = [dict(record) for record in evidence]
    ensure_no_secrets(content, records)
    if (
        session_id
        and session_id.strip()
        and len(session_id) <= MAX_SESSION_ID_CHARS
        and not any(r["type"] == "session" and r["source"] == session_id for r in records)
    ):
        records.append({"type": "session", "source": session_id})
    stamp = now_timestamp()
    for record in records:
        record.setdefault("timestamp", stamp)
    opened = repository() if callable(repository) else repository
    report = None
    if skip_capture is not None:
        report = _skipped(records, skip_capture)
    elif repo is not None:
        from dsh_knowledge.provenance import attach_git_provenance  # noqa: PLC0415 - git code

        records, report = attach_git_provenance(records, repo)
    item = opened.create(
        type=type,
        content=content,
        scope={"workspace": workspace, "project": project},
        evidence=records,
    )
    return AddedItem(item, report)


def _skipped(records: Sequence[Evidence], reason: str) -> dict[str, Any] | None:
    """The report of a capture not attempted: every file evidence skipped for ``reason``."""
    files = [index for index, record in enumerate(records) if record.get("type") == "file"]
    if not files:
        return None
    warnings = [{"evidenceIndex": index, "reason": reason} for index in files]
    return {"attempted": len(files), "captured": 0, "skipped": len(files), "warnings": warnings}


def update_item(
    repository: Opener,
    item_id: str,
    *,
    type: str | None = None,
    content: str | None = None,
    evidence: Iterable[Mapping[str, Any]] | None = None,
) -> Item:
    """Change an item's type, content or evidence (all of it, when given), through the
    privacy filter; each new evidence record's ``timestamp`` defaults to now."""
    records = None if evidence is None else [dict(record) for record in evidence]
    ensure_no_secrets(content, records or ())
    stamp = now_timestamp()
    for record in records or ():
        record.setdefault("timestamp", stamp)
    opened = repository() if callable(repository) else repository
    return opened.update(item_id, type=type, content=content, evidence=records)


# --- the front ends' defaults and spellings ---------------------------------------------------


def default_provenance_repo(workspace: str, *, identity: bool) -> str | None:
    """The work tree an add reads file evidence from when none is named: the workspace's
    local checkout, when it is the top level of a Git work tree (else None: no capture).

    ``identity``: ``workspace`` is the checkout's workspace identity (a name, not a path;
    see :mod:`dsh_knowledge.workspace_identity`), so the files are in the current checkout.
    """
    from dsh_common.locate import git_top_level  # noqa: PLC0415 - lazy: start-up time
    from dsh_knowledge.workspace_identity import local_checkout  # noqa: PLC0415

    local = local_checkout(workspace) if identity else workspace
    return local if git_top_level(local) == Path(local) else None


def capture_skip_reason(session_workspace: str | None, workspace: str) -> str | None:
    """Why an agent's add captures no provenance from its session's checkout, or None.

    The session's files describe the session's workspace only: ``missing_session_workspace``
    when the session has none, ``workspace_mismatch`` when the add names another one.
    """
    if session_workspace is None:
        return "missing_session_workspace"
    if workspace != session_workspace:
        return "workspace_mismatch"
    return None


def evidence_from_json(values: Iterable[str], *, what: str = "--evidence") -> list[Evidence]:
    """Evidence given as text, one JSON object per value (the command line's ``--evidence``)."""
    from dsh_common.jsonio import loads  # noqa: PLC0415 - lazy: start-up time

    records = []
    for raw in values:
        record = loads(raw, what=what)
        if not isinstance(record, dict):
            raise ValidationError(f"{what} must be one JSON object.")
        records.append(record)
    return records

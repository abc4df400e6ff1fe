"""Automatic candidate extraction (opt-in): direct user messages in, candidates out.

Per turn: at most 8 user messages of at most 1,200 characters each and 4,000 in all are
looked at (the rest are dropped), secret-bearing messages are skipped before anything else
happens to them, and at most 2 candidates are admitted. Every candidate is stored with
``creationOrigin: "automatic"``, status ``candidate`` and one session evidence record
``{"type": "session", "source": <session id>, "locator": "seq=<n>", "timestamp"}``; no
transcript text goes into evidence. A candidate that is a conservative near-duplicate
(:func:`~dsh_knowledge.scoring.are_conservative_duplicates`) of an item already in the same
scope (the 200 most recent of that type) or of another candidate of the same run is
suppressed. Existing knowledge is never modified, and automatic candidates stay out of
retrieval until someone verifies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_knowledge.classifier import classify_message
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.models import is_iso_timestamp, now_timestamp
from dsh_knowledge.privacy import contains_sensitive_content
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import are_conservative_duplicates

__all__ = [
    "MAX_CANDIDATES_PER_TURN",
    "MAX_DUPLICATE_CHECK_ITEMS",
    "MAX_EXTRACTION_EVENTS",
    "MAX_EXTRACTION_EVENT_CHARS",
    "MAX_EXTRACTION_TOTAL_CHARS",
    "ExtractionReport",
    "UserMessage",
    "extract_candidates",
]

MAX_EXTRACTION_EVENTS = 8
MAX_EXTRACTION_EVENT_CHARS = 1200
MAX_EXTRACTION_TOTAL_CHARS = 4000
MAX_CANDIDATES_PER_TURN = 2
MAX_DUPLICATE_CHECK_ITEMS = 200
MAX_SESSION_ID_CHARS = 128


@dataclass(frozen=True)
class UserMessage:
    """One direct, human-authored user message of a turn (never assistant or tool text)."""

    seq: int
    text: str
    timestamp: str | None = None


@dataclass
class ExtractionReport:
    admitted: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(
        default_factory=lambda: {
            "secret": 0,
            "unclassified": 0,
            "duplicate": 0,
            "overflow": 0,
            "turnLimit": 0,
        }
    )

    def to_json(self) -> dict[str, Any]:
        return {"admitted": self.admitted, "skipped": dict(self.skipped)}


def _bounded(turn: Sequence[UserMessage], report: ExtractionReport) -> list[UserMessage]:
    kept: list[UserMessage] = []
    total = 0
    for message in turn:
        # Secrets are dropped before they are buffered, counted or classified.
        if contains_sensitive_content(message.text):
            report.skipped["secret"] += 1
            continue
        text = message.text[:MAX_EXTRACTION_EVENT_CHARS]
        if len(kept) == MAX_EXTRACTION_EVENTS or total + len(text) > MAX_EXTRACTION_TOTAL_CHARS:
            report.skipped["overflow"] += 1
            continue
        total += len(text)
        kept.append(UserMessage(message.seq, text, message.timestamp))
    return kept


def extract_candidates(
    repository: KnowledgeRepository,
    turns: Iterable[Sequence[UserMessage]],
    *,
    session_id: str,
    workspace: str,
    project: str | None = None,
) -> ExtractionReport:
    """Classify and admit candidates turn by turn; returns what was stored and what was not."""
    report = ExtractionReport()
    if not session_id.strip() or len(session_id) > MAX_SESSION_ID_CHARS:
        raise ValidationError("A session id of 1-128 characters is required for extraction.")
    scope: dict[str, Any] = {"workspace": workspace}
    if project is not None:
        scope["project"] = project
    existing: dict[str, list[dict[str, Any]]] = {}
    for turn in turns:
        admitted_this_turn = 0
        for message in _bounded(turn, report):
            found = classify_message(message.text)
            if found is None:
                report.skipped["unclassified"] += 1
                continue
            kind, content = found
            if kind not in existing:
                existing[kind] = repository.list(
                    workspace=workspace,
                    project=project,
                    type=kind,
                    limit=MAX_DUPLICATE_CHECK_ITEMS,
                )
            probe = {"type": kind, "content": content, "scope": scope}
            if any(are_conservative_duplicates(probe, item) for item in existing[kind]):
                report.skipped["duplicate"] += 1
                continue
            if admitted_this_turn == MAX_CANDIDATES_PER_TURN:
                report.skipped["turnLimit"] += 1
                continue
            stamp = message.timestamp if is_iso_timestamp(message.timestamp) else now_timestamp()
            item = repository.create(
                type=kind,
                content=content,
                scope=scope,
                evidence=[
                    {
                        "type": "session",
                        "source": session_id,
                        "locator": f"seq={message.seq}",
                        "timestamp": stamp,
                    }
                ],
                creation_origin="automatic",
            )
            existing[kind].append(item)
            admitted_this_turn += 1
            report.admitted.append(item)
    return report

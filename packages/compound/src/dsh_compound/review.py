"""Inspect one record in full, and check the whole bounded corpus for drift."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

from dsh_compound.corpus import read_record
from dsh_compound.corpus_index import read_corpus
from dsh_compound.draft import validate_id
from dsh_compound.evidence import (
    STATUS_PRECEDENCE,
    UNCHANGED,
    EvidenceRun,
    evidence_report,
    evidence_warning,
)
from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import self_reported_evidence, summary_of
from dsh_compound.scanning import record_warnings
from dsh_compound.workspace import select_workspace

CONSISTENT = "consistent"
MODIFIED = "modified"


def inspect(workspace: str | os.PathLike[str], id: str) -> dict[str, Any]:
    """The complete record ``id``: metadata, body, fresh evidence and content status."""
    validate_id(id)
    selected = select_workspace(workspace)
    stored = read_record(selected, id)
    metadata = stored.metadata
    run = EvidenceRun()
    report = evidence_report(selected, metadata["files"], run)
    warnings = record_warnings(stored)
    moved = evidence_warning(id, report)
    if moved is not None:
        warnings.append(moved)
    unverified = run.warning()
    if unverified is not None:
        warnings.append(unverified)
    return {
        "id": id,
        "path": str(stored.path),
        "digest": stored.digest,
        "metadata": metadata,
        "body": stored.body,
        "summary": summary_of(metadata),
        "evidence": self_reported_evidence(metadata, bounded=False),
        **report,
        "contentStatus": stored.content_status,
        "warnings": warnings,
    }


def touches(id: str, files: list[dict[str, Any]], paths: Collection[str]) -> bool:
    """Whether the record ``id``, or one of its source ``files``, is among ``paths``."""
    record = f"{CORPUS_DIRECTORY}/{id}.md"
    return record in paths or any(entry.get("path") in paths for entry in files)


def check(
    workspace: str | os.PathLike[str],
    run: EvidenceRun | None = None,
    *,
    only_paths: Collection[str] | None = None,
) -> dict[str, Any]:
    """Evidence and content status of every record in the bounded corpus.

    Records that need attention are listed in full under ``needsReview``; records whose
    evidence is ``unchanged`` and content ``consistent`` are only counted and named under
    ``unchangedConsistent``. When the run's hashing budget left source files unverified,
    the result also has ``unverified: {count, paths, budgetBytes}`` and says so in
    ``warnings``; a corpus within the budget gets exactly the contract's fields
    (docs/compatibility/compound.md).

    ``only_paths`` (workspace-relative paths, as a commit or pull request touched them)
    keeps to the records that cite one of them or are one of them; the others are not
    hashed, and ``selection`` says how many were kept.
    """
    selected = select_workspace(workspace)
    scan = read_corpus(selected).scan
    cache = run if run is not None else EvidenceRun()
    needs_review: list[dict[str, Any]] = []
    clean_ids: list[str] = []
    evidence_counts = dict.fromkeys(STATUS_PRECEDENCE, 0)
    content_counts = {CONSISTENT: 0, MODIFIED: 0}
    kept = 0
    for stored in scan.records:
        metadata = stored.metadata
        if only_paths is not None and not touches(stored.id, metadata["files"], only_paths):
            continue
        kept += 1
        report = evidence_report(selected, metadata["files"], cache)
        status = stored.content_status
        evidence_counts[report["evidenceStatus"]] += 1
        content_counts[status] += 1
        warnings = record_warnings(stored)
        # A record with fields nobody captured (a forged attestation, say) needs review
        # even when its sources and body are intact.
        if report["evidenceStatus"] == UNCHANGED and status == CONSISTENT and not warnings:
            clean_ids.append(stored.id)
            continue
        moved = evidence_warning(stored.id, report)
        if moved is not None:
            warnings.append(moved)
        needs_review.append(
            {
                "id": stored.id,
                "title": metadata["title"],
                "path": str(stored.path),
                "digest": stored.digest,
                **report,
                "contentStatus": status,
                "warnings": warnings,
            }
        )
    unverified = cache.warning()
    if unverified is not None:
        scan.warnings.add(unverified)
    result: dict[str, Any] = {
        "needsReview": needs_review,
        "unchangedConsistent": {"count": len(clean_ids), "ids": clean_ids},
        "counts": {"evidenceStatus": evidence_counts, "contentStatus": content_counts},
        "warnings": scan.warnings.as_list(),
        "scanned": scan.scanned,
        "truncated": scan.truncated,
    }
    summary = cache.summary()
    if summary is not None:
        result["unverified"] = summary
    if only_paths is not None:
        result["selection"] = {"paths": len(only_paths), "records": kept}
    return result

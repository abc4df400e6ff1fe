"""Commands over many items: ``add --jsonl`` in one transaction, ``health --all`` in
batches, and the warning a retrieve gives when its scope is empty but a parent's is not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, Any

from dsh_common.jsonio import loads
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.health import MAX_HEALTH_BATCH_ITEMS, check_health
from dsh_knowledge.models import now_timestamp
from dsh_knowledge.privacy import ensure_no_secrets
from dsh_knowledge.repository import KnowledgeRepository

#: A JSONL import larger than this is refused before anything is parsed.
MAX_JSONL_BYTES = 64 * 1024 * 1024
#: At most this many items per ``add --jsonl``.
MAX_JSONL_ITEMS = 100_000
_LINE_FIELDS = {"type", "content", "project", "evidence"}


def _read(source: Path | str, stdin: IO[bytes] | None) -> bytes:
    if str(source) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read(MAX_JSONL_BYTES + 1)
    else:
        try:
            with open(source, "rb") as handle:
                data = handle.read(MAX_JSONL_BYTES + 1)
        except OSError as error:
            raise ValidationError(f"--jsonl {source}: {error.strerror}") from error
    if len(data) > MAX_JSONL_BYTES:
        raise ValidationError(f"--jsonl input is larger than {MAX_JSONL_BYTES} bytes.")
    return data


def parse_jsonl(data: bytes, *, workspace: str, project: str | None) -> list[dict[str, Any]]:
    """The create specs of a JSONL import; every line is checked, errors name the line."""
    specs: list[dict[str, Any]] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"--jsonl line {number}"
        record = loads(raw, what=where)
        if not isinstance(record, dict):
            raise ValidationError(f"{where} must be one JSON object.")
        unknown = sorted(set(record) - _LINE_FIELDS)
        if unknown:
            raise ValidationError(f"{where} has unknown fields: {', '.join(unknown)}.")
        evidence = record.get("evidence", [])
        if not isinstance(evidence, list) or not all(isinstance(e, dict) for e in evidence):
            raise ValidationError(f"{where}: evidence must be a list of objects.")
        for entry in evidence:
            entry.setdefault("timestamp", now_timestamp())
        specs.append(
            {
                "type": record.get("type"),
                "content": record.get("content"),
                "scope": {"workspace": workspace, "project": record.get("project", project)},
                "evidence": evidence,
            }
        )
        if len(specs) > MAX_JSONL_ITEMS:
            raise ValidationError(f"--jsonl holds more than {MAX_JSONL_ITEMS} items.")
    if not specs:
        raise ValidationError("--jsonl holds no items.")
    return specs


def add_jsonl(
    repository: KnowledgeRepository,
    source: Path | str,
    *,
    workspace: str,
    project: str | None,
    stdin: IO[bytes] | None = None,
) -> dict[str, Any]:
    """Create every line's item in one transaction (one bad line writes nothing).

    Every line passes the privacy filter first: a secret anywhere refuses the import.
    """
    specs = parse_jsonl(_read(source, stdin), workspace=workspace, project=project)
    for spec in specs:  # one line with a secret refuses the whole import, as a bad line does
        ensure_no_secrets(spec["content"], spec["evidence"])
    ids = repository.create_many(specs)
    return {"created": len(ids), "ids": ids}


def health_all(
    repository: KnowledgeRepository,
    workspace: str,
    repo: str | os.PathLike[str],
    *,
    include_guidance: bool = False,
    progress: IO[str] | None = None,
) -> dict[str, Any]:
    """Health of every candidate and verified item of ``workspace``, 16 at a time.

    One line per batch goes to ``progress`` (stderr): a long check shows it is moving.
    """
    out = progress if progress is not None else sys.stderr
    items = [
        item
        for status in ("verified", "candidate")
        for item in repository.list(workspace=workspace, status=status)
    ]
    results: list[dict[str, Any]] = []
    for start in range(0, len(items), MAX_HEALTH_BATCH_ITEMS):
        batch = items[start : start + MAX_HEALTH_BATCH_ITEMS]
        results.extend(check_health(batch, repo, include_guidance=include_guidance))
        out.write(f"health: {start + len(batch)}/{len(items)} items checked\n")
        out.flush()
    counts: dict[str, int] = {}
    for result in results:
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    return {"workspace": workspace, "total": len(items), "counts": counts, "results": results}


def scope_higher_up_warning(repository: KnowledgeRepository, workspace: str) -> str | None:
    """A warning when ``workspace`` has no items but one of its parent directories has."""
    if not os.path.isabs(workspace) or repository.list(workspace=workspace, limit=1):
        return None
    for parent in Path(workspace).parents:
        if repository.list(workspace=str(parent), limit=1):
            return (
                f"no knowledge is stored for the workspace {workspace}, but {parent} has "
                f"some: pass --workspace {parent}"
            )
    return None

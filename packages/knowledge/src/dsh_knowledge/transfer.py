"""``dsh-knowledge --db TARGET import --from SOURCE``: copy every item of one store into another.

How a team moves its local SQLite stores onto the shared PostgreSQL one (or the other way,
or between any two stores). Every item is copied as it is - id, type, content, scope,
status, supersede link, creation origin, timestamps - with its evidence (order, Git
provenance) unchanged. An id the target already has is skipped and counted, never
overwritten. Everything is written in one transaction of the target: all of it lands, or
none. A replacement is written before the item it supersedes, so the link holds at every
step. Imports into one store run one at a time, so concurrent ones of the same items copy
each item once and count it skipped everywhere else. ``--dry-run`` reports the same counts
and writes nothing.

Items made before a team chose a shared workspace name are scoped to a member's checkout
path (``/home/alice/payments``), which nobody else's checkout resolves to: ``--workspace-map
OLD=NEW`` (repeatable) re-scopes them as they are copied. A workspace equal to ``OLD``, or
below it (``OLD/sub``, as an MCP server started in a subfolder records), becomes ``NEW``; the
longest matching ``OLD`` wins. The report lists every workspace of the source and where its
items land, so ``--dry-run`` shows what is left unmapped.

The source is opened as every command opens a store (an SQLite file of an older schema is
upgraded first); it is never created: a source that does not exist is an error. The agent
bookkeeping tables (which ids a session was shown, how far extraction read) are not
copied: they describe one machine's sessions.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_knowledge._storage_errors import translate_storage_errors
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.store_location import display_location, is_postgres_url

__all__ = ["import_store", "parse_workspace_map"]

_KNOWLEDGE_COLUMNS = (
    "id, type, content, workspace, project, status, replacement_id, created_at, updated_at, "
    "creation_origin"
)
_EVIDENCE_COLUMNS = "knowledge_id, ordinal, type, source, locator, timestamp, git_commit, git_path"
_CHUNK = 500
_WORKSPACE = 3  # the workspace's column in a knowledge row
MAX_WORKSPACE_CHARS = 512


def parse_workspace_map(pairs: Sequence[str]) -> dict[str, str]:
    """``OLD=NEW`` strings (split at the last ``=``) as a mapping; refused when malformed."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        old, equals, new = pair.rpartition("=")
        if not equals or not old.strip() or not new.strip():
            raise ValidationError(
                f"--workspace-map takes OLD=NEW, two non-empty workspaces: {pair!r}."
            )
        if len(new) > MAX_WORKSPACE_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in new):
            raise ValidationError(
                f"--workspace-map: the new workspace must be at most {MAX_WORKSPACE_CHARS} "
                f"printable characters: {new[:80]!r}."
            )
        old = old.rstrip("/") or "/"
        if mapping.get(old, new) != new:
            raise ValidationError(f"--workspace-map maps {old!r} twice.")
        mapping[old] = new
    return mapping


def _mapped(workspace: str, mapping: Mapping[str, str]) -> str:
    """``workspace`` under ``mapping``: the longest ``OLD`` that is it or a folder above it."""
    best = None
    for old in mapping:
        below = workspace.startswith(old if old.endswith("/") else old + "/")
        if (workspace == old or below) and (best is None or len(old) > len(best)):
            best = old
    return workspace if best is None else mapping[best]


def _remap(
    items: list[tuple[Any, ...]], mapping: Mapping[str, str]
) -> tuple[list[tuple[Any, ...]], list[dict[str, Any]]]:
    """The rows re-scoped by ``mapping``, and per source workspace where its items land."""
    landing: dict[str, str] = {}
    counts: Counter[str] = Counter()
    rows = []
    for row in items:
        source = row[_WORKSPACE]
        target = landing.setdefault(source, _mapped(source, mapping))
        counts[source] += 1
        rows.append(
            row if target == source else (*row[:_WORKSPACE], target, *row[_WORKSPACE + 1 :])
        )
    report = [
        {"source": source, "target": landing[source], "items": counts[source]}
        for source in sorted(counts)
    ]
    return rows, report


def _read_source(store: KnowledgeStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with store.read() as db:
        items = [
            tuple(row)
            for row in db.execute(
                f"SELECT {_KNOWLEDGE_COLUMNS} FROM knowledge ORDER BY created_at, id"  # noqa: S608 - fixed columns
            )
        ]
        evidence = [
            tuple(row)
            for row in db.execute(
                f"SELECT {_EVIDENCE_COLUMNS} FROM knowledge_evidence "  # noqa: S608 - fixed columns
                "ORDER BY knowledge_id, ordinal"
            )
        ]
    return items, evidence


def _present(db: Any, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        found.update(
            row[0]
            for row in db.execute(f"SELECT id FROM knowledge WHERE id IN ({marks})", chunk)  # noqa: S608 - placeholders only
        )
    return found


def _replacements_first(rows: list[tuple[Any, ...]], present: set[str]) -> list[tuple[Any, ...]]:
    """``rows`` ordered so that each row's replacement (column 6) is written before it."""
    by_id = {row[0]: row for row in rows}
    ordered: list[tuple[Any, ...]] = []
    placed: set[str] = set()
    for row in rows:
        chain: list[tuple[Any, ...]] = []
        current: tuple[Any, ...] | None = row
        while current is not None and current[0] not in placed:
            if any(link[0] == current[0] for link in chain):
                raise ValidationError(f"The source's supersede links form a loop at {row[0]}.")
            chain.append(current)
            target = current[6]
            if target is None or target in placed or target in present:
                current = None
            elif target in by_id:
                current = by_id[target]
            else:
                raise ValidationError(
                    f"Item {current[0]} is superseded by {target}, which neither store holds."
                )
        for link in reversed(chain):
            placed.add(link[0])
            ordered.append(link)
    return ordered


def _target_path(target: KnowledgeRepository, *_: object) -> str:
    return target.store.path


@translate_storage_errors(_target_path)
def import_store(
    target: KnowledgeRepository,
    source_location: str | os.PathLike[str],
    *,
    dry_run: bool = False,
    workspace_map: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Copy every item of the store at ``source_location`` into ``target``; the report.

    ``workspace_map`` (``{OLD: NEW}``, see :func:`parse_workspace_map`) re-scopes the items
    of workspace ``OLD`` (or a folder below it) to ``NEW``.
    """
    location = os.fspath(source_location)
    if not location.strip():
        raise ValidationError("--from must name a knowledge store (a path or a URL).")
    if not is_postgres_url(location) and not os.path.isfile(location):
        raise ValidationError(f"The source store {location} does not exist.")
    source = KnowledgeStore(location, create=False)
    try:
        items, evidence = _read_source(source)
        shown = source.path
    finally:
        source.close()
    items, workspaces = _remap(items, workspace_map or {})
    ids = [row[0] for row in items]
    store = target.store
    imported: list[tuple[Any, ...]] = []

    def plan(db: Any) -> list[tuple[Any, ...]]:
        present = _present(db, ids)
        return _replacements_first([row for row in items if row[0] not in present], present)

    if dry_run:
        with store.read() as db:
            imported = plan(db)
    else:

        def work() -> None:
            # Two imports of the same items at once (members moving onto the shared store
            # together) would both find an id absent and both insert it: the second waits.
            store.lock_writers("dsh-knowledge import")
            imported[:] = plan(store.connection)
            new = {row[0] for row in imported}
            db = store.connection
            db.executemany(
                f"INSERT INTO knowledge ({_KNOWLEDGE_COLUMNS}) "  # noqa: S608 - fixed columns
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                imported,
            )
            db.executemany(
                f"INSERT INTO knowledge_evidence ({_EVIDENCE_COLUMNS}) "  # noqa: S608 - fixed columns
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [row for row in evidence if row[0] in new],
            )

        store.write(work)
        if imported:
            store.settle_after_bulk_write()
    new_ids = {row[0] for row in imported}
    return {
        "source": display_location(shown),
        "target": display_location(store.path),
        "items": len(items),
        "imported": len(imported),
        "skipped": len(items) - len(imported),
        "evidence": sum(1 for row in evidence if row[0] in new_ids),
        "workspaces": workspaces,
        "dryRun": dry_run,
    }

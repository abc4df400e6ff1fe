"""``dsh-knowledge --db TARGET import --from SOURCE``: copy every item of one store into another.

How a team moves its local SQLite stores onto the shared PostgreSQL one (or the other way,
or between any two stores). Every item is copied as it is - id, type, content, scope,
status, supersede link, creation origin, timestamps - with its evidence (order, Git
provenance) unchanged. An id the target already has is skipped and counted, never
overwritten. Everything is written in one transaction of the target: all of it lands, or
none. A replacement is written before the item it supersedes, so the link holds at every
step. Imports into one store run one at a time, so concurrent ones of the same items copy
each item once and count it skipped everywhere else. ``--dry-run`` reports the same counts and writes nothing.

The source is opened as every command opens a store (an SQLite file of an older schema is
upgraded first); it is never created: a source that does not exist is an error. The agent
bookkeeping tables (which ids a session was shown, how far extraction read) are not
copied: they describe one machine's sessions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dsh_knowledge._storage_errors import translate_storage_errors
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.store_location import display_location, is_postgres_url

__all__ = ["import_store"]

_KNOWLEDGE_COLUMNS = (
    "id, type, content, workspace, project, status, replacement_id, created_at, updated_at, "
    "creation_origin"
)
_EVIDENCE_COLUMNS = "knowledge_id, ordinal, type, source, locator, timestamp, git_commit, git_path"
_CHUNK = 500


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
    target: KnowledgeRepository, source_location: str | os.PathLike[str], *, dry_run: bool = False
) -> dict[str, Any]:
    """Copy every item of the store at ``source_location`` into ``target``; the report."""
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
    new_ids = {row[0] for row in imported}
    return {
        "source": display_location(shown),
        "target": display_location(store.path),
        "items": len(items),
        "imported": len(imported),
        "skipped": len(items) - len(imported),
        "evidence": sum(1 for row in evidence if row[0] in new_ids),
        "dryRun": dry_run,
    }

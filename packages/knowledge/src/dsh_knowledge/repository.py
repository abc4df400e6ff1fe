"""KnowledgeRepository: create, read, list, literal search, lifecycle updates.

Lifecycle (the earlier tool's transition table): a status may stay as it is;
``candidate -> verified | archived``; ``verified -> archived``; ``superseded -> archived``;
``verified -> superseded`` only through :meth:`KnowledgeRepository.supersede`, which also
needs a verified replacement in the same workspace and project. ``updatedAt`` strictly
increases on every change, even two changes within one millisecond.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from dsh_knowledge._storage_errors import translate_storage_errors
from dsh_knowledge._store_base import KnowledgeStore, escape_like
from dsh_knowledge.errors import (
    InvalidSupersedeError,
    InvalidTransitionError,
    NotFoundError,
    ScopeChangeError,
    ValidationError,
)
from dsh_knowledge.models import (
    ITEM_COLUMNS,
    Evidence,
    Item,
    evidence_from_row,
    item_from_row,
    next_timestamp,
    normalize_evidence,
    normalize_scope,
    now_timestamp,
    validate_content,
    validate_limit,
    validate_origin,
    validate_project,
    validate_status,
    validate_type,
)
from dsh_knowledge.vectors import encoded_for_write

__all__ = ["UNSET", "KnowledgeRepository", "escape_like"]


class _Unset:
    """Marks "no project filter" apart from ``project=None`` (workspace-wide items only)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()

_ORDER = " ORDER BY updated_at DESC, created_at DESC, id ASC"

_ALLOWED_TRANSITIONS = {
    ("candidate", "verified"),
    ("candidate", "archived"),
    ("verified", "archived"),
    ("superseded", "archived"),
}


def _transition_error(current: str, target: str) -> InvalidTransitionError:
    hint = " Use supersede(id, replacementId) instead." if target == "superseded" else ""
    return InvalidTransitionError(
        f"Invalid knowledge status transition: {current} -> {target}.{hint}"
    )


def _path_of(repository: KnowledgeRepository, *_: object) -> str:
    return repository.store.path


# Every public call: a damaged page, a read-only file or a full disk is a documented error.
_storage = translate_storage_errors(_path_of)

# Largest LIMIT either backend can bind: a larger one means "all of them" anyway.
_MAX_SQL_LIMIT = 2**63 - 1


class KnowledgeRepository:
    """Persists and queries evidence-backed knowledge items in a :class:`KnowledgeStore`."""

    def __init__(self, store: KnowledgeStore) -> None:
        self.store = store

    @property
    def _db(self) -> Any:
        return self.store.connection

    # --- reads ----------------------------------------------------------------------------

    @_storage
    def get(self, item_id: str) -> Item | None:
        """The item with ``item_id``, or None."""
        items = self.get_many([item_id])
        return items[0] if items else None

    @_storage
    def require(self, item_id: str) -> Item:
        """The item with ``item_id``; :class:`NotFoundError` (``not-found``) when absent."""
        item = self.get(item_id)
        if item is None:
            raise NotFoundError(f"Knowledge item not found: {item_id}")
        return item

    @_storage
    def get_many(self, item_ids: Sequence[str]) -> list[Item]:
        """Items for ``item_ids`` in the given order (missing ids are skipped)."""
        if not item_ids:
            return []
        wanted = list(dict.fromkeys(item_ids))
        rows: dict[str, Sequence[Any]] = {}
        evidence: dict[str, list[Evidence]] = {item_id: [] for item_id in wanted}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT {ITEM_COLUMNS} FROM knowledge WHERE id IN ({marks})",  # noqa: S608 - placeholders only
                chunk,
            ):
                rows[row[0]] = row
            for row in self._db.execute(
                "SELECT knowledge_id, type, source, locator, timestamp, git_commit, git_path "  # noqa: S608 - placeholders only
                f"FROM knowledge_evidence WHERE knowledge_id IN ({marks}) "
                "ORDER BY knowledge_id, ordinal",
                chunk,
            ):
                evidence[row[0]].append(evidence_from_row(row[1:]))
        return [item_from_row(rows[i], evidence[i]) for i in wanted if i in rows]

    def _filters(
        self,
        workspace: str | None,
        project: str | _Unset | None,
        type: str | None,
        status: str | None,
        creation_origin: str | None,
    ) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if workspace is not None:
            clauses.append("workspace = ?")
            params.append(workspace)
        if project is None:
            clauses.append("project IS NULL")
        elif not isinstance(project, _Unset):
            clauses.append("project = ?")
            params.append(validate_project(project))
        if type is not None:
            clauses.append("type = ?")
            params.append(validate_type(type))
        if status is not None:
            clauses.append("status = ?")
            params.append(validate_status(status))
        if creation_origin is not None:
            clauses.append("creation_origin = ?")
            params.append(validate_origin(creation_origin))
        return clauses, params

    def _select(self, clauses: list[str], params: list[Any], limit: int | None) -> list[Item]:
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT id FROM knowledge{where}{_ORDER}"  # noqa: S608 - fixed clauses, bound values
        if limit is not None:
            sql += " LIMIT ?"
            params = [*params, min(validate_limit(limit), _MAX_SQL_LIMIT)]
        with self.store.read() as db:
            ids = [row[0] for row in db.execute(sql, params)]
            return self.get_many(ids)

    @_storage
    def list(
        self,
        *,
        workspace: str | None = None,
        project: str | _Unset | None = UNSET,
        type: str | None = None,
        status: str | None = None,
        creation_origin: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[Item]:
        """Items matching every given filter, newest ``updatedAt`` first, then id.

        ``project=None`` selects workspace-wide items only; leaving it out selects all.
        """
        clauses, params = self._filters(workspace, project, type, status, creation_origin)
        return self._select(clauses, params, limit)

    @_storage
    def count(
        self,
        *,
        workspace: str | None = None,
        project: str | _Unset | None = UNSET,
        type: str | None = None,
        status: str | None = None,
        creation_origin: str | None = None,
    ) -> int:
        """How many items :meth:`list` would return without a limit (one ``COUNT``, no rows
        read: a list result says its total without loading every item)."""
        clauses, params = self._filters(workspace, project, type, status, creation_origin)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self.store.read() as db:
            row = db.execute(f"SELECT COUNT(*) FROM knowledge{where}", params).fetchone()  # noqa: S608 - fixed clauses, bound values
        return int(row[0])

    @_storage
    def search(
        self,
        query: str,
        *,
        workspace: str | None = None,
        project: str | _Unset | None = UNSET,
        type: str | None = None,
        status: str | None = None,
        creation_origin: str | None = None,
        limit: int | None = None,
    ) -> builtins.list[Item]:
        """Literal substring search (LIKE with ``\\ % _`` escaped); blank query gives []."""
        if not isinstance(query, str):
            raise ValidationError("Search query must be a string.")
        trimmed = query.strip()
        if not trimmed:
            if limit is not None:
                validate_limit(limit)
            return []
        clauses, params = self._filters(workspace, project, type, status, creation_origin)
        clause, values = self.store.contains_clause("content", trimmed)
        clauses.append(clause)
        params.extend(values)
        return self._select(clauses, params, limit)

    # --- writes ---------------------------------------------------------------------------

    _INSERT_EVIDENCE = (
        "INSERT INTO knowledge_evidence (knowledge_id, ordinal, type, source, locator, "
        "timestamp, git_commit, git_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )

    @staticmethod
    def _evidence_rows(
        item_id: str, evidence: builtins.list[Evidence]
    ) -> Iterator[tuple[Any, ...]]:
        for ordinal, record in enumerate(evidence):
            provenance = record.get("gitProvenance") or {}
            yield (
                item_id,
                ordinal,
                record["type"],
                record["source"],
                record.get("locator"),
                record["timestamp"],
                provenance.get("commit"),
                provenance.get("path"),
            )

    def _insert_evidence(self, item_id: str, evidence: builtins.list[Evidence]) -> None:
        self._db.execute("DELETE FROM knowledge_evidence WHERE knowledge_id = ?", (item_id,))
        self._db.executemany(self._INSERT_EVIDENCE, self._evidence_rows(item_id, evidence))

    def _prepare(
        self, spec: Mapping[str, Any]
    ) -> tuple[str, tuple[Any, ...], builtins.list[Evidence]]:
        item_type = validate_type(spec.get("type"))
        content = validate_content(spec.get("content"))
        scope = normalize_scope(spec.get("scope"))
        evidence = normalize_evidence(spec.get("evidence") or [])
        origin = validate_origin(
            spec.get("creation_origin", spec.get("creationOrigin", "explicit"))
        )
        import uuid  # noqa: PLC0415 - lazy: uuid loads platform; the prompt hook never adds

        item_id = str(uuid.uuid4())
        created = now_timestamp()
        row = (
            item_id,
            item_type,
            content,
            scope["workspace"],
            scope.get("project"),
            created,
            created,
            origin,
        )
        return item_id, row, evidence

    _INSERT = (
        "INSERT INTO knowledge (id, type, content, workspace, project, status, created_at, "
        "updated_at, creation_origin) VALUES (?, ?, ?, ?, ?, 'candidate', ?, ?, ?)"
    )

    @_storage
    def create(
        self,
        *,
        type: str,
        content: str,
        scope: Mapping[str, Any],
        evidence: Sequence[Mapping[str, Any]] = (),
        creation_origin: str = "explicit",
    ) -> Item:
        """A new ``candidate`` item with a UUID and ``createdAt == updatedAt == now``."""
        item_id, row, records = self._prepare(
            {
                "type": type,
                "content": content,
                "scope": scope,
                "evidence": evidence,
                "creation_origin": creation_origin,
            }
        )

        def work() -> None:
            self._db.execute(self._INSERT, row)
            self._insert_evidence(item_id, records)

        with encoded_for_write(self.store, [row[2]]):
            self.store.write(work)
        return self.require(item_id)

    @_storage
    def create_many(self, specs: Sequence[Mapping[str, Any]]) -> builtins.list[str]:
        """Create many items in one transaction (bulk import); returns their ids in order.

        Where the store keeps vectors (hybrid ranking), up to
        :data:`~dsh_knowledge.vectors.PREFETCH_LIMIT` texts are encoded before the
        transaction and stored in it; a larger import leaves them to ``vectors build``.

        Each spec is ``{"type", "content", "scope", "evidence"?, "creationOrigin"?}``. All
        are validated before anything is written: one bad spec writes nothing.
        """
        prepared = [self._prepare(spec) for spec in specs]

        def work() -> None:
            self._db.executemany(self._INSERT, [row for _, row, _ in prepared])
            self._db.executemany(
                self._INSERT_EVIDENCE,
                [
                    row
                    for item_id, _, records in prepared
                    for row in self._evidence_rows(item_id, records)
                ],
            )

        with encoded_for_write(self.store, [row[2] for _, row, _ in prepared]):
            self.store.write(work)
        return [item_id for item_id, _, _ in prepared]

    def _in_replacement(self, item: Item) -> bool:
        if "replacementId" in item:
            return True
        row = self._db.execute(
            "SELECT 1 FROM knowledge WHERE replacement_id = ? LIMIT 1", (item["id"],)
        ).fetchone()
        return row is not None

    @_storage
    def update(
        self,
        item_id: str,
        *,
        type: str | None = None,
        content: str | None = None,
        scope: Mapping[str, Any] | None = None,
        status: str | None = None,
        evidence: Sequence[Mapping[str, Any]] | None = None,
    ) -> Item:
        """Apply a patch; evidence is replaced only when given. Follows the transition table."""

        def work() -> None:
            self.store.lock_items([item_id])
            current = self.require(item_id)
            new_type = current["type"] if type is None else validate_type(type)
            new_content = current["content"] if content is None else validate_content(content)
            new_scope = current["scope"] if scope is None else normalize_scope(scope)
            new_status = current["status"] if status is None else validate_status(status)
            if new_status != current["status"] and (
                (current["status"], new_status) not in _ALLOWED_TRANSITIONS
            ):
                raise _transition_error(current["status"], new_status)
            records = None if evidence is None else normalize_evidence(evidence)
            if new_scope != current["scope"] and self._in_replacement(current):
                raise ScopeChangeError(
                    "Knowledge scope cannot change while the item is part of a replacement."
                )
            self._db.execute(
                "UPDATE knowledge SET type = ?, content = ?, workspace = ?, project = ?, "
                "status = ?, updated_at = ? WHERE id = ?",
                (
                    new_type,
                    new_content,
                    new_scope["workspace"],
                    new_scope.get("project"),
                    new_status,
                    next_timestamp(current["updatedAt"]),
                    item_id,
                ),
            )
            if records is not None:
                self._insert_evidence(item_id, records)

        # A new text is encoded before the transaction (hybrid ranking's stored vector).
        # (Only a valid one: the transaction checks it, after the item's existence.)
        text = [content] if isinstance(content, str) and content.strip() else []
        with encoded_for_write(self.store, text):
            self.store.write(work)
        return self.require(item_id)

    @_storage
    def verify(self, item_id: str) -> Item:
        """``candidate -> verified`` (a verified item stays verified)."""
        return self.update(item_id, status="verified")

    @_storage
    def archive(self, item_id: str) -> Item:
        """Move any item to ``archived`` (the terminal state)."""
        return self.update(item_id, status="archived")

    @_storage
    def supersede(self, item_id: str, replacement_id: str) -> Item:
        """Mark a verified item superseded by a verified item in the same scope."""

        def work() -> None:
            # Both rows are held until commit: two supersedes of one item cannot both win,
            # and the replacement cannot be archived between the check and the write.
            self.store.lock_items([item_id, replacement_id])
            current = self.require(item_id)
            replacement = self.require(replacement_id)
            if item_id == replacement_id:
                raise InvalidSupersedeError("A knowledge item cannot supersede itself.")
            if current["status"] != "verified":
                raise InvalidTransitionError(
                    f"Invalid knowledge status transition: {current['status']} -> superseded. "
                    "Only a verified item can be superseded: verify it first "
                    f"(dsh-knowledge verify {item_id})."
                )
            if replacement["status"] != "verified":
                raise InvalidSupersedeError(
                    "Replacement knowledge must be verified before superseding another item."
                )
            if current["scope"] != replacement["scope"]:
                raise InvalidSupersedeError(
                    "Replacement knowledge must have the same workspace and project scope."
                )
            self._db.execute(
                "UPDATE knowledge SET status = 'superseded', replacement_id = ?, updated_at = ? "
                "WHERE id = ?",
                (replacement_id, next_timestamp(current["updatedAt"]), item_id),
            )

        self.store.write(work)
        return self.require(item_id)

"""Keeping the vectors of hybrid ranking in step with the search index.

The search index has a new *generation* with every change; the vector store remembers the
generation it was last brought in step with. When they differ, the index's valid records
are compared with the stored vectors record by record (:func:`sync`):

- a record the index no longer has loses its vector;
- a record whose file has the signature its vector was made from keeps it (no file read);
- any other record is read: when the text to encode (:func:`vector_text`) has the SHA-256
  stored beside its vector and the model is the same, only the signature is updated; else
  it is encoded anew (so is every vector of another model id).

Encoding costs ~3 ms a record on one core, so how many a caller may wait for is its
choice (``budget``): a search encodes the few records an edit changed on the spot, while a
first build of 10,000 vectors (~35 s) is the ``dsh-memory vectors`` command's, or the
command line's with a progress bar on stderr. When more records are missing than the budget
allows, nothing is encoded and the caller ranks lexically and says so.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dsh_common import embedding
from dsh_memory.search import index_store, vector_store
from dsh_memory.search.index_query import valid_records
from dsh_memory.store.records import PayloadEntry, Record, load_record

#: Vectors encoded between two commits of a long build: progress survives an interruption,
#: and other processes are never locked out of the store for long.
BATCH = 256

Progress = Callable[[int, int], object]


def vector_text(record: Record) -> str:
    """What is encoded for a record: its id's words, its tags and its body.

    The id of a record written by an agent names its topic (``infra/cache-policy``), tags
    add its keywords; a legacy record's synthetic id says nothing and is left out. The model
    reads the first 2,000 characters.
    """
    parts = []
    if not record.legacy and record.id:
        parts.append(record.id.replace("/", " ").replace("-", " "))
    if record.tags:
        parts.append(" ".join(record.tags))
    parts.append(record.body.strip())
    return "\n".join(part for part in parts if part)


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True)
class Outcome:
    """How a sync went: records encoded now, records still without a vector, and the store's
    generation after it (what a process's loaded vectors are keyed by)."""

    encoded: int
    missing: int
    generation: str = ""


def index_state(root: Path) -> tuple[str, list[tuple[str, int, str | None]]]:
    """The search index's generation and valid records, read in one transaction."""
    with (
        index_store.connect(index_store.index_path(root), readonly=True) as connection,
        index_store.read_transaction(connection),
    ):
        meta = index_store.read_meta(connection)
        return meta.get("generation", ""), valid_records(connection)


def index_generation(root: Path) -> str:
    with index_store.connect(index_store.index_path(root), readonly=True) as connection:
        row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return "" if row is None else str(row[0])


def sync(root: Path, *, budget: int | None = None, progress: Progress | None = None) -> Outcome:
    """Bring the vector store in step with the (fresh) search index; see the module doc.

    Raises :class:`~dsh_memory.search.vector_store.VectorStoreError` or ``sqlite3.Error`` when
    the store cannot be used, :class:`~dsh_common.embedding.SemanticUnavailableError`
    without the ``[semantic]`` extra.
    """
    model = embedding.model_id()
    generation = index_generation(root)
    # Nearly every search finds the store in step: a read, no write lock.
    meta = _current_meta(root)
    if meta.get("index_generation") == generation and meta.get("model_id") == model:
        return Outcome(0, 0, meta.get("generation", ""))
    with vector_store.open_store(root) as connection:
        meta = vector_store.read_meta(connection)
        if meta.get("index_generation") == generation and meta.get("model_id") == model:
            return Outcome(0, 0, meta.get("generation", ""))
        generation, records = index_state(root)
        connection.execute("BEGIN IMMEDIATE")
        try:
            pending = _reconcile(root, connection, records, model)
            if budget is not None and len(pending) > budget:
                connection.execute("COMMIT")
                return Outcome(0, len(pending), vector_store.read_meta(connection)["generation"])
            if not pending:
                vector_store.write_meta(
                    connection, {"index_generation": generation, "model_id": model}
                )
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        if pending:
            _encode(connection, pending, model, progress)
            connection.execute("BEGIN IMMEDIATE")
            vector_store.write_meta(connection, {"index_generation": generation, "model_id": model})
            connection.execute("COMMIT")
        return Outcome(len(pending), 0, vector_store.read_meta(connection)["generation"])


def _current_meta(root: Path) -> dict[str, str]:
    """The store's meta read without a write lock ({} when there is no readable store)."""
    path = vector_store.vectors_path(root)
    if not index_store.existing_index(path):
        return {}
    try:
        with index_store.connect(path, readonly=True) as connection:
            return vector_store.read_meta(connection)
    except sqlite3.Error:
        return {}


@dataclass(frozen=True)
class _Pending:
    path: str
    signature: int
    expires_on: str | None
    text: str
    digest: bytes


def _reconcile(
    root: Path,
    connection: sqlite3.Connection,
    records: list[tuple[str, int, str | None]],
    model: str,
) -> list[_Pending]:
    """Remove vectors of records gone, refresh those whose text did not change; the records
    left to encode."""
    stored = vector_store.stored_rows(connection)
    wanted = {path for path, _signature, _expires in records}
    writer = vector_store.Writer(connection)
    writer.remove(sorted(set(stored) - wanted))
    pending = []
    for path, signature, expires_on in records:
        row = stored.get(path)
        if row is not None and row.signature == signature and row.model_id == model:
            continue
        record = load_record(root, PayloadEntry(path, ""))
        if record is None or not record.valid:
            continue  # changed since the index was read: the next sync sees it again
        text = vector_text(record)
        digest = text_digest(text)
        if row is not None and row.text_sha256 == digest and row.model_id == model:
            writer.refresh(path, signature, expires_on)
            continue
        pending.append(_Pending(path, signature, expires_on, text, digest))
    writer.finish()
    return pending


def _encode(
    connection: sqlite3.Connection,
    pending: list[_Pending],
    model: str,
    progress: Progress | None,
) -> None:
    total = len(pending)
    for start in range(0, total, BATCH):
        batch = pending[start : start + BATCH]
        vectors = embedding.encode([item.text for item in batch])
        connection.execute("BEGIN IMMEDIATE")
        try:
            writer = vector_store.Writer(connection)
            for item, vector in zip(batch, vectors, strict=True):
                writer.put(
                    item.path,
                    vector,
                    signature=item.signature,
                    text_sha256=item.digest,
                    model_id=model,
                    language=embedding.detect_language(item.text),
                    expires_on=item.expires_on,
                )
            writer.finish()
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        if progress is not None:
            progress(start + len(batch), total)

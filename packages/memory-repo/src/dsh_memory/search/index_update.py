"""Bringing the search index up to date: a new file when there is none, else what changed.

An index that is missing, of another schema or unreadable is built in a temporary file and
renamed into place. Otherwise it is updated in place, in one transaction, for the records
that changed - found the cheapest way the freshness check allows:

- with the listing key, from the listing the check has just taken: its chunks that differ
  from those stored with the index, compared line by line, name the records added,
  removed, renamed or edited (an edit at 10,000 records changes one chunk of a hundred).
  Each such record is ``lstat``-ed and must still have the inode and ctime ``find``
  listed, so a record that changes again meanwhile is never stored under a key that does
  not describe it;
- otherwise by a walk of the record folders (the check's own walk for a small payload),
  compared record by record with the stored change signatures.

The keys are those of :mod:`dsh_memory.search.index_key`; a payload crossing
:data:`~dsh_memory.search.index_key.FAST_KEY_MIN_RECORDS`, a listing that cannot be trusted, or
anything unexpected takes the walk, which is always right. Two processes updating at once
queue on SQLite's write lock; the second finds the work done or does what is left.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import zlib
from pathlib import Path

from dsh_common import jsonio
from dsh_memory.search import index_key, index_listing
from dsh_memory.search.index_key import Observed
from dsh_memory.search.index_store import (
    INDEX_SCHEMA_VERSION,
    LISTING_SCHEMA,
    SCHEMA,
    IndexUnavailable,
    connect,
    ensure_git_exclude,
    existing_index,
    full_path,
    index_meta,
    index_path,
    new_temporary,
    open_for_update,
    read_meta,
    remove_stale_temporaries,
    signature_digest,
    split_path,
    sync_directory,
)
from dsh_memory.search.index_write import (
    Totals,
    insert_records,
    optimize_terms,
    settle_terms,
    write_changes,
)
from dsh_memory.store.records import (
    RECORD_FOLDERS,
    PayloadEntry,
    Record,
    fingerprint,
    load_record,
    stat_signature,
    walk_payload,
)

#: Listing chunks are stored compressed (paths and numbers: ~3x smaller); an update
#: compresses only the chunks that changed.
LISTING_COMPRESSION = 6


def payload_snapshot(
    root: Path, walked: list[PayloadEntry] | None = None
) -> tuple[list[PayloadEntry], dict[str, str], bytes | None]:
    """Records to index, the freshness meta describing exactly that state, and the listing
    the listing key was taken from (if that is the key).

    The fast key is computed *after* the walk and confirmed by a second walk, so a change
    racing the build can only make the stored key stale (an update next time), never make a
    missed change look fresh. ``walked`` is a walk the caller has just made.
    """
    entries = walk_payload(root, RECORD_FOLDERS) if walked is None else walked
    for _attempt in range(3):
        if len(entries) < index_key.FAST_KEY_MIN_RECORDS:
            break
        keys, listing = index_key.snapshot_keys(root, entries)
        if not keys:
            break  # no fast key here (a linked record folder): the walk keys it
        again = walk_payload(root, RECORD_FOLDERS)
        if fingerprint(again) == fingerprint(entries):
            return entries, keys, listing
        entries = again
    return entries, {"fingerprint": fingerprint(entries)}, None


def update_index(root: Path, observed: Observed | None = None) -> str:
    """Make ``.sync/search-index.sqlite`` match the payload: ``"built"`` (a new file) or
    ``"updated"`` (changed in place). ``observed`` is what a freshness check saw.

    Raises :class:`IndexUnavailable` when the index cannot be written.
    """
    sync = sync_directory(root)
    path = index_path(root)
    ensure_git_exclude(root)
    if not existing_index(path):
        _remove_journal(path)
        _build(root, sync, path)
        return "built"
    try:
        with open_for_update(path) as connection:
            # IMMEDIATE takes the write lock first: the state read below is the one changed,
            # and a write that crashed half-way is rolled back from its journal now.
            connection.execute("BEGIN IMMEDIATE")
            try:
                _apply(root, connection, observed)
                connection.execute("COMMIT")
                _give_back_free_pages(connection)
                return "updated"
            except _Rebuild:
                # An older schema or damaged meta: a new file, renamed over this one while
                # the write lock is still held - no writer has a journal beside it then, so
                # none can be played back into the new file.
                _build(root, sync, path)
                return "built"
            finally:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) not in _UNREADABLE:
            raise IndexUnavailable(f"cannot update the search index: {exc}") from exc
        # Not a database, or damaged: no SQLite writer can be using it.
        _remove_journal(path)
        _build(root, sync, path)
        return "built"
    except (OSError, sqlite3.Error) as exc:
        raise IndexUnavailable(f"cannot update the search index: {exc}") from exc


#: Free pages (a share of the file) from which an update gives them back to the disk.
FREE_SHARE_TO_RECLAIM = 0.1
#: A change to more than this share of the records (and more than REBUILD_MIN_RECORDS)
#: builds a new file: a compact copy, for what re-reading every record costs anyway.
REBUILD_SHARE = 0.25
REBUILD_MIN_RECORDS = 256


def _mostly_changed(changed: int, totals: Totals) -> bool:
    return changed > max(REBUILD_MIN_RECORDS, REBUILD_SHARE * totals.records)


def _give_back_free_pages(connection: sqlite3.Connection) -> None:
    (free,) = connection.execute("PRAGMA freelist_count").fetchone()
    (pages,) = connection.execute("PRAGMA page_count").fetchone()
    if free > FREE_SHARE_TO_RECLAIM * pages:
        # Moves the last pages into the free ones and truncates: work for the freed pages
        # only, unlike a VACUUM of the whole file. (Through execute() the pragma frees one
        # page a call; as a script it runs to the end.)
        connection.executescript("PRAGMA incremental_vacuum;")


#: SQLITE_CORRUPT and SQLITE_NOTADB: a file to replace (any other error - locked, read-only,
#: out of space - is the index being unavailable, never a reason to replace it).
_UNREADABLE = (11, 26)


def _remove_journal(path: Path) -> None:
    """A journal left beside a file that is about to be replaced would be played back into
    the new file by the next connection: it goes first."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path.with_name(path.name + "-journal"))


def refresh_index(root: Path) -> str:
    """Bring the index up to date if needed: ``"fresh"`` or ``"rebuilt"``."""
    meta = index_meta(index_path(root))
    if meta is not None:
        check = index_key.start_check(root, meta)
        if check.fresh():
            return "fresh"
        update_index(root, check.observed)
    else:
        update_index(root)
    return "rebuilt"


class _Rebuild(Exception):
    """Build a new file instead: the index cannot be updated in place (damaged meta, an
    older schema), or most of it would change."""


def _build(root: Path, sync: Path, path: Path) -> None:
    entries, keys, listing = payload_snapshot(root)
    remove_stale_temporaries(sync)
    try:
        temporary = new_temporary(sync)
    except OSError as exc:
        raise IndexUnavailable(f"cannot create an index temporary: {exc}") from exc
    try:
        with connect(temporary, readonly=False) as connection:
            # A private temporary renamed into place: no journal is needed for safety.
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            connection.executescript(SCHEMA)
            connection.execute("BEGIN")
            totals = Totals()
            loaded = (load_record(root, entry) for entry in entries)
            insert_records(connection, (r for r in loaded if r is not None), totals)
            optimize_terms(connection)
            stored = _replace_listing(connection, listing)
            _write_meta(connection, {**keys, **stored, **totals.meta()})
            connection.execute("COMMIT")
            # Merging the term table's segments into one freed the pages of the others:
            # a copy without them is up to a third smaller.
            connection.execute("VACUUM")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except (OSError, sqlite3.Error) as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise IndexUnavailable(f"cannot write the search index: {exc}") from exc


def _write_meta(connection: sqlite3.Connection, meta: dict[str, str]) -> None:
    connection.execute("DELETE FROM meta")
    # A new generation with every change: what the vectors of hybrid ranking are kept in
    # step with (dsh_memory.search.vector_sync), without comparing every record.
    generation = os.urandom(8).hex()
    connection.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [
            ("schema_version", INDEX_SCHEMA_VERSION),
            ("generation", generation),
            *sorted(meta.items()),
        ],
    )


def _replace_listing(connection: sqlite3.Connection, listing: bytes | None) -> dict[str, str]:
    """Store the chunks of the listing a new key was taken from (no table for the other
    keys); the meta row that ties them to the key."""
    connection.execute("DROP TABLE IF EXISTS listing")
    if listing is None:
        return {}
    connection.execute(LISTING_SCHEMA)
    chunks = index_listing.listing_chunks(listing)
    _store_chunks(connection, chunks)
    return {"listing_chunks": index_listing.chunks_digest(chunks)}


def _store_chunks(connection: sqlite3.Connection, chunks: dict[bytes, bytes]) -> None:
    connection.executemany(
        "INSERT INTO listing(digest, data) VALUES (?, ?)",
        ((digest, zlib.compress(chunk, LISTING_COMPRESSION)) for digest, chunk in chunks.items()),
    )


def _apply(root: Path, connection: sqlite3.Connection, observed: Observed | None) -> None:
    """Change the tables to match the payload."""
    try:
        meta = read_meta(connection)
        if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
            raise _Rebuild
        totals = Totals.from_meta(meta)
    except (ValueError, KeyError, sqlite3.Error) as exc:
        raise _Rebuild from exc
    if observed is not None and observed.listing is not None:
        if observed.states is not None and meta.get("listing_key") == index_key.listing_key_of(
            observed.states, observed.listing
        ):
            return  # another process brought it up to date meanwhile
        if _apply_listing(root, connection, meta, totals, observed):
            return
        observed = None
    walked = observed.entries if observed is not None else None
    entries, keys, listing = payload_snapshot(root, walked)
    if "fingerprint" in keys and keys["fingerprint"] == meta.get("fingerprint"):
        return
    wanted = {entry.path: entry for entry in entries}
    stale: dict[str, int] = {}
    for rowid, folder, rest, signature in connection.execute(
        "SELECT rowid, folder, path, signature FROM records"
    ).fetchall():
        record_path = full_path(folder, rest)
        entry = wanted.get(record_path)
        if entry is not None and signature_digest(entry.signature) == signature:
            del wanted[record_path]
        else:
            stale[record_path] = rowid
    if _mostly_changed(len(stale.keys() | wanted.keys()), totals):
        raise _Rebuild
    loaded = (load_record(root, entry) for entry in wanted.values())
    write_changes(connection, stale, (r for r in loaded if r is not None), totals)
    settle_terms(connection, totals)
    stored_listing = _replace_listing(connection, listing)
    _write_meta(connection, {**keys, **stored_listing, **totals.meta()})


def _apply_listing(
    root: Path,
    connection: sqlite3.Connection,
    meta: dict[str, str],
    totals: Totals,
    observed: Observed,
) -> bool:
    """The update from the check's listing; False (nothing changed) when it cannot be used."""
    if observed.listing is None or observed.states is None or not meta.get("listing_chunks"):
        return False
    stored = {digest for (digest,) in connection.execute("SELECT digest FROM listing")}
    if index_listing.chunks_digest(stored) != meta["listing_chunks"]:
        return False  # the stored chunks are not those of the listing the rows came from
    chunks = index_listing.listing_chunks(observed.listing)
    vanished = sorted(stored - chunks.keys())
    appeared = {digest: chunk for digest, chunk in chunks.items() if digest not in stored}
    try:
        before = [
            zlib.decompress(
                connection.execute(
                    "SELECT data FROM listing WHERE digest = ?", (digest,)
                ).fetchone()[0]
            )
            for digest in vanished
        ]
    except zlib.error:
        return False
    changes = index_listing.listing_changes(before, appeared.values())
    if changes is None:
        return False
    gone, came = changes
    if _mostly_changed(len(gone | came.keys()), totals):
        raise _Rebuild
    records = _listed_records(root, came)
    if records is None:
        return False
    stale = _rowids_of(connection, gone | set(came))
    if totals.records - len(stale) + len(records) < index_key.FAST_KEY_MIN_RECORDS:
        return False  # a smaller payload is keyed by its fingerprint: the walk computes it
    write_changes(connection, stale, records, totals)
    settle_terms(connection, totals)
    connection.executemany("DELETE FROM listing WHERE digest = ?", ((d,) for d in vanished))
    _store_chunks(connection, appeared)
    keys = {
        **index_key.listing_meta(observed.states, observed.listing),
        "listing_chunks": index_listing.chunks_digest(chunks),
    }
    _write_meta(connection, {**keys, **totals.meta()})
    return True


def _listed_records(root: Path, came: dict[str, tuple[int, int]]) -> list[Record] | None:
    """The records of the listing's new lines, read now; None when one of them is no longer
    what ``find`` listed (changed again, replaced, gone): the listing is then not used."""
    records = []
    for relative, (inode, ctime) in sorted(came.items()):
        try:
            info = os.lstat(root / relative)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or (info.st_ino, info.st_ctime_ns) != (inode, ctime):
            return None
        record = load_record(root, PayloadEntry(relative, stat_signature(info)))
        if record is None:
            return None
        try:
            after = os.lstat(root / relative)
        except OSError:
            return None
        if (after.st_ino, after.st_ctime_ns) != (inode, ctime):
            return None  # changed while it was read
        records.append(record)
    return records


def _rowids_of(connection: sqlite3.Connection, paths: set[str]) -> dict[str, int]:
    """The rows of ``paths`` that the index has, by path."""
    if not paths:
        return {}
    rows = connection.execute(
        "SELECT rowid, folder, path FROM records WHERE (folder, path) IN"
        " (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')"
        " FROM json_each(?))",
        (jsonio.dumps([list(split_path(path)) for path in sorted(paths)]),),
    ).fetchall()
    return {full_path(folder, rest): rowid for rowid, folder, rest in rows}

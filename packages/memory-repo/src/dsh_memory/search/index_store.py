"""The search index file: where it lives, its tables, how rows are stored, how it is opened.

``.sync/search-index.sqlite`` (0600, git-excluded) is a derived cache of the record files;
search results never depend on it (:mod:`dsh_memory.search.search_index`). What a record costs was
measured on dense Chinese (the hardest case: every character three UTF-8 bytes and nearly
every bigram a term of its own) and the layout follows from it:

- ``terms``: a contentless FTS5 table (``detail=none``, ``columnsize=0``, ``ascii``
  tokenizer) of each valid record's folder token and index tokens
  (:func:`dsh_memory.search.scoring.index_tokens`: words, Han bigrams, the last character of each
  Han run). A term costs ~8 bytes however rare it is, and at 1,000 records most bigrams
  occur once: the term table is ~1.15x the payload there, ~0.85x at 10,000. It is what
  keeps a query fast (a scan of the stored texts instead was measured 1.4-2x slower at
  1,000 records), so everything else is made small around it.
- ``records``: one row per record file, and no b-tree index on it (each cost 4-9 % of the
  payload; the few statements that used one now read the table once, a few milliseconds at
  10,000 records). The folder is a number and the path is stored without it; the change
  signature is a 64-bit digest of size, mtime, ctime and inode (an update compares it with
  the walk's; the listing key needs none); for a valid record the normalised fields
  (:func:`dsh_memory.search.scoring.record_text`) without the spaces that pad each of them, the
  four short ones in one column and the id left out when it is just the record id's words,
  and the body as UTF-16 when that is shorter than UTF-8 (Han text: 2 bytes a character
  instead of 3).
- ``meta`` (key/value text) and, with the listing key, ``listing``: the ``find`` listing
  the key was taken from, in compressed chunks of about a hundred lines, so that a changed
  listing says which records changed by the few chunks that differ
  (:func:`dsh_memory.search.index_listing.listing_chunks`).

The file is updated in place, one SQLite transaction per change (rollback journal): readers
see the old or the new state, never a mix. A missing, damaged or older file is built anew in
a temporary and renamed into place.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import os
import sqlite3
import stat
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path

from dsh_memory.errors import MemoryRepoError
from dsh_memory.search import scoring
from dsh_memory.store import frontmatter
from dsh_memory.store.records import RECORD_FOLDERS, Record

INDEX_NAME = "search-index.sqlite"
#: 11: compact rows (see above), no b-tree index, bigrams and run-final characters as
#: tokens, the listing kept in chunks for updates in place.
INDEX_SCHEMA_VERSION = "11"
TMP_PREFIX = ".search-index."
TMP_SUFFIX = ".tmp"
GIT_EXCLUDE_ENTRIES = (
    ".sync/search-index.sqlite",
    ".sync/search-index.sqlite-journal",
    ".sync/.search-index.*.tmp",
)
#: Abandoned temporaries older than this are removed by the next build.
STALE_TMP_SECONDS = 600
#: How long a writer or reader waits for another process's transaction (milliseconds).
BUSY_TIMEOUT_MS = 10_000

#: The FTS5 token naming a record's folder: ``§`` is never part of a record token (tokens
#: are letters and numbers), and the ``ascii`` tokenizer keeps non-ASCII characters in tokens.
FOLDER_MARK = "\u00a7"
#: Folder numbers in name order: ``ORDER BY folder, path`` is the order of the full paths.
FOLDERS_BY_NUMBER = tuple(sorted(RECORD_FOLDERS))
FOLDER_NUMBERS = {folder: number for number, folder in enumerate(FOLDERS_BY_NUMBER)}

SCHEMA = """
-- Pages freed by an update are given back to the disk at once (index_update): without it
-- the file kept every page an edit or a term-table merge ever freed.
PRAGMA auto_vacuum = INCREMENTAL;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    folder INTEGER NOT NULL,
    path TEXT NOT NULL,
    signature INTEGER NOT NULL,
    valid INTEGER NOT NULL,
    record_id TEXT,
    expires_at TEXT,
    expires_on TEXT,
    length INTEGER,
    head TEXT,
    body
);
CREATE VIRTUAL TABLE terms USING fts5(t, content='', detail='none', tokenize='ascii',
                                      columnsize=0);
"""
#: Created with the first listing key (one page less for the indexes that have none).
LISTING_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS listing (digest BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID"
)


class IndexUnavailable(Exception):  # an internal signal, never raised to callers
    """The index could not be read or written; the caller scans instead."""


def index_path(root: Path) -> Path:
    return root / ".sync" / INDEX_NAME


def sync_directory(root: Path) -> Path:
    sync = root / ".sync"
    try:
        info = sync.lstat()
    except OSError as exc:
        raise IndexUnavailable(".sync is missing") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise IndexUnavailable(".sync is not a directory")
    return sync


def readonly_uri(path: Path) -> str:
    """A ``file:`` URI opening ``path`` read-only.

    The path is percent-encoded: in a URI ``#`` starts a fragment and ``?`` the query, so an
    unescaped root such as ``/srv/a#b`` would name ``/srv/a`` - SQLite would create an empty
    database there (read-write with ``?``, because ``mode=ro`` is then lost) and never use
    the real index.
    """
    return f"file:{urllib.parse.quote(path.as_posix())}?mode=ro"


@contextlib.contextmanager
def connect(path: Path, *, readonly: bool) -> Iterator[sqlite3.Connection]:
    if readonly:
        connection = sqlite3.connect(
            readonly_uri(path), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
    else:
        connection = sqlite3.connect(
            str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
    try:
        yield connection
    finally:
        connection.close()


@contextlib.contextmanager
def read_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """One snapshot for several statements: the file is updated in place, so meta and the
    query it guides must be read under one shared lock."""
    connection.execute("BEGIN")
    try:
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):
            connection.execute("ROLLBACK")


def read_meta(connection: sqlite3.Connection) -> dict[str, str]:
    return dict(connection.execute("SELECT key, value FROM meta").fetchall())


def existing_index(path: Path) -> bool:
    """A regular file (not a link) is there; a link is treated as a missing index."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode)


def index_meta(path: Path) -> dict[str, str] | None:
    """The index's meta table, or None when there is no usable index of this schema."""
    if not existing_index(path):
        return None
    try:
        with connect(path, readonly=True) as connection:
            meta = read_meta(connection)
    except sqlite3.Error:
        return None
    if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
        return None
    return meta


@contextlib.contextmanager
def open_for_update(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-write connection to the existing index file, never through a link.

    The file is checked to be a regular file before and after SQLite opens it (same inode):
    a link put in its place would be followed by SQLite, which cannot be asked not to.
    """
    before = path.lstat()
    if not stat.S_ISREG(before.st_mode):
        raise IndexUnavailable("the search index is not a regular file")
    with connect(path, readonly=False) as connection:
        # Opening is lazy: the first statement reads the file, then it is compared.
        connection.execute("PRAGMA schema_version").fetchone()
        after = path.lstat()
        if (after.st_ino, after.st_dev) != (before.st_ino, before.st_dev):
            raise IndexUnavailable("the search index was replaced while it was opened")
        # A rollback journal (removed at commit) keeps a crash from leaving half a change;
        # NORMAL syncs the journal before the file changes, enough for a derived cache.
        connection.execute("PRAGMA synchronous = NORMAL")
        yield connection


def remove_stale_temporaries(sync: Path) -> None:
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(sync) as iterator:
        for child in iterator:
            if not (child.name.startswith(TMP_PREFIX) and child.name.endswith(TMP_SUFFIX)):
                continue
            with contextlib.suppress(OSError):
                if now - child.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS:
                    os.unlink(child.path)


def new_temporary(sync: Path) -> Path:
    temporary = sync / f"{TMP_PREFIX}{os.getpid()}.{uuid.uuid4().hex}{TMP_SUFFIX}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(descriptor)
    return temporary


def ensure_git_exclude(root: Path, entries: tuple[str, ...] = GIT_EXCLUDE_ENTRIES) -> None:
    from dsh_memory.store.usage import ensure_git_exclude as add_entries  # noqa: PLC0415

    # Best effort: the index works without the entries (.sync/.gitignore also lists it).
    with contextlib.suppress(OSError, MemoryRepoError):
        add_entries(root, entries)


# -- rows ------------------------------------------------------------------------------------


def signature_digest(signature: str) -> int:
    """A record's change signature (``"size:mtime:ctime:inode"``) as a signed 64-bit integer:
    8 bytes a row instead of ~22, and two signatures differ in it as they differ."""
    digest = hashlib.blake2b(signature.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def split_path(path: str) -> tuple[int, str]:
    """``handbook/a/b.md`` as its folder number and the rest of the path."""
    folder, _slash, rest = path.partition("/")
    return FOLDER_NUMBERS[folder], rest


def full_path(folder: int, rest: str) -> str:
    return f"{FOLDERS_BY_NUMBER[folder]}/{rest}"


#: The stored head's first field when the id field is the record id's words (most records).
_ID_FROM_RECORD = "\x01"


def _id_words(record_id: str) -> str:
    # An id of the front matter grammar (``project/codegen``) normalises to its words.
    return record_id.replace("/", " ").replace("-", " ")


def pack_head(fields: tuple[str, ...], record_id: str | None) -> str:
    """The four short normalised fields (id, tags, type, provenance) in one column, each
    without the spaces that pad it (a normalised field never holds a newline); the id field
    as a mark when it is just the record id's words."""
    stripped = [field[1:-1] for field in fields[:4]]
    if stripped[0] and record_id is not None and stripped[0] == _id_words(record_id):
        stripped[0] = _ID_FROM_RECORD
    return "\n".join(stripped)


def pack_body(body: str) -> str | bytes:
    """A normalised body as stored: without its padding spaces, as UTF-16 bytes where they
    are shorter, else as text."""
    inner = body[1:-1]
    encoded = inner.encode("utf-8", "surrogatepass")
    # UTF-16 is 2 bytes a BMP character (4 for the rest, as in UTF-8): shorter exactly when
    # more than half the UTF-8 bytes belong to three-byte characters.
    if len(encoded) > 2 * len(inner):
        return inner.encode("utf-16-le", "surrogatepass")
    return inner


def unpack_body(stored: str | bytes) -> str:
    if not isinstance(stored, str):
        # The codec function itself: ``bytes.decode("utf-16-le")`` looks the codec up by
        # name on every call, which made it six times slower than this on short bodies.
        stored = _utf16_decode(stored, "surrogatepass")[0]
    return f" {stored} " if stored else " "


_utf16_decode = codecs.utf_16_le_decode


def record_text_of(
    record_id: str | None, length: int, head: str, body: str | bytes
) -> scoring.RecordText:
    """The :class:`~dsh_memory.search.scoring.RecordText` a stored row holds, exactly as packed.

    Called for every candidate of a query (thousands for a common word), so unrolled: this
    form measured twice as fast as a loop over the fields.
    """
    id_words, tags, kind, other = head.split("\n")
    if id_words == _ID_FROM_RECORD:
        id_words = _id_words(record_id or "")
    return scoring.RecordText(
        (
            f" {id_words} " if id_words else " ",
            f" {tags} " if tags else " ",
            f" {kind} " if kind else " ",
            f" {other} " if other else " ",
            unpack_body(body),
        ),
        length,
    )


def record_row(record: Record) -> tuple[tuple[object, ...], scoring.RecordText | None]:
    """The ``records`` columns after the rowid for ``record``, and its text (valid only)."""
    text = scoring.record_text(record) if record.valid else None
    stored: tuple[object, ...] = (None, None, None)
    if text is not None:
        stored = (text.length, pack_head(text.fields, record.id), pack_body(text.fields[-1]))
    return (
        *split_path(record.path),
        signature_digest(record.signature),
        int(record.valid),
        record.id,
        record.expires_at,
        frontmatter.expiry_date(record.expires_at),
        *stored,
    ), text


def document_tokens(folder: str, text: scoring.RecordText) -> str:
    """The FTS text of a record: its folder token and its distinct index tokens.

    Order does not matter to FTS5 with ``detail=none`` (only which tokens a row has); the
    tokens are sorted so that a contentless ``delete`` is given back exactly what was added.
    """
    tokens = sorted(scoring.index_tokens(text))
    return " ".join([FOLDER_MARK + folder, *tokens])

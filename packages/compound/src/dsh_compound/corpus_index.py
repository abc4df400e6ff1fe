"""The corpus as every front end reads it: the bounded scan, from the recall cache where the
files did not change, and the lexical ranking over it.

``recall`` (library, command line, fast path, MCP), ``check`` and both hooks call
:func:`read_corpus`; its result is, by construction, the one the cold scan
(:func:`dsh_compound.corpus.scan_corpus`) gives: the same rules (:func:`scanning.assemble`)
decide names, bounds and warnings, and each name's outcome is either read from the file
now or taken from the cache entry written when a file of exactly this identity was read.

A cache entry is used only when the file's ``(device, inode, size, mtime_ns, ctime_ns)``
equals the one recorded, and is recorded only when the file held still while it was read
(its identity before and after reading agree) and its change time was at least
:data:`SETTLED_NS` old. Any write to a file moves its change time to "now", so a file
written after an entry was recorded can never match it - even a same-size edit within one
tick of the file system's clock, which only the settling rule rules out (git calls such an
index entry "racily clean"). A file renamed over a record has a new inode. So a stale
entry is never served; at worst a file is read again.

Ranking uses the cache's inverted index (:mod:`dsh_compound.gram_index`) for the records it
covers and :func:`dsh_compound.scoring.score_text` for the others (records read now, or
changed since the index was built): the same scores either way. The index is rebuilt when
more than :data:`DELTA_LIMIT` records are outside it or gone from it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from array import array
from collections.abc import Callable
from pathlib import Path

from dsh_common import paths as common_paths
from dsh_compound import recall_cache
from dsh_compound.gram_index import GramIndex, slot_scores
from dsh_compound.scanning import (
    RECORD_SUFFIX,
    CachedRecord,
    FileKey,
    Outcome,
    ScanResult,
    StoredRecord,
    assemble,
    corpus_exists,
    corpus_path,
    file_key,
    list_names,
    open_corpus,
)
from dsh_compound.scoring import (
    FIELD_SEPARATOR,
    FIELD_WEIGHTS,
    Terms,
    score_text,
    searchable_text,
)

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: How old a file's change time must be before what it holds is cached (see the module
#: docstring); covers file systems with a coarse clock (2 s on FAT).
SETTLED_NS = 3_000_000_000
#: Records outside the index (new or changed since it was built), or index slots no record
#: uses any more, before the index is rebuilt.
DELTA_LIMIT = 32
_WEIGHTS = tuple(weight for _, weight in FIELD_WEIGHTS)
_RECORD = "r"
_MALFORMED = "m"
_NO_SLOT = -1

# The last cache this process mapped, per file: a long-lived process (the MCP server)
# maps it once and reuses it while the file's identity stays the same.
_MAPPED: dict[str, tuple[FileKey, recall_cache.LoadedCache, dict[str, _Entry]]] = {}


class CorpusView:
    """A corpus scan (:attr:`scan`) and the lexical ranking of its records."""

    __slots__ = ("_index", "_slots", "_texts", "scan")

    def __init__(
        self,
        scan: ScanResult,
        index: GramIndex | None = None,
        slots: dict[int, StoredRecord] | None = None,
        texts: dict[str, Callable[[], str]] | None = None,
    ) -> None:
        self.scan = scan
        self._index = index
        self._slots = slots or {}
        self._texts = texts or {}

    @property
    def records(self) -> list[StoredRecord]:
        """The accepted records, in scan order."""
        return self.scan.records

    def scores(self, terms: Terms) -> dict[str, int]:
        """Every accepted record's recall score for ``terms``, by id (zero when none)."""
        by_id: dict[str, int] = {}
        if self._index is not None and self._slots:
            try:
                counts = self._index.field_counts(terms.all)
                indexed = slot_scores(counts, _WEIGHTS, self._slots)
            except (IndexError, ValueError, OverflowError):  # a damaged index: score the text
                self._index, self._slots = None, {}
                return self.scores(terms)
            for slot, record in self._slots.items():
                by_id[record.id] = indexed.get(slot, 0)
        for record in self.scan.records:
            if record.id not in by_id:
                text = self._texts.get(record.id)
                by_id[record.id] = score_text(text() if text else record_text(record), terms)
        return by_id

    def ranked(self, terms: Terms) -> list[tuple[int, StoredRecord]]:
        """``(score, record)`` of every matching record, best first, ties by id."""
        scores = self.scores(terms)
        found = [(scores[r.id], r) for r in self.scan.records if scores[r.id] > 0]
        found.sort(key=lambda item: (-item[0], item[1].id))
        return found


def record_text(record: StoredRecord) -> str:
    """A record's normalised scored text (:func:`dsh_compound.scoring.searchable_text`)."""
    return searchable_text(record.metadata)


def read_corpus(workspace: common_paths.Workspace, *, cached: bool = True) -> CorpusView:
    """The corpus scan of ``workspace`` with its ranking; ``cached=False`` reads every file
    (the cold scan) and neither reads nor writes the cache."""
    if not corpus_exists(workspace):
        return CorpusView(ScanResult())
    directory = corpus_path(workspace)
    with open_corpus(workspace) as directory_fd:
        names = list_names(directory_fd)
        if not cached:
            from dsh_compound.corpus import read_outcome  # noqa: PLC0415

            scan = assemble(names, lambda name: read_outcome(directory, directory_fd, name)[0])
            return CorpusView(scan)
        reader = _Reader(directory, directory_fd, str(workspace.canonical))
        scan = assemble(names, reader.read)
    reader.save()
    return reader.view(scan)


class _Entry:
    """One name's cache entry. JSON row: ``[name, dev, ino, size, mtime_ns, ctime_ns, kind,
    ...]``, then for a record ``slot, text offset, text length, metadata offset, metadata
    length, digest, content status, unknown keys``, or for a malformed note its message."""

    __slots__ = (
        "digest",
        "key",
        "kind",
        "message",
        "meta",
        "name",
        "size",
        "slot",
        "status",
        "text",
        "unknown",
    )

    def __init__(self, name: str, key: FileKey, size: int, kind: str) -> None:
        self.name = name
        self.key = key
        self.size = size
        self.kind = kind
        self.message = ""
        self.slot = _NO_SLOT
        self.text = (0, 0)
        self.meta = (0, 0)
        self.digest = ""
        self.status = ""
        self.unknown: tuple[str, ...] = ()

    @classmethod
    def parse(cls, row: object) -> _Entry | None:
        """The entry a JSON row describes, or None for anything malformed."""
        try:
            if not isinstance(row, list) or not isinstance(row[0], str):
                return None
            key = (int(row[1]), int(row[2]), int(row[3]), int(row[4]), int(row[5]))
            entry = cls(row[0], key, key[2], str(row[6]))
            if entry.kind == _MALFORMED:
                entry.message = str(row[7])
                return entry
            if entry.kind != _RECORD or len(row) != 15:
                return None
            entry.slot = int(row[7])
            entry.text = (int(row[8]), int(row[9]))
            entry.meta = (int(row[10]), int(row[11]))
            entry.digest, entry.status = str(row[12]), str(row[13])
            entry.unknown = tuple(str(key) for key in row[14])
        except (IndexError, TypeError, ValueError):
            return None
        return entry

    def row(self) -> list[Any]:
        """The JSON row of this entry."""
        head = [self.name, *self.key, self.kind]
        if self.kind == _MALFORMED:
            return [*head, self.message]
        return [
            *head,
            self.slot,
            *self.text,
            *self.meta,
            self.digest,
            self.status,
            list(self.unknown),
        ]


def _mapped(
    path: Path, canonical: str, compat: str
) -> tuple[recall_cache.LoadedCache, dict[str, _Entry]] | None:
    """The mapped cache and its entries by name (reused while the file is the same)."""
    try:
        identity = file_key(os.stat(path, follow_symlinks=False))
    except OSError:
        _MAPPED.pop(str(path), None)
        return None
    known = _MAPPED.get(str(path))
    if known is not None and known[0] == identity and known[1].header.get("compat") == compat:
        return known[1], known[2]
    loaded = recall_cache.load(path, canonical, compat)
    if loaded is None:
        _MAPPED.pop(str(path), None)
        return None
    entries = {}
    for row in loaded.entries:
        entry = _Entry.parse(row)
        if entry is not None:
            entries[entry.name] = entry
    _MAPPED[str(path)] = (identity, loaded, entries)
    return loaded, entries


class _Fresh:
    """A file read now that may be cached: its identity and what reading it gave."""

    __slots__ = ("key", "name", "outcome")

    def __init__(self, name: str, key: FileKey, outcome: Outcome) -> None:
        self.name = name
        self.key = key
        self.outcome = outcome


class _Reader:
    """Reads one scan's names from the cache or the corpus, then saves what changed."""

    def __init__(self, directory: Path, directory_fd: int, canonical: str) -> None:
        self.directory = directory
        self.directory_fd = directory_fd
        self.canonical = canonical
        self.compat = recall_cache.compatibility_key()
        self.path = recall_cache.cache_path(canonical)
        self.loaded: recall_cache.LoadedCache | None = None
        self.entries: dict[str, _Entry] = {}
        mapped = _mapped(self.path, canonical, self.compat)
        if mapped is not None:
            self.loaded, self.entries = mapped
        #: What each name this scan read came from, in scan order: a cache entry, a file
        #: read now that may be cached, or None (read now, not cacheable).
        self.sources: dict[str, _Entry | _Fresh | None] = {}
        self.texts: dict[str, str] = {}  # normalised text of records read now, by id

    def read(self, name: str) -> Outcome:
        entry = self.entries.get(name)
        if entry is not None and self.loaded is not None:
            try:
                info = os.stat(name, dir_fd=self.directory_fd, follow_symlinks=False)
            except OSError:
                info = None
            if info is not None and stat.S_ISREG(info.st_mode) and entry.key == file_key(info):
                self.sources[name] = entry
                return self._outcome(entry, self.loaded)
        from dsh_compound.corpus import read_outcome  # noqa: PLC0415 - a file to parse

        settled = time.time_ns() - SETTLED_NS
        outcome, key = read_outcome(self.directory, self.directory_fd, name)
        cacheable = key is not None and outcome.size is not None and key[4] <= settled
        self.sources[name] = _Fresh(name, key, outcome) if key is not None and cacheable else None
        return outcome

    def _outcome(self, entry: _Entry, loaded: recall_cache.LoadedCache) -> Outcome:
        if entry.kind == _MALFORMED:
            return Outcome(entry.size, None, entry.message)
        record = CachedRecord(
            entry.name[: -len(RECORD_SUFFIX)],
            self.directory,
            content_status=entry.status,
            unknown_keys=entry.unknown,
            digest=entry.digest,
            decode=loaded.metadata,
            where=entry.meta,
        )
        return Outcome(entry.size, record)

    def text_of(self, record: StoredRecord) -> str:
        """The normalised text of a record read now (computed once per scan)."""
        text = self.texts.get(record.id)
        if text is None:
            text = self.texts[record.id] = record_text(record)
        return text

    def view(self, scan: ScanResult) -> CorpusView:
        """The view of ``scan``: indexed slots from the loaded cache, texts for the rest."""
        loaded = self.loaded
        texts: dict[str, Callable[[], str]] = {}
        for record_id, text in self.texts.items():
            texts[record_id] = _constant(text)
        if loaded is None:
            return CorpusView(scan, texts=texts)
        slots: dict[int, StoredRecord] = {}
        by_id = {record.id: record for record in scan.records}
        for name, source in self.sources.items():
            record = by_id.get(name[: -len(RECORD_SUFFIX)])
            if record is None or not isinstance(source, _Entry):
                continue
            if 0 <= source.slot < loaded.slots:
                slots[source.slot] = record
            else:
                texts[record.id] = _blob_text(loaded, *source.text)
        sections = loaded.sections
        index = GramIndex(
            sections["keys"],
            sections["starts"],
            sections["postings"],
            sections["fields"],
            loaded.mapping.find,
            base=loaded.blob_offset,
        )
        return CorpusView(scan, index, slots, texts)

    def save(self) -> None:
        """Write the cache again when this scan did not find exactly what it holds."""
        if not self.compat:
            return  # an install whose code cannot be identified never trusts a cache
        kept = {name for name, source in self.sources.items() if isinstance(source, _Entry)}
        fresh = any(isinstance(source, _Fresh) for source in self.sources.values())
        if not fresh and kept == set(self.entries):
            return
        try:
            data = self._render()
        except (ValueError, UnicodeError, OverflowError):
            return
        recall_cache.save(self.path, data)

    def _render(self) -> bytes:
        """The new cache file: the entries this scan used and the files it read now."""
        loaded = self.loaded
        slots = loaded.slots if loaded is not None else 0
        kept = [s for s in self.sources.values() if isinstance(s, _Entry)]
        fresh = [s for s in self.sources.values() if isinstance(s, _Fresh)]
        live = {entry.slot for entry in kept if entry.kind == _RECORD and 0 <= entry.slot < slots}
        outside = sum(1 for e in kept if e.kind == _RECORD and e.slot not in live)
        outside += sum(1 for f in fresh if f.outcome.record is not None)
        used = sum(e.text[1] + e.meta[1] for e in kept if e.kind == _RECORD)
        blob_size = len(loaded.sections["blob"]) if loaded is not None else 0
        rebuild = (
            loaded is None
            or outside > DELTA_LIMIT
            or slots - len(live) > DELTA_LIMIT
            or blob_size - used > max(1 << 20, blob_size // 2)
        )
        layout = _Layout(rebuild)
        if not rebuild and loaded is not None:
            layout.blob += loaded.sections["blob"]
        rows: list[list[Any]] = []
        for source in self.sources.values():
            if source is None:
                continue
            if isinstance(source, _Entry) and not rebuild:
                rows.append(source.row())
            elif isinstance(source, _Entry):
                rows.append(layout.add_entry(source, loaded))
            else:
                rows.append(layout.add_fresh(source, self))
        sections = layout.sections(loaded)
        header = {
            "format": recall_cache.FORMAT,
            "compat": self.compat,
            "workspace": self.canonical,
            "slots": layout.slots(loaded),
            "entries": rows,
        }
        return recall_cache.render(header, sections)


class _Layout:
    """Collects the blob, field offsets and texts of a cache file being written."""

    def __init__(self, rebuild: bool) -> None:
        self.rebuild = rebuild
        self.blob = bytearray()
        self.fields = array("I")
        self.texts: list[list[str]] = []  # per new slot, its field texts

    def add_entry(self, entry: _Entry, loaded: recall_cache.LoadedCache | None) -> list[Any]:
        """Copy a kept entry into a rebuilt file."""
        if entry.kind == _MALFORMED or loaded is None:
            return entry.row()
        text = loaded.blob(*entry.text).decode("utf-8")
        meta = loaded.blob(*entry.meta)
        moved = _Entry(entry.name, entry.key, entry.size, _RECORD)
        moved.digest, moved.status, moved.unknown = entry.digest, entry.status, entry.unknown
        return self._place(moved, text, meta)

    def add_fresh(self, fresh: _Fresh, reader: _Reader) -> list[Any]:
        """Add a file read now."""
        outcome = fresh.outcome
        entry = _Entry(fresh.name, fresh.key, fresh.key[2], _RECORD)
        record = outcome.record
        if record is None:
            entry.kind, entry.message = _MALFORMED, str(outcome.message)
            return entry.row()
        metadata = record.metadata
        meta = json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if json.loads(meta) != metadata:
            raise ValueError("metadata that does not survive a JSON round trip")
        entry.digest, entry.status = record.digest, record.content_status
        entry.unknown = record.unknown_keys
        return self._place(entry, reader.text_of(record), meta)

    def _place(self, entry: _Entry, text: str, meta: bytes) -> list[Any]:
        parts = text.split(FIELD_SEPARATOR)
        if len(parts) != len(FIELD_WEIGHTS):
            raise ValueError("a record's text does not split into its fields")
        text_bytes = text.encode("utf-8")
        offset = len(self.blob)
        if self.rebuild:
            entry.slot = len(self.texts)
            self.texts.append(parts)
            position = offset
            for part in parts:
                self.fields.append(position)
                position += len(part.encode("utf-8")) + 1  # the separator after it
            self.fields.append(offset + len(text_bytes))
        self.blob += text_bytes
        entry.text = (offset, len(text_bytes))
        entry.meta = (len(self.blob), len(meta))
        self.blob += meta
        return entry.row()

    def slots(self, loaded: recall_cache.LoadedCache | None) -> int:
        if self.rebuild or loaded is None:
            return len(self.texts)
        return loaded.slots

    def sections(self, loaded: recall_cache.LoadedCache | None) -> dict[str, bytes]:
        if self.rebuild or loaded is None:
            from dsh_compound.gram_index import build  # noqa: PLC0415 - only on a rebuild

            keys, starts, postings = build(self.texts)
            out = {
                "keys": keys.tobytes(),
                "starts": starts.tobytes(),
                "postings": postings.tobytes(),
                "fields": self.fields.tobytes(),
            }
        else:
            out = {
                name: loaded.sections[name].tobytes()
                for name in ("keys", "starts", "postings", "fields")
            }
        out["blob"] = bytes(self.blob)
        return out


def _constant(text: str) -> Callable[[], str]:
    return lambda: text


def _blob_text(loaded: recall_cache.LoadedCache, offset: int, length: int) -> Callable[[], str]:
    return lambda: loaded.blob(offset, length).decode("utf-8")

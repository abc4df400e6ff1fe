"""The corpus as the hooks need it, without re-parsing unchanged lessons at every prompt.

The prompt hook runs before every prompt. A full recall reads every record, parses and
validates its front matter and re-renders its body (~30 ms for 500 lessons), then
normalises every scored field (~10 ms) - for lessons that almost never change between two
prompts. This module keeps, per workspace, the normalised scored text, title and recorded
files of each record, keyed by its file's size, modification time, change time and inode,
in ``$DSH_HOME/cache/compound/<workspace hash>.json`` (owner-only; lesson text the
workspace already holds), and re-reads only the records whose key moved.

:func:`indexed_records` accepts exactly the records the corpus scan accepts - the same
sorted names, the same 500-name and 4 MiB bounds, the same skipped records - and
:func:`ranked` scores them as :func:`dsh_compound.retrieval.recall` does; both return
``None`` (the caller then runs the real recall or check) whenever anything is
unusual: more than 500 names, a name that is not UTF-8, a file that changed while read. A
cache that cannot be read or written is simply rebuilt or not kept. The hook still reads
each hit it shows through :func:`dsh_compound.corpus.read_record`, so what it prints comes
from the record itself, never from the cache; evidence status is always computed afresh
from the source files (the cache only spares parsing the records).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_common import paths as common_paths
from dsh_common.cli import is_undecodable
from dsh_common.jsonio import dumps_bytes, loads
from dsh_compound.corpus import RECORD_SUFFIX, corpus_exists, corpus_path, read_record_bytes
from dsh_compound.draft import validate_id
from dsh_compound.errors import CompoundError
from dsh_compound.limits import LIMITS
from dsh_compound.record import parse_record

CACHE_VERSION = 2
_MAX_CACHE_BYTES = 16 * 1024 * 1024


def cache_path(workspace: common_paths.Workspace) -> Path:
    """``$DSH_HOME/cache/compound/<hash of the canonical workspace path>.json``."""
    home = os.environ.get("DSH_HOME", "").strip()
    base = Path(home).expanduser() if home else Path.home() / ".dsh"
    name = hashlib.sha256(os.fsencode(workspace.canonical)).hexdigest()[:32]
    return base / "cache" / "compound" / f"{name}.json"


def _load(path: Path, root: str) -> dict[str, list[Any]]:
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_CACHE_BYTES + 1)
        document = loads(data)
    except (OSError, ValueError):  # a missing, unreadable or broken cache: rebuild it
        return {}
    if (
        not isinstance(document, dict)
        or document.get("version") != CACHE_VERSION
        or document.get("workspace") != root
        or not isinstance(document.get("records"), dict)
    ):
        return {}
    records: dict[str, list[Any]] = document["records"]
    return records


def _save(path: Path, root: str, records: dict[str, list[Any]]) -> None:
    from dsh_common.io import atomic_write  # noqa: PLC0415 - only when something changed

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        document = {"version": CACHE_VERSION, "workspace": root, "records": records}
        atomic_write(path, dumps_bytes(document), mode=0o600, durable=False)
    except (OSError, ValueError):
        pass


@dataclass(frozen=True)
class IndexedRecord:
    """What the hooks need of one record the scan accepts."""

    id: str
    text: str  # the normalised scored fields (retrieval.searchable_text)
    title: str
    files: list[dict[str, Any]]  # the recorded {path, sha256} entries


def _entry(data: bytes, record_id: str) -> list[Any] | None:
    # Imported here: retrieval loads ICU, which a warm session-start hook never needs.
    from dsh_compound.retrieval import searchable_text  # noqa: PLC0415

    try:
        metadata = parse_record(data, expected_id=record_id).metadata
    except CompoundError:
        return None  # malformed: recall and check skip it, and so do we
    return [searchable_text(metadata), metadata["title"], metadata["files"]]


def indexed_records(workspace: common_paths.Workspace) -> list[IndexedRecord] | None:
    """The records the corpus scan accepts, in its order, or None when unsure."""
    if not corpus_exists(workspace):
        return []
    directory = corpus_path(workspace)
    names = sorted(name for name in os.listdir(directory) if name.endswith(RECORD_SUFFIX))
    if len(names) > LIMITS.scan_names:
        return None
    root = str(workspace.canonical)
    location = cache_path(workspace)
    cached = _load(location, root)
    fresh: dict[str, list[Any]] = {}
    records: list[IndexedRecord] = []
    accepted = 0
    for name in names:
        record_id = name[: -len(RECORD_SUFFIX)]
        if is_undecodable(name):
            continue  # the scan skips a name that is not UTF-8, with a warning
        try:
            validate_id(record_id)
        except CompoundError:
            continue  # skipped with a warning
        try:
            info = os.lstat(directory / name)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > LIMITS.record_bytes:
            continue  # a link, a folder or an oversized note: the scan skips it too
        if accepted + info.st_size > LIMITS.scan_bytes:
            break  # the scan stops here: the 4 MiB bound
        key = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        entry = cached.get(name)
        if isinstance(entry, list) and len(entry) == 5 and entry[:4] == key:
            value = entry[4]
        else:
            try:
                data = read_record_bytes(directory / name, record_id)
            except CompoundError:
                return None
            if len(data) != info.st_size:
                return None  # written while we read it: let the real scan decide
            value = _entry(data, record_id)
        fresh[name] = [*key, value]
        if isinstance(value, list) and len(value) == 3:
            accepted += info.st_size
            records.append(IndexedRecord(record_id, *value))
    if fresh != cached:
        _save(location, root, fresh)
    return records


def ranked(
    workspace: common_paths.Workspace, query: str, limit: int
) -> list[tuple[int, str]] | None:
    """``[(score, id)]`` of the best ``limit`` records as recall ranks them, or None."""
    from dsh_compound.retrieval import (  # noqa: PLC0415
        _GRAM_INDEX_THRESHOLD,
        _score,
        _Terms,
        recall_terms,
    )

    records = indexed_records(workspace)
    if records is None:
        return None
    terms = _Terms.split(recall_terms(query))
    use_index = len(terms.short_han) > _GRAM_INDEX_THRESHOLD
    scored = [(_score(r.text, terms, use_gram_index=use_index), r.id) for r in records]
    best = sorted((item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1]))
    return best[:limit]

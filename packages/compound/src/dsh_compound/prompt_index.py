"""Recall's ranking for the prompt hook, without re-parsing unchanged lessons at every prompt.

The prompt hook runs before every prompt. A full recall reads every record, parses and
validates its front matter and re-renders its body (~30 ms for 500 lessons), then
normalises every scored field (~10 ms) - for lessons that almost never change between two
prompts. This module keeps, per workspace, the normalised scored text of each record keyed
by its file's size, modification time, change time and inode, in
``$DSH_HOME/cache/compound/<workspace hash>.json`` (owner-only; lesson text the workspace
already holds), and re-reads only records whose key moved.

It ranks exactly as :func:`dsh_compound.retrieval.recall` does - the same sorted names,
the same 500-name and 4 MiB bounds, the same skipped records, the same scoring - and says
so by returning ``None`` (the caller then runs the real recall) whenever anything is
unusual: more than 500 names, a name that is not UTF-8, a file that changed while read. A
cache that cannot be read or written is simply rebuilt or not kept. The hook still reads
each hit it shows through :func:`dsh_compound.corpus.read_record`, so what it prints comes
from the record itself, never from the cache.
"""

from __future__ import annotations

import hashlib
import os
import stat
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
from dsh_compound.retrieval import (
    _GRAM_INDEX_THRESHOLD,
    _score,
    _Terms,
    recall_terms,
    searchable_text,
)

CACHE_VERSION = 1
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


def ranked(
    workspace: common_paths.Workspace, query: str, limit: int
) -> list[tuple[int, str]] | None:
    """``[(score, id)]`` of the best ``limit`` records as recall ranks them, or None."""
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
    texts: list[tuple[str, str]] = []
    accepted = 0
    for name in names:
        record_id = name[: -len(RECORD_SUFFIX)]
        if is_undecodable(name):
            continue  # recall skips a name that is not UTF-8, with a warning
        try:
            validate_id(record_id)
        except CompoundError:
            continue  # recall skips it with a warning
        try:
            info = os.lstat(directory / name)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > LIMITS.record_bytes:
            continue  # a link, a folder or an oversized note: recall skips it too
        if accepted + info.st_size > LIMITS.scan_bytes:
            break  # recall stops here: the 4 MiB bound
        key = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        entry = cached.get(name)
        if isinstance(entry, list) and len(entry) == 5 and entry[:4] == key:
            text = entry[4]
        else:
            try:
                data = read_record_bytes(directory / name, record_id)
            except CompoundError:
                return None
            if len(data) != info.st_size:
                return None  # written while we read it: let recall decide
            try:
                text = searchable_text(parse_record(data, expected_id=record_id).metadata)
            except CompoundError:
                text = None  # malformed: recall skips it, and so do we
        fresh[name] = [*key, text]
        if isinstance(text, str):
            accepted += info.st_size
            texts.append((record_id, text))
    if fresh != cached:
        _save(location, root, fresh)
    terms = _Terms.split(recall_terms(query))
    use_index = len(terms.short_han) > _GRAM_INDEX_THRESHOLD
    scored = [(_score(text, terms, use_gram_index=use_index), rid) for rid, text in texts]
    best = sorted((item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1]))
    return best[:limit]

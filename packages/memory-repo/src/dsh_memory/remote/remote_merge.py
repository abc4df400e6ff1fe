"""Merge another machine's memory into ours without losing or overwriting a record.

The merge is decided path by path against the merge base (the empty tree when the two
histories share no commit), so every rule below is about one path and nothing else:

* a path only one side changed (added, modified or deleted) takes that side's version;
* changed on one side, deleted on the other: the change is kept;
* a record changed on both sides: git's clean three-way content merge when there is one;
  otherwise ours stays at the path and theirs is kept as a sibling record
  ``<name>.conflict-<commit>.md`` (the other machine's commit, abbreviated) whose
  front-matter ``id`` gets the same suffix, and the pair is listed in ``conflicts``. A
  conflict marker never reaches a record;
* ``summary.md`` changed on both sides without a clean merge: ours stays, theirs goes to
  ``archive/summary.conflict-<commit>.md``;
* the journal (``.sync/runs/``) is the union of both sides - each run has its own file. The
  same run's record changed on both sides keeps the version that finished last; two
  different runs that happen to share an id (two machines, the same second and pid) are
  both kept, theirs under ``<id>-conflict-<commit>``;
* derived and read-only files are never text-merged: ``.last-sync`` (this machine's own
  session watermark) always stays ours, and so do ``.sync/last-run.json`` (rewritten by the
  pull's journal step), ``README.md``, ``.sync/.gitignore`` and ``scripts/`` when both sides
  changed them.

Content merges go through ``git merge-tree --write-tree`` (object store only: no work tree,
no index), but only for the paths both sides changed, presented to git as three small
synthetic commits that hold just those paths. Git therefore has no added or deleted path to
pair as a rename: its rename detection (which git 2.39's ``merge-tree`` cannot switch off)
could otherwise merge one record's edit into an unrelated, similar record that was added as
another was deleted.

Records that end up sharing a front-matter ``id`` (each side added one) are told apart the
same way: the record that came from the other side gets the suffix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from dsh_common.errors import DshError
from dsh_common.jsonio import dumps
from dsh_memory.errors import CommitFailedError
from dsh_memory.store import frontmatter
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    MARKER_FILE,
    README_FILE,
    RUNS_DIR,
    SUMMARY_FILE,
    escape_name,
    is_payload_path,
)
from dsh_memory.write import journal
from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions

LAST_RUN_FILE = ".sync/last-run.json"
#: Where theirs goes when both sides rewrote the navigation file.
SUMMARY_CONFLICT_DIR = "archive"
#: Longest file name we create (bytes): well under the 255 of common file systems, with
#: room for the temporary names writers use beside a file.
MAX_SIBLING_NAME_BYTES = 200
#: Records above this size are left out of the id check (the sync's own limit is 1 MiB).
MAX_ID_READ_BYTES = 1024 * 1024
#: Blob bytes read per ``cat-file --batch`` (one batch for everything could pass the
#: runner's 32 MiB output cap on a large memory).
READ_CHUNK_BYTES = 8 * 1024 * 1024
#: This machine's own, whatever the other side holds.
ALWAYS_OURS = frozenset({LAST_SYNC_FILE})
#: Ours when both sides changed them (derived, or read-only for the host).
OURS_ON_CONFLICT = frozenset({LAST_RUN_FILE, README_FILE, MARKER_FILE, "scripts/filter_session.py"})
_STAGE_LINE = re.compile(rb"(?P<mode>[0-7]{6}) (?P<oid>[0-9a-f]{40,64}) (?P<stage>[123])\t")
_ID_LINE = re.compile(r"(?m)^id:[ \t]*(?P<value>[^\r\n]*?)[ \t]*(?=\r?$)")


@dataclass(frozen=True)
class Conflict:
    """A path both sides changed: ours stayed at ``path``, theirs is at ``kept_as``."""

    path: str
    kept_as: str

    def as_json(self) -> dict[str, str]:
        return {"path": escape_name(self.path), "keptAs": escape_name(self.kept_as)}


@dataclass
class MergeResult:
    """The resolved tree, the records kept aside (``conflicts``), the payload paths it
    changes (against ours), the bytes of every blob the merge wrote itself (by blob id),
    and the journal records of theirs kept under a new run id (``renamed_runs``)."""

    tree: str
    conflicts: list[Conflict]
    changed_paths: list[str]
    contents: dict[str, bytes] = field(default_factory=dict)
    renamed_runs: list[Conflict] = field(default_factory=list)


def merge_base(tx: GitTransactions, ours: str, theirs: str) -> str | None:
    """The best common ancestor, or None when the histories share no commit."""
    result = tx.git.run(["merge-base", ours, theirs], check=False)
    text = result.text.strip()
    return text if result.returncode == 0 and text else None


def with_id_suffix(text: str, suffix: str) -> str | None:
    """``text`` with its front-matter ``id`` suffixed, or None when it has no ``id`` line.

    Only the ``id:`` line inside the front-matter block changes; every other byte stays.
    """
    block = frontmatter.FRONT_MATTER_RE.match(text)
    if block is None:
        return None
    inner = block.group(1)
    line = _ID_LINE.search(inner)
    if line is None or not line.group("value"):
        return None
    value = line.group("value")
    quote = value[0] if value[0] in "'\"" and value.endswith(value[0]) and len(value) > 1 else ""
    bare = value[1:-1] if quote else value
    new_value = f"{quote}{bare}{suffix}{quote}"
    new_inner = inner[: line.start("value")] + new_value + inner[line.end("value") :]
    return text[: block.start(1)] + new_inner + text[block.end(1) :]


def front_matter_id(text: str) -> str | None:
    block = frontmatter.FRONT_MATTER_RE.match(text)
    if block is None:
        return None
    line = _ID_LINE.search(block.group(1))
    if line is None:
        return None
    return line.group("value").strip("'\"") or None


def sibling_path(path: str, tag: str, taken: set[str]) -> str:
    """``handbook/a/b.md`` -> ``handbook/a/b.conflict-<tag>.md`` (or ``-2``, ``-3`` ...)."""
    folder, _, name = path.rpartition("/")
    if path == SUMMARY_FILE:
        folder, name = SUMMARY_CONFLICT_DIR, SUMMARY_FILE
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    room = MAX_SIBLING_NAME_BYTES - len(f".conflict-{tag}-999.{suffix}".encode())
    cut = stem.encode("utf-8", "surrogateescape")[: max(room, 1)]
    short = cut.decode("utf-8", "ignore") or "record"
    for counter in range(1, 1000):
        extra = "" if counter == 1 else f"-{counter}"
        name = f"{short}.conflict-{tag}{extra}" + (f".{suffix}" if suffix else "")
        candidate = f"{folder}/{name}" if folder else name
        if candidate not in taken:
            return candidate
    raise CommitFailedError(f"no free name for the conflicting copy of {escape_name(path)}")


def iter_texts(
    tx: GitTransactions, blobs: Mapping[str, Blob], *, max_bytes: int | None = None
) -> Iterator[tuple[str, bytes]]:
    """``(path, contents)`` of ``blobs`` (path -> blob), read :data:`READ_CHUNK_BYTES` at a
    time (memory stays bounded however large the memory is); blobs over ``max_bytes`` are
    left out."""
    unique = sorted({blob.oid for blob in blobs.values()})
    sizes = {e.name: e.size for e in tx.git.cat_file_batch_check(unique)}
    wanted = [oid for oid in unique if max_bytes is None or sizes.get(oid, 0) <= max_bytes]
    paths_of: dict[str, list[str]] = {}
    for path, blob in blobs.items():
        paths_of.setdefault(blob.oid, []).append(path)
    chunk: list[str] = []
    total = 0
    for oid in [*wanted, None]:
        size = sizes.get(oid, 0) if oid is not None else 0
        if oid is None or (chunk and total + size > READ_CHUNK_BYTES):
            for found, data in tx.blob_contents(chunk).items():
                for path in paths_of[found]:
                    yield path, data
            chunk, total = [], 0
        if oid is not None:
            chunk.append(oid)
            total += size


def read_texts(
    tx: GitTransactions, blobs: Mapping[str, Blob], *, max_bytes: int | None = None
) -> dict[str, bytes]:
    """:func:`iter_texts` as a dict (for a few blobs: every one is held at once)."""
    return dict(iter_texts(tx, blobs, max_bytes=max_bytes))


class _Merge:
    """One merge of ``theirs`` into ``ours``: the changes to ours' tree, built path by path."""

    def __init__(self, tx: GitTransactions, ours: str, theirs: str) -> None:
        self.tx = tx
        self.tag = theirs[:8]
        self.ours_commit, self.theirs_commit = ours, theirs
        base = merge_base(tx, ours, theirs)
        self.base = tx.tree_files(base, ()) if base is not None else {}
        self.ours = tx.tree_files(ours, ())
        self.theirs = tx.tree_files(theirs, ())
        self.changes: dict[str, Blob | None] = {}
        self.contents: dict[str, bytes] = {}
        self.conflicts: list[Conflict] = []
        self.renamed_runs: list[Conflict] = []
        self._pending: dict[str, tuple[bytes, str]] = {}

    # -- the result so far -----------------------------------------------------------------

    def blob(self, path: str) -> Blob | None:
        return self.changes[path] if path in self.changes else self.ours.get(path)

    def taken(self) -> set[str]:
        held = {p for p in (*self.ours, *self.changes) if self.blob(p) is not None}
        return held | set(self._pending)

    def store(self, path: str, data: bytes, mode: str = FILE_MODE) -> None:
        """``path`` gets ``data`` (written to the object store at the next :meth:`flush`)."""
        self._pending[path] = (data, mode)
        self.changes[path] = None  # taken from now on; the blob id follows at the flush

    def flush(self) -> None:
        """Write every stored blob in one git process (fast-import for many)."""
        if not self._pending:
            return
        paths = sorted(self._pending)
        oids = self.tx.write_blobs([self._pending[p][0] for p in paths])
        for path, oid in zip(paths, oids, strict=True):
            data, mode = self._pending[path]
            self.contents[oid] = data
            self.changes[path] = Blob(mode, oid)
        self._pending.clear()

    # -- the rules ---------------------------------------------------------------------------

    def decide(self) -> list[str]:
        """Apply every one-path rule; return the payload paths that need a content merge."""
        both: list[str] = []
        runs: list[str] = []
        for path in sorted(set(self.base) | set(self.ours) | set(self.theirs)):
            base, ours, theirs = self.base.get(path), self.ours.get(path), self.theirs.get(path)
            if path in ALWAYS_OURS or theirs in (base, ours):
                continue  # theirs brings nothing new (or exactly what ours has)
            if ours == base:
                self.changes[path] = theirs  # only theirs changed it
            elif ours is None or theirs is None:
                self.changes[path] = ours or theirs  # modify/delete: the change is kept
            elif path.startswith(f"{RUNS_DIR}/"):
                runs.append(path)
            elif is_payload_path(path):
                both.append(path)
            # else: both changed an operational file: ours (OURS_ON_CONFLICT and the rest)
        self.union_runs(runs)
        return both

    def union_runs(self, paths: list[str]) -> None:
        """Run records both sides wrote differently: the later of one run, or both runs."""
        if not paths:
            return
        texts = read_texts(
            self.tx,
            {
                **{f"o:{p}": self.ours[p] for p in paths},
                **{f"t:{p}": self.theirs[p] for p in paths},
            },
        )
        for path in paths:
            ours, theirs = _record(texts.get(f"o:{path}")), _record(texts.get(f"t:{path}"))
            if _same_run(ours, theirs):
                if str(theirs.get("finished_at") or "") > str(ours.get("finished_at") or ""):
                    self.changes[path] = self.theirs[path]
                continue
            renamed = f"{theirs.get('run_id')}-conflict-{self.tag}"
            if not journal.is_valid_run_id(renamed) or not theirs:
                continue  # an unreadable record of theirs: ours stays, theirs is in history
            kept = journal.run_record_path(renamed)
            self.store(kept, (dumps({**theirs, "run_id": renamed}) + "\n").encode("utf-8"))
            self.renamed_runs.append(Conflict(path, kept))
        self.flush()

    def content_merge(self, paths: list[str]) -> None:
        """Git's three-way content merge of the records both sides changed; a record git
        cannot merge cleanly keeps ours at its path and theirs beside it."""
        if not paths:
            return
        merged, conflicted = _merge_contents(self.tx, self.base, self.ours, self.theirs, paths)
        for path in paths:
            if path not in conflicted and path in merged:
                self.changes[path] = merged[path]
        aside = sorted(p for p in paths if p in conflicted or p not in merged)
        texts = read_texts(self.tx, {p: self.theirs[p] for p in aside})
        for path in aside:
            self.keep_theirs_aside(path, texts.get(path))
        self.flush()

    def keep_theirs_aside(self, path: str, text: bytes | None) -> None:
        sibling = sibling_path(path, self.tag, self.taken())
        theirs = self.theirs[path]
        renamed = None
        if text is not None:
            renamed = with_id_suffix(
                text.decode("utf-8", "surrogateescape"), f"-conflict-{self.tag}"
            )
        if renamed is None:
            self.changes[sibling] = theirs  # no id to tell apart (or not text): as it is
        else:
            self.store(sibling, renamed.encode("utf-8", "surrogateescape"), theirs.mode)
        self.conflicts.append(Conflict(path, sibling))

    def dedupe_ids(self) -> None:
        """Records that share an id after the merge: the one from theirs gets the suffix."""
        records = {
            p: b
            for p in self.taken()
            if frontmatter.is_record_path(p) and (b := self.blob(p)) is not None
        }
        if all(self.ours.get(p) == b for p, b in records.items()):
            return  # no record changed: ours' ids were already as they are
        by_id: dict[str, list[str]] = {}
        for path, data in iter_texts(self.tx, records, max_bytes=MAX_ID_READ_BYTES):
            identifier = front_matter_id(data.decode("utf-8", "replace"))
            if identifier:
                by_id.setdefault(identifier, []).append(path)
        used = set(by_id)
        shared = {i: paths for i, paths in by_id.items() if len(paths) > 1}
        renamed = {p for i, paths in shared.items() for p in self._renamed(paths, records)}
        texts = read_texts(self.tx, {p: records[p] for p in renamed})
        for identifier, paths in sorted(shared.items()):
            for path in self._renamed(paths, records):
                suffix = _free_suffix(identifier, self.tag, used)
                changed = with_id_suffix(texts[path].decode("utf-8", "surrogateescape"), suffix)
                if changed is not None:
                    used.add(identifier + suffix)
                    self.store(path, changed.encode("utf-8", "surrogateescape"), records[path].mode)
        self.flush()

    def _renamed(self, paths: list[str], records: Mapping[str, Blob]) -> list[str]:
        """Of records sharing one id, those that get the suffix: all but ours (unchanged by
        the merge), or all but the first when none is ours."""
        keepers = [p for p in paths if self.ours.get(p) == records[p]] or sorted(paths)[:1]
        return sorted(p for p in paths if p not in keepers)

    def check_shapes(self) -> None:
        """A path that is a file on one side and a folder on the other cannot be merged by
        these rules: refused, nothing committed."""
        files = self.taken()
        for path in files:
            parts = path.split("/")
            for depth in range(1, len(parts)):
                prefix = "/".join(parts[:depth])
                if prefix in files:
                    raise CommitFailedError(
                        f"{escape_name(prefix)} is a file on one machine and a folder on the"
                        " other: rename one of them by hand, then pull again"
                    )

    def result(self) -> MergeResult:
        changes = {p: b for p, b in self.changes.items() if b != self.ours.get(p)}
        tree = self.tx.build_tree(self.ours_commit, changes)
        dropped = self.tx.tree_mismatches(tree, changes)
        if dropped:
            raise CommitFailedError(f"git left {escape_name(dropped[0])} out of the merge")
        changed = sorted(p for p in changes if is_payload_path(p))
        return MergeResult(tree, self.conflicts, changed, self.contents, self.renamed_runs)


def _record(data: bytes | None) -> dict[str, Any]:
    try:
        value = orjson.loads(data or b"")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _same_run(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Two versions of one run's record (it was journaled again, ``interrupted`` then
    finished by ``recover``) - not two runs that share an id: those have different apply
    commits (two machines, one second, one pid: the same ``<stamp>-edit-<pid>``)."""
    keys = ("run_id", "operation", "started_at")
    if not ours or any(ours.get(k) != theirs.get(k) for k in keys):
        return False
    applied = {ours.get("apply_commit"), theirs.get("apply_commit")} - {None}
    return len(applied) <= 1


def _free_suffix(identifier: str, tag: str, used: set[str]) -> str:
    for counter in range(1, 1000):
        suffix = f"-conflict-{tag}" + ("" if counter == 1 else f"-{counter}")
        if identifier + suffix not in used:
            return suffix
    raise CommitFailedError(f"no free id for a copy of {identifier}")


def _merge_contents(
    tx: GitTransactions,
    base: Mapping[str, Blob],
    ours: Mapping[str, Blob],
    theirs: Mapping[str, Blob],
    paths: Iterable[str],
) -> tuple[dict[str, Blob], set[str]]:
    """(merged blobs of the cleanly merged paths, the conflicted paths) for ``paths``.

    Three throw-away commits hold only these paths (base: those it has), so git sees every
    path modified (or added) on both sides and nothing else.
    """
    wanted = sorted(paths)
    message = "dsh-memory merge (not part of any history)"
    base_tree = tx.build_tree(None, {p: base[p] for p in wanted if p in base})
    base_commit = tx.commit_tree(base_tree, [], message)
    sides = [
        tx.commit_tree(tx.build_tree(None, {p: side[p] for p in wanted}), [base_commit], message)
        for side in (ours, theirs)
    ]
    result = tx.git.run(["merge-tree", "--write-tree", "-z", *sides], check=False, timeout=120)
    if result.returncode not in (0, 1):
        raise CommitFailedError(
            f"git merge-tree failed (exit {result.returncode}): {result.stderr.strip()[:200]}"
        )
    fields = result.stdout.split(b"\0")
    tree = fields[0].decode("ascii").strip()
    conflicted: set[str] = set()
    for entry in fields[1:]:
        if not entry:
            break  # the empty entry before git's informational messages
        match = _STAGE_LINE.match(entry)
        if match is None:
            raise CommitFailedError("git merge-tree printed a conflict line we cannot read")
        conflicted.add(entry[match.end() :].decode("utf-8", "surrogateescape"))
    merged = tx.tree_files(tree, ())
    return {p: merged[p] for p in wanted if p in merged}, conflicted


def merge_commits(tx: GitTransactions, ours: str, theirs: str) -> MergeResult:
    """The resolved merge of ``theirs`` into ``ours`` (a tree; nothing is committed)."""
    try:
        merge = _Merge(tx, ours, theirs)
        merge.content_merge(merge.decide())
        merge.dedupe_ids()
        merge.check_shapes()
        return merge.result()
    except (DshError, UnicodeError) as exc:
        if isinstance(exc, CommitFailedError):
            raise
        raise CommitFailedError(f"the merge could not be computed: {exc}") from exc


def describe(result: MergeResult) -> dict[str, Any]:
    """The JSON fields a pull reports about its merge."""
    return {"conflicts": [c.as_json() for c in result.conflicts]}

"""Merge another machine's memory into ours without losing or overwriting a record.

``git merge-tree --write-tree`` computes the three-way merge of two commits in the object
store alone (no work tree, no index) and names every conflicted path with its stages
(1 base, 2 ours, 3 theirs). Where git merged cleanly, its result stands. Where it could
not, the conflicted file in its tree holds conflict markers, so that file is *replaced*
by one of the stage blobs - a marker never reaches a record:

* a record changed on both sides (or added at the same path on both): ours stays at the
  path, theirs is kept as a sibling record ``<name>.conflict-<commit>.md`` (the other
  machine's commit, abbreviated) whose front-matter ``id`` gets the same suffix, and the
  pair is listed in ``conflicts``;
* changed on one side, deleted on the other: the change is kept;
* ``summary.md`` changed on both sides: ours stays, theirs is kept under ``archive/``;
* the journal (``.sync/runs/``) is the union of both sides - each run has its own file;
  a run record changed on both sides keeps the one that finished last;
* derived files are not text-merged: ``.last-sync`` (this machine's session watermark)
  and ``README.md`` stay ours, ``.sync/last-run.json`` is rewritten by the journal step.

Records that end up sharing a front-matter ``id`` (each side added one) are told apart the
same way: the record that came from the other side gets the suffix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from dsh_common.errors import GitError
from dsh_memory import frontmatter
from dsh_memory.errors import CommitFailedError
from dsh_memory.root import LAST_SYNC_FILE, README_FILE, RECORD_DIRS, RUNS_DIR, SUMMARY_FILE
from dsh_memory.transactions import Blob, GitTransactions

LAST_RUN_FILE = ".sync/last-run.json"
#: Where theirs goes when both sides rewrote the navigation file.
SUMMARY_CONFLICT_DIR = "archive"
#: Longest file name we create (bytes): well under the 255 of common file systems, with
#: room for the temporary names writers use beside a file.
MAX_SIBLING_NAME_BYTES = 200
_STAGE_LINE = re.compile(rb"(?P<mode>[0-7]{6}) (?P<oid>[0-9a-f]{40,64}) (?P<stage>[123])\t")
_ID_LINE = re.compile(r"(?m)^id:[ \t]*(?P<value>[^\r\n]*?)[ \t]*(?=\r?$)")


@dataclass(frozen=True)
class Conflict:
    """A path both sides changed: ours stayed at ``path``, theirs is at ``kept_as``."""

    path: str
    kept_as: str

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "keptAs": self.kept_as}


@dataclass(frozen=True)
class MergeResult:
    """The resolved tree, the conflicts kept aside, and the payload paths it changes."""

    tree: str
    conflicts: list[Conflict]
    changed_paths: list[str]


def _is_payload(path: str) -> bool:
    return path == SUMMARY_FILE or path.split("/", 1)[0] in RECORD_DIRS


def _merge_tree(
    tx: GitTransactions, ours: str, theirs: str
) -> tuple[str, dict[str, dict[int, Blob]]]:
    """``(tree, {path: {stage: blob}})`` of git's merge (conflicted paths only in the map)."""
    result = tx.git.run(
        ["merge-tree", "--write-tree", "-z", "--allow-unrelated-histories", ours, theirs],
        check=False,
        timeout=120,
    )
    if result.returncode not in (0, 1):
        raise CommitFailedError(
            f"git merge-tree failed (exit {result.returncode}): {result.stderr.strip()[:200]}"
        )
    fields = result.stdout.split(b"\0")
    tree = fields[0].decode("ascii").strip()
    stages: dict[str, dict[int, Blob]] = {}
    for field in fields[1:]:
        if not field:
            break  # the empty entry before git's informational messages
        match = _STAGE_LINE.match(field)
        if match is None:
            raise CommitFailedError("git merge-tree printed a conflict line we cannot read")
        path = field[match.end() :].decode("utf-8", "surrogateescape")
        blob = Blob(match.group("mode").decode(), match.group("oid").decode())
        stages.setdefault(path, {})[int(match.group("stage"))] = blob
    return tree, stages


def _sibling_path(path: str, tag: str, taken: set[str]) -> str:
    """``handbook/a/b.md`` -> ``handbook/a/b.conflict-<tag>.md`` (or ``-2``, ``-3`` …)."""
    folder, _, name = path.rpartition("/")
    if path == SUMMARY_FILE:
        folder, name = SUMMARY_CONFLICT_DIR, SUMMARY_FILE
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, ""
    ending = f".conflict-{tag}" + (f".{suffix}" if suffix else "")
    room = MAX_SIBLING_NAME_BYTES - len(ending.encode()) - 4
    cut = stem.encode()[: max(room, 1)].decode("utf-8", "ignore") or "record"
    for counter in range(1, 1000):
        extra = "" if counter == 1 else f"-{counter}"
        candidate = f"{folder}/{cut}{ending.replace(f'-{tag}', f'-{tag}{extra}', 1)}"
        if candidate not in taken:
            return candidate
    raise CommitFailedError(f"no free name for the conflicting copy of {path}")


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
    value = line.group("value").strip("'\"")
    new_inner = inner[: line.start("value")] + f"{value}{suffix}" + inner[line.end("value") :]
    start = block.start(1)
    return text[:start] + new_inner + text[block.end(1) :]


def _front_matter_id(text: str) -> str | None:
    block = frontmatter.FRONT_MATTER_RE.match(text)
    if block is None:
        return None
    line = _ID_LINE.search(block.group(1))
    return line.group("value").strip("'\"") if line is not None else None


def _finished_at(data: bytes) -> str:
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(record, dict):
        return ""
    return str(record.get("finished_at") or record.get("started_at") or "")


class _Resolution:
    """The changes that turn git's merged tree into ours, built path by path."""

    def __init__(self, tx: GitTransactions, tag: str, taken: Iterable[str]) -> None:
        self.tx = tx
        self.tag = tag
        self.changes: dict[str, Blob | None] = {}
        self.new_contents: dict[str, bytes] = {}
        self.conflicts: list[Conflict] = []
        self.taken = set(taken)

    def keep(self, path: str, blob: Blob | None) -> None:
        self.changes[path] = blob

    def keep_theirs_aside(self, path: str, ours: Blob, theirs: Blob, text: bytes) -> None:
        sibling = _sibling_path(path, self.tag, self.taken)
        self.taken.add(sibling)
        self.changes[path] = ours
        renamed = with_id_suffix(text.decode("utf-8", "surrogateescape"), f"-conflict-{self.tag}")
        if renamed is None:
            self.changes[sibling] = theirs
        else:
            self.new_contents[sibling] = renamed.encode("utf-8", "surrogateescape")
        self.conflicts.append(Conflict(path, sibling))


def _resolve(
    tx: GitTransactions, stages: Mapping[str, dict[int, Blob]], tag: str, taken: Iterable[str]
) -> _Resolution:
    resolution = _Resolution(tx, tag, taken)
    theirs_texts = tx.blob_contents(
        entry[3].oid
        for path, entry in stages.items()
        if 2 in entry and 3 in entry and (_is_payload(path) or path.startswith(f"{RUNS_DIR}/"))
    )
    for path, entry in sorted(stages.items()):
        ours, theirs = entry.get(2), entry.get(3)
        if path in (LAST_SYNC_FILE, README_FILE, LAST_RUN_FILE):
            resolution.keep(path, ours)  # derived or read-only: never text-merged
        elif ours is None or theirs is None:
            resolution.keep(path, ours or theirs)  # changed on one side, deleted on the other
        elif path.startswith(f"{RUNS_DIR}/"):
            ours_text = tx.blob_contents([ours.oid]).get(ours.oid, b"")
            later = (
                theirs if _finished_at(theirs_texts[theirs.oid]) > _finished_at(ours_text) else ours
            )
            resolution.keep(path, later)
        elif _is_payload(path):
            resolution.keep_theirs_aside(path, ours, theirs, theirs_texts[theirs.oid])
        else:
            resolution.keep(path, ours)
    return resolution


def _dedupe_ids(
    tx: GitTransactions, tree: str, ours_files: Mapping[str, Blob], tag: str
) -> dict[str, bytes]:
    """New contents for records that share an ``id`` with another (theirs get the suffix)."""
    files = tx.tree_files(tree)
    records = {p: b for p, b in files.items() if frontmatter.is_record_path(p)}
    texts = tx.blob_contents(b.oid for b in records.values())
    by_id: dict[str, list[str]] = {}
    for path, blob in records.items():
        identifier = _front_matter_id(texts.get(blob.oid, b"").decode("utf-8", "replace"))
        if identifier:
            by_id.setdefault(identifier, []).append(path)
    renamed: dict[str, bytes] = {}
    for identifier, paths in by_id.items():
        if len(paths) < 2:
            continue
        # Ours (unchanged by the merge) keep their id; the others are told apart.
        keepers = [p for p in paths if ours_files.get(p) == records[p]]
        keeper = keepers[0] if keepers else sorted(paths)[0]
        for index, path in enumerate(sorted(p for p in paths if p != keeper), start=1):
            suffix = f"-conflict-{tag}" + ("" if index == 1 else f"-{index}")
            text = texts[records[path].oid].decode("utf-8", "surrogateescape")
            changed = with_id_suffix(text, suffix)
            if changed is not None:
                renamed[path] = changed.encode("utf-8", "surrogateescape")
        del identifier
    return renamed


def merge_commits(tx: GitTransactions, ours: str, theirs: str) -> MergeResult:
    """The resolved merge of ``theirs`` into ``ours`` (a tree; nothing is committed)."""
    tag = theirs[:8]
    try:
        merged, stages = _merge_tree(tx, ours, theirs)
        ours_files = tx.tree_files(ours, ())
        resolution = _resolve(tx, stages, tag, tx.tree_files(merged, ()))
        oids = tx.write_blobs(list(resolution.new_contents.values()))
        changes = dict(resolution.changes)
        for path, oid in zip(resolution.new_contents, oids, strict=True):
            changes[path] = Blob("100644", oid)
        tree = tx.build_tree(merged, changes) if changes else merged
        renamed = _dedupe_ids(tx, tree, ours_files, tag)
        if renamed:
            renamed_oids = tx.write_blobs(list(renamed.values()))
            tree = tx.build_tree(
                tree,
                {
                    path: Blob("100644", oid)
                    for path, oid in zip(renamed, renamed_oids, strict=True)
                },
            )
        final = tx.tree_files(tree, ())
    except GitError as exc:
        raise CommitFailedError(f"the merge could not be computed: {exc}") from exc
    changed = sorted(
        p
        for p in set(final) | set(ours_files)
        if _is_payload(p) and final.get(p) != ours_files.get(p)
    )
    return MergeResult(tree=tree, conflicts=resolution.conflicts, changed_paths=changed)


def describe(result: MergeResult) -> dict[str, Any]:
    """The JSON fields a pull reports about its merge."""
    return {"conflicts": [c.as_json() for c in result.conflicts]}

"""The comparison itself: recorded ``(commit, path)`` snapshots against the index and work tree.

A constant number of git processes answers any number of pairs (see ``_git.inspect``): one
``cat-file --batch-check`` (commits, recorded blobs, the recorded directories' trees), one
``ls-files -v -s`` (index flags, modes, staged blobs), two ``check-attr`` (filters and
conversions, work tree and index), one ``hash-object --no-filters`` (work-tree blobs), one
``cat-file --batch`` of the distinct directory trees (the recorded file modes), and at most one
``git config`` (``core.autocrlf``, ``core.fileMode``, ``core.symlinks``) when a line ending or a
mode is in question. Content is hashed raw and line-ending conversion redone in Python
(``_git.conversion``): no filter, no conversion, nothing the repository names is ever run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from dsh_knowledge._git.conversion import (
    MODE_EXECUTABLE,
    MODE_SYMLINK,
    CrlfAction,
    WorktreeConfig,
    blob_id,
    crlf_action,
    parse_tree,
    parse_worktree_config,
    read_lf_form,
    would_convert_crlf,
)
from dsh_knowledge._git.session import (
    FULL_OBJECT_ID,
    SnapshotCheck,
    _GitFailure,
    _Session,
    _split_nul,
    _unverifiable,
)

# Attributes whose value changes the bytes git would store for a work-tree file. ``filter``
# names a program (never run, always unsafe); the others are built-in conversions that make a
# raw ``--no-filters`` hash differ from the stored blob without the content having changed.
_FILTER_ATTRIBUTE = "filter"
# Line-ending conversion only turns CRLF into LF on the way in: we can redo that in Python.
_LINE_ENDING_ATTRIBUTES = ("text", "eol", "crlf")
# These rewrite content in ways we do not reproduce ($Id$ collapsing, re-encoding).
_OPAQUE_ATTRIBUTES = ("ident", "working-tree-encoding")
_CHECKED_ATTRIBUTES = (_FILTER_ATTRIBUTE, *_LINE_ENDING_ATTRIBUTES, *_OPAQUE_ATTRIBUTES)
#: stdout cap for the one ``cat-file --batch`` reading the recorded commits' directory trees
#: (git metadata, not file contents: a directory of 100,000 files is a few MiB).
MAX_GIT_TREE_OUTPUT_BYTES = 16 * 1024 * 1024
_UNSET_ATTRIBUTE_VALUES = frozenset({"unspecified", "unset"})


def _local_state(root: str, path: str) -> tuple[Literal["present", "missing", "unsafe"], int]:
    """lstat every segment: a symlink anywhere is unsafe; the last must be a regular file.

    Also returns the final file's ``st_mode`` (0 unless present): its executable bit is part
    of what git compares.
    """
    current = root
    segments = path.split("/")
    for index, segment in enumerate(segments):
        current = os.path.join(current, segment)
        try:
            # lstat, not stat: a symlinked directory must not be followed into.
            info = os.lstat(current)
        except FileNotFoundError:
            return "missing", 0
        except NotADirectoryError:
            return "missing", 0
        except OSError:
            return "unsafe", 0
        if stat.S_ISLNK(info.st_mode):
            return "unsafe", 0
        final = index == len(segments) - 1
        if final and not stat.S_ISREG(info.st_mode):
            return "unsafe", 0
        if not final and not stat.S_ISDIR(info.st_mode):
            return "missing", 0
    return "present", info.st_mode


def _index_entries(
    session: _Session, root: str, paths: Sequence[str]
) -> tuple[dict[str, tuple[str, str]], set[str]]:
    """(path -> (staged mode, staged blob), paths whose index state makes comparing unsafe)."""
    staged: dict[str, tuple[str, str]] = {}
    unsafe: set[str] = set()
    if not paths:
        return staged, unsafe
    wanted = set(paths)
    result = session.run_ok(root, ["ls-files", "-v", "-s", "-z", "--", *paths])
    for record in _split_nul(result.stdout):
        meta, tab, raw_path = record.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 4 or len(fields[0]) != 1:
            raise _GitFailure("malformed_output")
        path = raw_path.decode("utf-8", "surrogateescape")
        if path not in wanted:
            # --literal-pathspecs on a regular file matches only itself; anything else is odd.
            raise _GitFailure("malformed_output")
        tag, mode = fields[0].decode(), fields[1].decode()
        object_id, stage = fields[2].decode(), fields[3].decode()
        # `ls-files -v` prints "H" for an ordinary cached entry; lowercase for
        # assume-unchanged, "S"/"s" for skip-worktree, "M" for unmerged. Their work-tree state
        # cannot be trusted, and a second entry for one path means a merge in progress.
        if tag != "H" or stage != "0" or path in staged:
            unsafe.add(path)
        staged[path] = (mode, object_id)
    return staged, unsafe


@dataclass
class _Attributes:
    filtered: set[str]
    opaque: set[str]
    #: path -> {"text"|"crlf"|"eol": value} as ``git add`` would read them (work tree first).
    line_endings: dict[str, dict[str, str]]


def _attributes(session: _Session, root: str, paths: Sequence[str]) -> _Attributes:
    """Which paths have a filter driver, a line-ending conversion, or another conversion.

    Both the work-tree and the index ``.gitattributes`` are read (``--cached``), as the earlier
    tool did: either one could make git run a filter on this path. Line-ending values come
    from the first read only: without ``--cached``, ``check-attr`` answers in git's check-in
    direction (work-tree ``.gitattributes``, the index's where a file is missing), which is
    what storing the file would use.
    """
    found = _Attributes(set(), set(), {p: {} for p in paths})
    if not paths:
        return found
    payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    per_path = 3 * len(_CHECKED_ATTRIBUTES)
    for cached in (False, True):
        args = ["check-attr", "--stdin", "-z", *(["--cached"] if cached else [])]
        result = session.run_ok(root, [*args, *_CHECKED_ATTRIBUTES], input=payload)
        fields = _split_nul(result.stdout)
        if len(fields) != per_path * len(paths):
            raise _GitFailure("malformed_output")
        for offset in range(0, len(fields), 3):
            raw_path, raw_attribute, value = fields[offset : offset + 3]
            path = paths[offset // per_path]
            if raw_path.decode("utf-8", "surrogateescape") != path:
                raise _GitFailure("malformed_output")
            attribute = raw_attribute.decode("utf-8", "replace")
            text = value.decode("utf-8", "replace")
            if attribute in _LINE_ENDING_ATTRIBUTES:
                if not cached:
                    # "unset" matters here: -text / binary forbids any conversion.
                    found.line_endings[path][attribute] = text
                continue
            if text in _UNSET_ATTRIBUTE_VALUES:
                continue
            if attribute == _FILTER_ATTRIBUTE:
                found.filtered.add(path)
            else:
                found.opaque.add(path)
    return found


def _worktree_config(session: _Session, root: str) -> WorktreeConfig:
    """core.autocrlf, core.fileMode and core.symlinks in one ``git config`` call."""
    result = session.run(
        root,
        [
            "config",
            "-z",
            "--type=bool-or-str",
            "--get-regexp",
            r"^core\.(autocrlf|filemode|symlinks)$",
        ],
    )
    if result.returncode == 1:  # none of them is set
        return WorktreeConfig()
    config = parse_worktree_config(result.stdout) if result.returncode == 0 else None
    if config is None:
        raise _GitFailure("command_failed")
    return config


def _recorded_modes(
    session: _Session, root: str, trees: dict[tuple[str, str], str], id_length: int
) -> dict[tuple[str, str], dict[bytes, str]]:
    """(commit, directory) -> {entry name: mode}, reading each distinct tree once."""
    distinct = sorted(set(trees.values()))
    if not distinct:
        return {}
    payload = ("\n".join(distinct) + "\n").encode()
    out = session.run_ok(
        root, ["cat-file", "--batch"], input=payload, max_output=MAX_GIT_TREE_OUTPUT_BYTES
    ).stdout
    parsed: dict[str, dict[bytes, str]] = {}
    position = 0
    for tree_id in distinct:
        newline = out.find(b"\n", position)
        header = out[position:newline].split(b" ") if newline >= 0 else []
        if (
            len(header) != 3
            or header[0] != tree_id.encode()
            or header[1] != b"tree"
            or not header[2].isdigit()
        ):
            raise _GitFailure("malformed_output")
        size = int(header[2])
        content = out[newline + 1 : newline + 1 + size]
        entries = parse_tree(content, id_length // 2)
        if len(content) != size or entries is None:
            raise _GitFailure("malformed_output")
        parsed[tree_id] = entries
        position = newline + 1 + size + 1
    return {key: parsed[tree_id] for key, tree_id in trees.items()}


def _hash_worktree(session: _Session, root: str, paths: Sequence[str]) -> dict[str, str]:
    if not paths:
        return {}
    data = ("\n".join(paths) + "\n").encode("utf-8", "surrogateescape")
    # --no-filters: a clean filter is a program the repository names; it must never run.
    result = session.run_ok(root, ["hash-object", "--no-filters", "--stdin-paths"], input=data)
    ids = result.text.split()
    if len(ids) != len(paths) or not all(FULL_OBJECT_ID.fullmatch(i) for i in ids):
        raise _GitFailure("malformed_output")
    return dict(zip(paths, ids, strict=True))


def _object_types(session: _Session, root: str, names: Sequence[str]) -> list[tuple[str, str]]:
    """(object id, type) per name via one ``cat-file --batch-check``; type "missing" if absent."""
    payload = ("\n".join(names) + "\n").encode("utf-8", "surrogateescape")
    result = session.run_ok(root, ["cat-file", "--batch-check"], input=payload)
    lines = result.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) != len(names) + 1 or lines[-1] != "":
        raise _GitFailure("malformed_output")
    answers: list[tuple[str, str]] = []
    for name, line in zip(names, lines, strict=False):
        if line in (f"{name} missing", f"{name} ambiguous"):
            answers.append(("", "missing"))
            continue
        parts = line.split(" ")
        if len(parts) != 3 or not FULL_OBJECT_ID.fullmatch(parts[0]):
            raise _GitFailure("malformed_output")
        answers.append((parts[0].lower(), parts[1]))
    return answers


def _compare_pairs(
    session: _Session,
    root: str,
    pairs: list[tuple[str, str]],
    answers: dict[tuple[str, str], SnapshotCheck],
    missing_path_reason: str,
) -> str:
    """Fill ``answers`` for ``pairs``; return HEAD's commit id. Raises _GitFailure for the rest."""
    # 1. One cat-file answers HEAD, every commit, every commit:path blob and the tree of every
    #    commit:directory (for the recorded file modes).
    commits = sorted({commit for commit, _ in pairs})
    queryable = [pair for pair in pairs if "\n" not in pair[1] and "\r" not in pair[1]]
    for pair in pairs:
        if pair not in queryable:
            # The batch protocols are line-based; such a path cannot be asked about safely.
            answers[pair] = _unverifiable("unsafe_path")
    directories = sorted({(commit, path.rpartition("/")[0]) for commit, path in queryable})
    names = ["HEAD^{commit}", *(f"{c}^{{commit}}" for c in commits)]
    names += [f"{commit}:{path}" for commit, path in queryable]
    names += [f"{commit}:{directory}" for commit, directory in directories]
    objects = _object_types(session, root, names)
    head_id, head_type = objects[0]
    if head_type != "commit":
        raise _GitFailure("missing_head")
    commit_ok = {c: objects[1 + i][1] == "commit" for i, c in enumerate(commits)}
    recorded_blob: dict[tuple[str, str], str] = {}
    for offset, pair in enumerate(queryable):
        object_id, kind = objects[1 + len(commits) + offset]
        if not commit_ok[pair[0]]:
            # A shallow clone or a pruned history: we never fetch missing objects.
            answers[pair] = _unverifiable("missing_commit")
        elif kind != "blob":
            answers[pair] = _unverifiable("missing_path_at_commit")
        else:
            recorded_blob[pair] = object_id
    tree_of = {
        key: objects[1 + len(commits) + len(queryable) + offset][0]
        for offset, key in enumerate(directories)
    }

    # 2. lstat walk of the work tree, once per path.
    paths = sorted({path for _, path in recorded_blob})
    local = {path: _local_state(root, path) for path in paths}
    for pair in recorded_blob:
        state = local[pair[1]][0]
        if state == "missing":
            answers[pair] = SnapshotCheck("potentially_stale", missing_path_reason)
        elif state == "unsafe":
            answers[pair] = _unverifiable("unsafe_path")
    present = [path for path in paths if local[path][0] == "present"]
    if not present:
        return head_id

    # 3. Index flags, modes and staged blob ids, then attributes, then the work-tree hashes.
    staged, unsafe_index = _index_entries(session, root, present)
    attributes = _attributes(session, root, present)
    to_hash = [
        p for p in present if p in staged and p not in unsafe_index and p not in attributes.filtered
    ]
    worktree = _hash_worktree(session, root, to_hash)
    remaining: list[tuple[str, str]] = []
    for pair, blob in recorded_blob.items():
        if pair in answers:
            continue
        path = pair[1]
        if path not in staged:
            # Removed from the index (git rm --cached) while the file stays: not the snapshot.
            answers[pair] = SnapshotCheck("potentially_stale", "working_tree_changed")
        elif path in unsafe_index:
            answers[pair] = _unverifiable("unsafe_index_state")
        elif path in attributes.filtered:
            answers[pair] = _unverifiable("unsafe_filter")
        elif staged[path][1] != blob:
            answers[pair] = SnapshotCheck("potentially_stale", "working_tree_changed")
        else:
            remaining.append(pair)
    if not remaining:
        return head_id

    # 4. The recorded modes (one cat-file of the directories' trees) and, when a mode or a
    #    line ending is in question, the three config values that decide it.
    modes = _recorded_modes(
        session,
        root,
        {key: tree_of[key] for key in {(c, p.rpartition("/")[0]) for c, p in remaining}},
        len(head_id),
    )
    settings: list[WorktreeConfig] = []

    def config() -> WorktreeConfig:
        if not settings:
            settings.append(_worktree_config(session, root))
        return settings[0]

    for pair in remaining:
        commit, path = pair
        directory, _, name = path.rpartition("/")
        recorded_mode = modes[(commit, directory)].get(name.encode("utf-8", "surrogateescape"))
        if recorded_mode is None:
            raise _GitFailure("malformed_output")  # cat-file said the blob is there
        facts = _FileFacts(
            path=path,
            blob=recorded_blob[pair],
            recorded_mode=recorded_mode,
            staged_mode=staged[path][0],
            executable=bool(local[path][1] & stat.S_IXUSR),
            worktree_blob=worktree[path],
        )
        answers[pair] = _compare_one(root, facts, attributes, config)
    return head_id


@dataclass(frozen=True)
class _FileFacts:
    """What is known of one file whose staged blob is the recorded one."""

    path: str
    blob: str
    recorded_mode: str
    staged_mode: str
    #: The work-tree file's owner-executable bit (what git reads as 100755).
    executable: bool
    worktree_blob: str


def _compare_one(
    root: str,
    facts: _FileFacts,
    attributes: _Attributes,
    config: Callable[[], WorktreeConfig],
) -> SnapshotCheck:
    """Compare modes, then content, the way ``git status`` would (without running anything)."""
    stale = SnapshotCheck("potentially_stale", "working_tree_changed")
    if facts.staged_mode != facts.recorded_mode:
        # A staged mode or type change (update-index --chmod, a symlink replaced and added).
        return stale
    if facts.staged_mode == MODE_SYMLINK:
        # The index holds a symlink, the work tree a regular file (a symlink there was already
        # unsafe_path). Git calls that a type change unless core.symlinks is false (then the
        # file holds the link text, compared as is: no line-ending conversion for links).
        if config().symlinks or facts.worktree_blob != facts.blob:
            return stale
        return SnapshotCheck("current", None)
    if facts.executable != (facts.staged_mode == MODE_EXECUTABLE) and config().filemode:
        # chmod +x / -x: a change, as git status says, unless core.fileMode is false.
        return stale
    if facts.worktree_blob == facts.blob:
        return SnapshotCheck("current", None)
    path, blob = facts.path, facts.blob
    if path in attributes.opaque:
        # Git would rewrite the content ($Id$, encodings) before hashing; a raw hash
        # cannot tell a real edit from that, and we will not ask git to convert.
        return _unverifiable("unsafe_filter")
    values = attributes.line_endings[path]

    def action() -> CrlfAction:
        # core.autocrlf is asked only when no attribute settles the conversion.
        undecided = crlf_action(values, None) != crlf_action(values, "true")
        return crlf_action(values, config().autocrlf if undecided else None)

    return _line_ending_answer(root, path, blob, action)


def _line_ending_answer(
    root: str, path: str, blob: str, action: Callable[[], CrlfAction]
) -> SnapshotCheck:
    """The raw bytes differ: current exactly when git would store them as ``blob`` anyway.

    Git stores either the raw bytes or the bytes with CRLF turned into LF. If the LF form is
    not the recorded blob either, the content changed; if it is, the file is current exactly
    when git would convert this path's line endings (redone in Python, so nothing is run).
    """
    forms = read_lf_form(root, path)
    if forms is None:
        # Too large or unreadable to redo the conversion: only sure when there is none.
        return (
            SnapshotCheck("potentially_stale", "working_tree_changed")
            if action() == "binary"
            else _unverifiable("unsafe_filter")
        )
    raw, lf_form = forms
    if blob_id(lf_form, len(blob)) != blob or not would_convert_crlf(action(), raw):
        return SnapshotCheck("potentially_stale", "working_tree_changed")
    return SnapshotCheck("current", None)

"""Git plumbing transactions: every memory write is commits first, then one CAS on HEAD.

A write never goes through the user's index or ``git commit``. Trees are built in an
alternate index (``GIT_INDEX_FILE`` in the git directory), commits with ``commit-tree``,
and HEAD moves only with ``update-ref HEAD <new> <old>`` - a compare-and-swap that fails
if anyone moved HEAD meanwhile. Nothing here resets, forces or rewrites history.

The live index is touched only for the paths a transaction changed (payload paths, or the
journal files), so files the user staged elsewhere stay staged exactly as they were. It is
updated only *after* HEAD moved: a writer killed before the CAS leaves HEAD, index and
files exactly as they were (nothing of the change is staged for a later plain ``git
commit``); one killed after it leaves a change that HEAD holds and the journal can name.
The work tree is written last, when the new commit is already safe in history.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_common.errors import DshError, GitError
from dsh_common.git import GitRunner
from dsh_memory.errors import CheckpointFailedError, CommitFailedError, RepoUnavailableError
from dsh_memory.store import fsops, payload_state
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    PAYLOAD_PATHS,
    README_FILE,
    SUMMARY_FILE,
    SYNC_DIR,
    Layout,
    escape_name,
)

ZERO_OID = "0" * 40
FILE_MODE = "100644"
EXECUTABLE_MODE = "100755"
#: Largest payload file read into a checkpoint (the staging limit of the earlier tool).
MAX_PAYLOAD_FILE_BYTES = 1024 * 1024 * 8
#: Above this many blobs one ``fast-import`` pack beats one loose object per blob.
FAST_IMPORT_THRESHOLD = 16
#: Blob bytes read per ``cat-file --batch`` when a rollback restores the work tree.
BLOB_CHUNK_BYTES = 8 * 1024 * 1024
#: The mtime given to the index copy we update (2096; git keeps index times in 32 bits).
_FUTURE_INDEX_TIME = 4_000_000_000


@dataclass(frozen=True)
class Blob:
    """A file as Git stores it in a tree: mode and object id."""

    mode: str
    oid: str


#: ``path -> Blob`` to add or replace it, ``path -> None`` to delete it.
TreeChanges = Mapping[str, Blob | None]


class GitTransactions:
    """Plumbing operations on one inspected memory repository."""

    def __init__(self, layout: Layout) -> None:
        self.root = layout.root
        self.git: GitRunner = layout.git
        self._git_dir: Path | None = None

    # -- reading -------------------------------------------------------------------------

    def head(self) -> str | None:
        """HEAD's commit id, or None while the branch has no commit yet."""
        return self.git.rev_parse("HEAD^{commit}")

    def require_head(self) -> str:
        head = self.head()
        if head is None:
            raise RepoUnavailableError("the memory repository has no commit; run init")
        return head

    def git_dir(self) -> Path:
        if self._git_dir is None:
            self._git_dir = Path(self.git.run(["rev-parse", "--absolute-git-dir"]).text.strip())
        return self._git_dir

    def tree_files(self, commit: str, paths: Sequence[str] = PAYLOAD_PATHS) -> dict[str, Blob]:
        """Every file under ``paths`` in ``commit`` (``ls-tree -r``), keyed by path."""
        result = self.git.run(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths])
        files: dict[str, Blob] = {}
        for record in result.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.decode().split(" ")
            if kind == "blob":
                files[path.decode("utf-8", "surrogateescape")] = Blob(mode, oid)
        return files

    def tree_diff(self, old: str, new: str) -> dict[str, Blob | None]:
        """Every path whose blob differs from ``old`` to ``new`` (commits or trees), with its
        blob in ``new`` (None: absent there). The whole tree, not only the payload."""
        result = self.git.run(
            ["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new],
            max_output=256 << 20,
        )
        fields = result.stdout.split(b"\0")
        changes: dict[str, Blob | None] = {}
        for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            _old_mode, new_mode, _old_oid, new_oid, status = meta[1:].decode().split(" ")
            path = raw_path.decode("utf-8", "surrogateescape")
            changes[path] = None if status == "D" else Blob(new_mode, new_oid)
        return changes

    def tree_mismatches(self, tree: str, changes: TreeChanges) -> list[str]:
        """The paths of ``changes`` that ``tree`` does not hold as asked (sorted).

        Git leaves some paths out of a tree without failing (``update-index`` only warns
        "Ignoring path" for a ``.git`` component, whatever it considers reserved); a commit
        built from such a tree would be "applied" without the file.
        """
        prefixes = sorted({p.split("/", 1)[0] for p in changes})
        if not prefixes:
            return []
        held = self.tree_files(tree, prefixes)
        return sorted(p for p, blob in changes.items() if held.get(p) != blob)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or in its history."""
        result = self.git.run(["merge-base", "--is-ancestor", ancestor, descendant], check=False)
        return result.returncode == 0

    def payload_dirty_paths(self) -> list[str]:
        """Payload paths whose work-tree or index state differs from HEAD (incl. untracked).

        Never ``git status``: that would run the clean filter a hostile config names on
        every stat-dirty file (see :func:`dsh_memory.store.payload_state.payload_dirty_paths`).
        """
        return payload_state.payload_dirty_paths(self.git, self.root, PAYLOAD_PATHS)

    def blob_contents(self, oids: Iterable[str]) -> dict[str, bytes]:
        """Contents of blobs, one ``cat-file --batch`` process for all of them."""
        unique = sorted(set(oids))
        return {
            entry.name: entry.content or b""
            for entry in self.git.cat_file_batch(unique)
            if entry.content is not None
        }

    # -- writing objects -------------------------------------------------------------------

    def write_blobs(self, contents: Sequence[bytes]) -> list[str]:
        """Store ``contents`` as blobs in one git process; return their ids in order.

        Many blobs go through ``fast-import`` (one pack file instead of a loose object
        each: ten times faster for a thousand records); a few go through ``hash-object``.
        Either way the bytes pass through the git directory only, never /tmp.
        """
        if not contents:
            return []
        if len(contents) > FAST_IMPORT_THRESHOLD:
            return self._fast_import_blobs(contents)
        scratch = self.git_dir() / f"dsh-memory-blobs-{os.getpid()}-{os.urandom(4).hex()}"
        scratch.mkdir(mode=0o700)
        try:
            names: list[str] = []
            for index, data in enumerate(contents):
                path = scratch / str(index)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                names.append(str(path))
            result = self.git.run(
                ["hash-object", "-w", "--no-filters", "--stdin-paths"],
                input=("\n".join(names) + "\n").encode("utf-8"),
            )
            oids = result.text.split()
            if len(oids) != len(contents):
                raise GitError("hash-object returned a different number of ids")
            return oids
        finally:
            import shutil  # noqa: PLC0415 - lazy: start-up time

            shutil.rmtree(scratch, ignore_errors=True)

    def _fast_import_blobs(self, contents: Sequence[bytes]) -> list[str]:
        marks = self.git_dir() / f"dsh-memory-marks-{os.getpid()}-{os.urandom(4).hex()}"
        stream = bytearray()
        for index, data in enumerate(contents, start=1):
            stream += b"blob\nmark :%d\ndata %d\n" % (index, len(data))
            stream += data
            stream += b"\n"
        stream += b"done\n"
        try:
            self.git.run(
                ["fast-import", "--quiet", "--done", f"--export-marks={marks}"],
                input=bytes(stream),
                timeout=_bulk_timeout(len(contents)),
            )
            by_mark: dict[int, str] = {}
            for line in marks.read_text().splitlines():
                mark, _, oid = line.partition(" ")
                by_mark[int(mark.lstrip(":"))] = oid
        finally:
            with contextlib.suppress(FileNotFoundError):
                marks.unlink()
        try:
            return [by_mark[index] for index in range(1, len(contents) + 1)]
        except KeyError as exc:
            raise GitError("fast-import did not report every blob") from exc

    def build_tree(self, base: str | None, changes: TreeChanges) -> str:
        """The tree of ``base`` with ``changes`` applied, built in an alternate index."""
        index_file = self.git_dir() / f"dsh-memory-index-{os.getpid()}-{os.urandom(4).hex()}"
        env = {"GIT_INDEX_FILE": str(index_file)}
        try:
            if base is None:
                self.git.run(["read-tree", "--empty"], env=env)
            else:
                self.git.run(["read-tree", base], env=env)
            if changes:
                self.git.run(
                    ["update-index", "-z", "--index-info"],
                    input=_index_info(changes),
                    env=env,
                    timeout=_bulk_timeout(len(changes)),
                )
            return self.git.run(["write-tree"], env=env).text.strip()
        finally:
            with contextlib.suppress(FileNotFoundError):
                index_file.unlink()
            with contextlib.suppress(FileNotFoundError):
                Path(f"{index_file}.lock").unlink()

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        args += ["-m", message]
        try:
            return self.git.run(args).text.strip()
        except GitError as exc:
            if "identity unknown" in exc.stderr or "empty ident" in exc.stderr:
                # The commonest first-run failure: say how to fix it, not only that it failed.
                exc.message += (
                    " (git has no author identity: set one with `git config --global user.name"
                    ' "Your Name"` and `git config --global user.email you@example.com`)'
                )
                exc.args = (exc.message,)
            raise

    # -- moving HEAD -----------------------------------------------------------------------

    def advance_head(self, new: str, old: str | None, paths: Iterable[str]) -> None:
        """CAS HEAD old->new, then point the live index entries for ``paths`` at ``new``'s.

        Raises CommitFailedError with index and HEAD unchanged if the CAS fails; an index
        failure after the CAS raises CommitFailedError too (HEAD has moved then: callers
        that must tell the two apart use :meth:`move_head` and :meth:`sync_live_index`).
        """
        self.move_head(new, old)
        self.sync_live_index(new, paths)

    def move_head(self, new: str, old: str | None) -> None:
        """``update-ref HEAD <new> <old>``: the compare-and-swap, and nothing else.

        The live index is deliberately *not* touched before it: a writer killed between an
        index update and the CAS would leave its change staged for the user's next plain
        ``git commit``. Killed after the CAS, HEAD holds the change and the journal can
        still name it (the commits are recorded in the active run first).
        """
        if (self.git_dir() / "index.lock").exists():
            # The index update after the CAS would fail: refuse while nothing has moved.
            raise CommitFailedError("another git process holds the index lock (index.lock)")
        try:
            self.git.run(["update-ref", "-m", "dsh-memory", "HEAD", new, old or ZERO_OID])
        except DshError as exc:
            raise CommitFailedError(f"HEAD could not be moved safely: {exc}") from exc

    def index_entries(self, paths: Iterable[str]) -> dict[str, Blob | None]:
        """Live index entries (stage 0) for exactly ``paths``.

        Asks git for their top-level folders, never for the paths themselves: a clear of
        100,000 files must not put 100,000 arguments on one command line.
        """
        wanted = set(paths)
        prefixes = sorted({p.split("/", 1)[0] for p in wanted})
        if not prefixes:
            return {}
        output = self.git.run(["ls-files", "-z", "-s", "--", *prefixes]).stdout
        staged, unmerged = payload_state.parse_listing(output, staged=True)
        found: dict[str, Blob | None] = {
            p: Blob(e.mode, e.oid) for p, e in staged.items() if p in wanted
        }
        found.update(dict.fromkeys(unmerged & wanted))
        return found

    def sync_live_index(self, new: str, paths: Iterable[str]) -> None:
        """Point the live index entries for ``paths`` at ``new``'s (absent there: removed).

        The user's other index entries - staged work outside these paths - stay as they
        were. Written through a copy of the index (see :meth:`_update_live_index`) so no
        clean filter can run. Raises CommitFailedError (HEAD already moved).
        """
        touched = sorted(set(paths))
        if not touched:
            return
        try:
            prefixes = sorted({p.split("/", 1)[0] for p in touched})
            in_new = self.tree_files(new, prefixes)
            before = self.index_entries(touched)
        except (DshError, UnicodeError) as exc:
            raise CommitFailedError(f"could not read the live index: {exc}") from exc
        wanted: dict[str, Blob | None] = dict.fromkeys(before)
        wanted.update({p: in_new[p] for p in touched if p in in_new})
        try:
            self._update_live_index(wanted)
        except (DshError, OSError) as exc:
            raise CommitFailedError(f"could not update the live index: {exc}") from exc

    def _update_live_index(self, changes: Mapping[str, Blob | None]) -> None:
        """``update-index --index-info`` on the live index without running any filter.

        Writing an index makes git re-check "racily clean" entries (file mtime not older
        than the index file) by hashing the file *through its clean filter* - a program a
        hostile config names. Git decides raciness from the index file's own mtime when it
        reads it, so we hold ``index.lock`` (as git's own writers do), copy the index,
        date the copy far in the future (no entry is then racy), update the copy, and
        rename it over the index. Entries keep their stat data; nothing is re-hashed. (The
        price: an entry git would have re-checked as racily clean - a file edited within
        the second the index was last written, size unchanged - is trusted by its stat data
        from then on; dsh-memory's own dirtiness check hashes every file and still sees it.)
        """
        git_dir = self.git_dir()
        live = git_dir / "index"
        lock = git_dir / "index.lock"
        try:
            lock_fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError as exc:
            raise CommitFailedError(
                f"{lock} exists: another git process is using the index"
            ) from exc
        copy = git_dir / f"dsh-memory-live-index-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            with contextlib.suppress(FileNotFoundError):
                import shutil  # noqa: PLC0415 - lazy: start-up time

                shutil.copyfile(live, copy)
                os.utime(copy, (_FUTURE_INDEX_TIME, _FUTURE_INDEX_TIME))
            self.git.run(
                ["update-index", "-z", "--index-info"],
                input=_index_info(changes),
                env={"GIT_INDEX_FILE": str(copy)},
                timeout=_bulk_timeout(len(changes)),
            )
            os.replace(copy, live)
        finally:
            os.close(lock_fd)
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            with contextlib.suppress(FileNotFoundError):
                copy.unlink()
            with contextlib.suppress(FileNotFoundError):
                Path(f"{copy}.lock").unlink()

    # -- the work tree ---------------------------------------------------------------------

    def materialize(self, changes: TreeChanges, contents: Mapping[str, bytes]) -> None:
        """Make the work tree match ``changes`` (descriptor-anchored, link-safe)."""
        fsops.remove_files(self.root, sorted(p for p, blob in changes.items() if blob is None))
        # The commit already holds these bytes; one fsync per directory is enough.
        fsops.replace_files(
            self.root,
            [
                (path, contents[blob.oid], _worktree_mode(path, blob))
                for path, blob in sorted(changes.items())
                if blob is not None
            ],
        )

    def materialize_streamed(self, changes: TreeChanges) -> None:
        """:meth:`materialize` for changes of any total size, blobs read in bounded chunks.

        One ``cat-file --batch`` for everything would refuse a rollback of more than the
        runner's 32 MiB output cap - forever, since the run does not shrink. Blobs are read
        ``BLOB_CHUNK_BYTES`` at a time (a larger single blob alone, with a cap of its size)
        and written before the next chunk is read, so memory stays bounded too.
        """
        deletions = {p: None for p, blob in changes.items() if blob is None}
        self.materialize(deletions, {})
        wanted = sorted({blob.oid for blob in changes.values() if blob is not None})
        sizes = {e.name: e.size for e in self.git.cat_file_batch_check(wanted)}
        by_oid: dict[str, list[str]] = {}
        for path, blob in changes.items():
            if blob is not None:
                by_oid.setdefault(blob.oid, []).append(path)
        chunk: list[str] = []
        total = 0
        for oid in [*wanted, None]:
            size = sizes.get(oid, 0) if oid is not None else 0
            if oid is None or (chunk and total + size > BLOB_CHUNK_BYTES):
                contents = self._blob_chunk(chunk, sizes)
                self.materialize({p: changes[p] for o in chunk for p in by_oid[o]}, contents)
                chunk, total = [], 0
            if oid is not None:
                chunk.append(oid)
                total += size

    def _blob_chunk(self, oids: Sequence[str], sizes: Mapping[str, int]) -> dict[str, bytes]:
        if not oids:
            return {}
        if len(oids) == 1 and sizes.get(oids[0], 0) > BLOB_CHUNK_BYTES:
            result = self.git.run(["cat-file", "blob", oids[0]], max_output=sizes[oids[0]] + 1)
            return {oids[0]: result.stdout}
        contents = self.blob_contents(oids)
        missing = [oid for oid in oids if oid not in contents]
        if missing:
            raise GitError(f"blob {missing[0]} is missing from the repository")
        return contents

    # -- the recovery point ----------------------------------------------------------------

    def recovery_point(
        self,
        head: str,
        message: str,
        *,
        also: Iterable[str] = (),
        dirty: Iterable[str] | None = None,
    ) -> tuple[str, list[str]]:
        """HEAD when the payload is clean; else a checkpoint commit of the live payload.

        ``also`` names further live paths to capture - clear passes files Git ignores,
        which it is about to delete and which must therefore be recoverable too.
        ``dirty`` is the caller's own :meth:`payload_dirty_paths` answer, when it has one
        (each call hashes every tracked payload file).
        Returns the recovery commit and the payload paths it captured.
        """
        try:
            known = self.payload_dirty_paths() if dirty is None else dirty
            paths = sorted(set(known) | set(also))
        except (DshError, OSError) as exc:
            raise CheckpointFailedError(f"could not read payload status: {exc}") from exc
        if not paths:
            return head, []
        try:
            changes = self.snapshot_changes(paths)
            tree = self.build_tree(head, changes)
            dropped = self.tree_mismatches(tree, changes)
            commit = self.commit_tree(tree, [head], message)
        except (GitError, OSError) as exc:
            raise CheckpointFailedError(f"recovery checkpoint failed: {exc}") from exc
        if dropped:
            # A checkpoint without the file would make whatever the writer does to it next
            # (clear deletes it) unrecoverable.
            raise CheckpointFailedError(
                f"git cannot record {escape_name(dropped[0])} in a recovery checkpoint (a name"
                " Git reserves, such as a .git folder): move or delete it by hand first"
            )
        return commit, paths

    def snapshot_changes(self, paths: Sequence[str]) -> dict[str, Blob | None]:
        """Tree changes that record the live content of ``paths`` (absent ones deleted)."""
        present: list[str] = []
        datas: list[bytes] = []
        modes: list[str] = []
        changes: dict[str, Blob | None] = {}
        for path in paths:
            try:
                data = fsops.read_file_nofollow(self.root, path, MAX_PAYLOAD_FILE_BYTES)
            except FileNotFoundError:
                changes[path] = None
                continue
            present.append(path)
            datas.append(data)
            mode = fsops.file_mode(self.root, path) or 0o644
            modes.append(EXECUTABLE_MODE if mode & 0o111 else FILE_MODE)
        for path, oid, mode_text in zip(present, self.write_blobs(datas), modes, strict=True):
            changes[path] = Blob(mode_text, oid)
        return changes


def _bulk_timeout(count: int) -> float:
    """A per-command timeout that grows with the work: 10 s, plus 1 s per 5,000 items."""
    return 10.0 + count / 5000


def _worktree_mode(path: str, blob: Blob) -> int:
    """summary.md and the operational files are owner-only (init's modes; a pull writes the
    journal files it brings); records follow their Git mode."""
    if path in (SUMMARY_FILE, README_FILE, LAST_SYNC_FILE) or path.startswith(f"{SYNC_DIR}/"):
        return 0o600
    if path.startswith("scripts/") and blob.mode == EXECUTABLE_MODE:
        return 0o700
    return 0o755 if blob.mode == EXECUTABLE_MODE else 0o644


def _index_info(changes: Mapping[str, Blob | None]) -> bytes:
    """``update-index -z --index-info`` input; mode 0 with the zero id removes a path."""
    parts: list[bytes] = []
    for path in sorted(changes):
        blob = changes[path]
        if blob is None:
            parts.append(f"0 {ZERO_OID}\t{path}".encode("utf-8", "surrogateescape"))
        else:
            parts.append(f"{blob.mode} {blob.oid}\t{path}".encode("utf-8", "surrogateescape"))
    return b"".join(part + b"\0" for part in parts)

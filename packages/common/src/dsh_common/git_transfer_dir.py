"""A private git directory for one fetch or push: the repository's objects, none of its config.

git reads the config of the repository it runs in, and a ``-c`` on the command line can
override a setting but not remove it. For a transfer that config would decide where the
bytes go and what is trusted: ``http.proxy``, ``http.sslVerify=false``, ``http.sslCAInfo``,
``http.extraHeader``, ``http.cookieFile``, ``http.curloptResolve``, ``fsck.<id>=ignore``,
``push.followTags``... - and several of them (a file path) have no command-line value that
means "unset". So a transfer does not run in the repository: it runs in a bare git
directory made for it under ``<git dir>/dsh-transfer/``, whose config is ours (the object
format and nothing else), whose ``objects/info/alternates`` names the repository's object
store (everything the repository has counts as present; a push reads its commits there),
and whose refs are the repository's refs (what the fetch negotiation offers as "have").

After a fetch, the objects it wrote into the private directory (packs, and loose objects for
a small fetch) are moved into the repository's store, and then the refs the fetch updated
are set in the repository. The directory is removed afterwards; one left by a killed
process is removed by the next transfer once it is an hour old.

The user's own config (system, global and what they include) applies as to any git
command. A conditional include (``includeIf "gitdir:..."``) is evaluated for the private
directory, which lies inside the repository's git directory: a ``gitdir:`` pattern that
ends with ``/`` and covers the repository still matches.

No gc could reach the repository's objects from the private directory: an alternate's
objects are read, never pruned or repacked (and gc is off for every command anyway).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dsh_common.errors import GitError
from dsh_common.io import ensure_private_directory

if TYPE_CHECKING:
    from dsh_common.git import GitRunner

#: The folder of the private directories, inside the repository's (common) git directory.
TRANSFER_DIRS = "dsh-transfer"
#: A private directory older than this was left by a killed process (a transfer has 300 s).
STALE_AFTER = 3600.0

_LOOSE_DIR = re.compile(r"[0-9a-f]{2}")
_LOOSE_NAME = re.compile(r"[0-9a-f]{38}|[0-9a-f]{62}")
_PACK_FILE = re.compile(r"pack-[0-9a-f]{40,64}\.(pack|rev|idx)")


@dataclass(frozen=True)
class TransferDir:
    """A private git directory (``path``) over the repository's object store (``objects``)."""

    path: Path
    objects: Path
    #: The repository's refs copied in (name -> object id), as they were before the fetch.
    seeded: Mapping[str, str] = field(default_factory=dict)

    @property
    def git_dir_option(self) -> str:
        """The global option that runs a git command in it."""
        return f"--git-dir={self.path}"


def _git_paths(runner: GitRunner) -> tuple[Path, str]:
    """The repository's common git directory (absolute) and its object format."""
    lines = runner.run(["rev-parse", "--git-common-dir", "--show-object-format"]).text
    common_text, _, rest = lines.partition("\n")
    # Absolute: git gets it as --git-dir (and as the alternate) from the runner's directory,
    # which may itself be given relative to ours.
    common = Path(os.path.abspath(runner.cwd / common_text))
    object_format = rest.strip()
    return common, object_format if object_format in ("sha1", "sha256") else "sha1"


def _remove_stale(base: Path) -> None:
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER:
                    shutil.rmtree(entry.path, ignore_errors=True)


def _write(path: Path, text: str) -> None:
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(text)


def _populate(path: Path, objects: Path, object_format: str, refs: Mapping[str, str]) -> None:
    if "\n" in str(objects):
        raise GitError(f"the object store's path {str(objects)!r} holds a newline")
    # No more folders than git needs (objects/pack is made by git when a pack arrives):
    # each costs an rmdir afterwards, and on some file systems that is slow.
    (path / "refs").mkdir()
    (path / "objects" / "info").mkdir(parents=True)
    _write(path / "HEAD", "ref: refs/heads/dsh-transfer\n")
    if object_format == "sha1":
        config = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
    else:
        config = (
            "[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
            f"[extensions]\n\tobjectFormat = {object_format}\n"
        )
    _write(path / "config", config)
    _write(path / "objects" / "info" / "alternates", f"{objects}\n")
    if refs:
        _write(path / "packed-refs", "".join(f"{oid} {name}\n" for name, oid in refs.items()))


def _seed_refs(runner: GitRunner) -> dict[str, str]:
    """Every ref the repository has (name -> object id), HEAD's commit as a ref of its own,
    sorted by name as a packed-refs file is."""
    listing = runner.run(["show-ref", "--head"], check=False)
    refs = {}
    for line in listing.text.splitlines():
        oid, _, name = line.partition(" ")
        if name == "HEAD":
            name = "refs/dsh-transfer/head"
        if name.startswith("refs/") and oid:
            refs[name] = oid
    return dict(sorted(refs.items()))


@contextlib.contextmanager
def transfer_dir(runner: GitRunner, *, seed_refs: bool) -> Iterator[TransferDir]:
    """A private git directory for one transfer of ``runner``'s repository, removed after.

    ``seed_refs`` copies the repository's refs in (a fetch negotiates with them; a push
    names its commit itself and needs none).
    """
    common, object_format = _git_paths(runner)
    refs = _seed_refs(runner) if seed_refs else {}
    try:
        # A symlink planted there (the repository is untrusted) is refused.
        base = ensure_private_directory(common / TRANSFER_DIRS)
        _remove_stale(base)
        path = Path(tempfile.mkdtemp(prefix="t-", dir=base))
    except OSError as exc:
        raise GitError(f"no private git directory for the transfer: {exc}") from None
    try:
        try:
            _populate(path, common / "objects", object_format, refs)
        except OSError as exc:
            raise GitError(f"no private git directory for the transfer: {exc}") from None
        yield TransferDir(path=path, objects=common / "objects", seeded=refs)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _move(source: Path, target: Path) -> None:
    """``source`` into the store at ``target``; one already there is the same object."""
    if target.exists():
        return
    target.parent.mkdir(exist_ok=True)
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        # An object store linked to another file system: copied, then renamed into place.
        partial = target.with_name(f".{target.name}.dsh-tmp")
        shutil.copyfile(source, partial)
        os.replace(partial, target)


def adopt_objects(transfer: TransferDir) -> int:
    """Move what a fetch wrote into the private directory into the repository's store;
    the number of files moved. A pack's index goes last: git finds a pack by its index."""
    try:
        return _adopt_objects(transfer)
    except OSError as exc:
        raise GitError(
            f"the fetched objects could not be moved into the repository: {exc}"
        ) from None


def _adopt_objects(transfer: TransferDir) -> int:
    moved = 0
    own = transfer.path / "objects"
    for entry in sorted(os.listdir(own)):
        if _LOOSE_DIR.fullmatch(entry):
            for name in sorted(os.listdir(own / entry)):
                if _LOOSE_NAME.fullmatch(name):
                    _move(own / entry / name, transfer.objects / entry / name)
                    moved += 1
    pack_dir = own / "pack"
    names = sorted(os.listdir(pack_dir)) if pack_dir.is_dir() else []
    packs = [n for n in names if _PACK_FILE.fullmatch(n)]
    for name in sorted(packs, key=lambda n: n.endswith(".idx")):
        _move(own / "pack" / name, transfer.objects / "pack" / name)
        moved += 1
    return moved


def copy_refs(runner: GitRunner, transfer: TransferDir, refs: Sequence[str]) -> None:
    """Set each of ``refs`` in the repository to its value in the private directory (after
    :func:`adopt_objects`: the objects are in the repository's store by then)."""
    for ref in refs:
        result = runner.run(
            [transfer.git_dir_option, "rev-parse", "--verify", "--quiet", "--end-of-options", ref],
            check=False,
        )
        oid = result.text.strip()
        if result.returncode == 0 and oid and transfer.seeded.get(ref) != oid:
            runner.run(["update-ref", "-m", "dsh fetch", ref, oid])

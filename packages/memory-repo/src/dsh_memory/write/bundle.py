"""Backup and restore: ``export --bundle FILE`` and ``import --bundle FILE --root NEW``.

A backup is two files: ``FILE``, a ``git bundle`` of every branch (the whole history, so
every run stays listable and roll-back-able), and ``FILE.manifest.json``::

    {"schema_version": 1, "format": "dsh-memory-bundle", "created_at", "head",
     "branch", "bundle_sha256", "bundle_bytes", "run_count", "last_run_id"}

Neither command overwrites anything: export refuses an existing ``FILE`` or manifest,
import refuses an existing ``NEW`` (``bundle-invalid-request``). Import checks the bundle
against the manifest's SHA-256 and with ``git bundle verify``, unbundles it into a fresh
repository without any transport (``git bundle unbundle``: git's ``protocol.allow=never``
hardening stays on), points the branch at the manifest's head, fills the work tree, and
then runs ``init`` on it for the modes and the private, never-committed ``.sync`` state.
Operational state that is not in Git (previews, usage, the search index) is not backed up.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import orjson

from dsh_common.errors import DshError
from dsh_common.git import GitRunner
from dsh_common.jsonio import dumps
from dsh_memory.errors import BundleFailedError, BundleInvalidRequestError
from dsh_memory.store.root import Layout
from dsh_memory.write import journal
from dsh_memory.write.transactions import GitTransactions

MANIFEST_SUFFIX = ".manifest.json"
FORMAT = "dsh-memory-bundle"
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")
_OID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_BUNDLE_TIMEOUT = 300.0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _create_exclusive(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def export_bundle(layout: Layout, file: object) -> dict[str, Any]:
    if not isinstance(file, str) or not file:
        raise BundleInvalidRequestError("export needs --bundle FILE")
    target = Path(os.path.abspath(file))
    manifest_path = Path(f"{target}{MANIFEST_SUFFIX}")
    for path in (target, manifest_path):
        if os.path.lexists(path):
            raise BundleInvalidRequestError(f"{path} already exists; refusing to overwrite it")
    tx = GitTransactions(layout)
    head = tx.require_head()
    branch = tx.git.run(["symbolic-ref", "--short", "HEAD"], check=False).text.strip() or "main"
    try:
        _create_exclusive(target, b"")  # claim the name before git writes there
        tx.git.run(["bundle", "create", "-q", str(target), "--all"], timeout=_BUNDLE_TIMEOUT)
        os.chmod(target, 0o600)
        runs = journal.journaled_run_ids(tx)
        manifest = {
            "schema_version": 1,
            "format": FORMAT,
            "created_at": journal.utc_iso(),
            "head": head,
            "branch": branch,
            "bundle_sha256": _sha256(target),
            "bundle_bytes": target.stat().st_size,
            "run_count": len(runs),
            "last_run_id": runs[0] if runs else None,
        }
        _create_exclusive(manifest_path, (dumps(manifest) + "\n").encode("utf-8"))
    except (DshError, OSError) as exc:
        target.unlink(missing_ok=True)
        raise BundleFailedError(f"the bundle could not be written: {exc}") from exc
    return {"bundle": str(target), "manifest": str(manifest_path), **manifest}


def _read_manifest(bundle: Path) -> dict[str, Any]:
    manifest_path = Path(f"{bundle}{MANIFEST_SUFFIX}")
    try:
        data = orjson.loads(manifest_path.read_bytes()[: 1024 * 1024])
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BundleInvalidRequestError(f"{manifest_path} is missing or not JSON") from exc
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not _OID.fullmatch(str(data.get("head")))
        or not _BRANCH.fullmatch(str(data.get("branch")))
        or str(data.get("branch")).startswith("-")
    ):
        raise BundleInvalidRequestError(f"{manifest_path} is not a dsh-memory bundle manifest")
    return data


def import_bundle(file: object, new_root: object) -> dict[str, Any]:
    if not isinstance(file, str) or not isinstance(new_root, str) or not file or not new_root:
        raise BundleInvalidRequestError("import needs --bundle FILE and --root NEW")
    bundle = Path(os.path.abspath(file))
    root = Path(os.path.abspath(new_root))
    if os.path.lexists(root):
        raise BundleInvalidRequestError(f"{root} already exists; import only creates a new root")
    manifest = _read_manifest(bundle)
    if not bundle.is_file() or _sha256(bundle) != manifest.get("bundle_sha256"):
        raise BundleInvalidRequestError(f"{bundle} does not match its manifest")
    from dsh_memory.store.initialize import initialize_repository  # noqa: PLC0415

    root.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir(mode=0o700)
    git = GitRunner(root)
    try:
        git.run(["init", "-q", f"--initial-branch={manifest['branch']}"])
        git.run(["bundle", "verify", "-q", str(bundle)], timeout=_BUNDLE_TIMEOUT)
        git.run(["bundle", "unbundle", str(bundle)], timeout=_BUNDLE_TIMEOUT)
        head = str(manifest["head"])
        git.run(["update-ref", f"refs/heads/{manifest['branch']}", head])
        # A fresh repository with an empty index: read-tree -u only fills the work tree.
        git.run(["read-tree", "-m", "-u", head])
    except DshError as exc:
        raise BundleFailedError(f"the bundle could not be imported: {exc}") from exc
    initialized = initialize_repository(root)
    return {
        "root": str(root),
        "headCommit": initialized["headCommit"],
        "runCount": manifest.get("run_count"),
    }

"""A checkout's stable workspace identity, shared by every member of a team.

An item's scope is its workspace (and optional project). By default the workspace is the
checkout's absolute path, which differs on every machine: on a shared store each member
would see only their own items. A checkout gets one name that every front end uses (the
CLI, the hooks, the MCP server, ``setup``), in this order:

1. ``$DSH_KNOWLEDGE_WORKSPACE`` - an explicit name (one machine, one shell);
2. ``.dsh-knowledge.toml`` committed at the repository's top level - for the whole team::

       workspace = "acme/payments"          # an explicit name, or
       workspace-from-remote = "origin"     # the remote's normalised URL: github.com/acme/payments

3. otherwise none: the front end keeps its path default, exactly as before.

An explicit ``--workspace`` (or a tool's ``workspace`` argument) still wins over all of
these. Only the scope changes: freshness, health and provenance keep reading files from the
local checkout (:func:`checkout_root`). The scope rules themselves are unchanged (a project
in another workspace stays isolated).

The file is repository content, so it is read as untrusted input: a regular file only (no
symlink followed), at most 4 KiB, two known keys, a bounded printable name. A remote URL is
read through the hardened git runner, and its credentials, scheme, port and ``.git`` suffix
are dropped: ``https://user:token@GitHub.com:443/acme/payments.git`` and
``git@github.com:acme/payments`` both name ``github.com/acme/payments``.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from dsh_knowledge.errors import ValidationError

__all__ = [
    "CONFIG_FILE",
    "WORKSPACE_ENV",
    "checkout_root",
    "local_checkout",
    "normalize_remote_url",
    "workspace_identity",
]

WORKSPACE_ENV = "DSH_KNOWLEDGE_WORKSPACE"
CONFIG_FILE = ".dsh-knowledge.toml"
MAX_CONFIG_BYTES = 4096
MAX_NAME_CHARS = 512
_REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
# git's scp-like form: [user@]host:path, the host possibly a bracketed IPv6 address.
_SCP_LIKE = re.compile(r"(?:[^@/\[]+@)?(?P<host>\[[^\]/]+\]|[^:/\[]+):(?P<path>(?!/).*)")


def _git_top(start: str) -> Path | None:
    from dsh_common.locate import git_top_level  # noqa: PLC0415 - lazy: hook start-up

    return git_top_level(start)


def checkout_root(start: str | os.PathLike[str] | None = None) -> str:
    """The local checkout a command reads files from: git top level of ``start``, else it."""
    from dsh_common.locate import default_workspace  # noqa: PLC0415 - lazy: hook start-up

    return default_workspace(start)


def local_checkout(workspace: str) -> str:
    """Where files are read for ``workspace`` (provenance, freshness, health): the
    workspace itself when it is a directory, else the current checkout's top level."""
    return workspace if os.path.isdir(workspace) else checkout_root()


def _valid_name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{where}: the workspace name must be a non-empty string.")
    name = value.strip()
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValidationError(
            f"{where}: the workspace name must be at most {MAX_NAME_CHARS} printable characters."
        )
    return name


def _read_config(path: Path) -> dict[str, object] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        if os.path.islink(path):
            raise ValidationError(f"{path} is a symbolic link; it is not read.") from error
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationError(f"{path} is not a regular file; it is not read.")
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValidationError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes; it is not read.")
    import tomllib  # noqa: PLC0415 - only when the file exists

    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValidationError(f"{path} is not valid TOML: {error}") from None
    unknown = sorted(set(document) - {"workspace", "workspace-from-remote"})
    if unknown:
        raise ValidationError(
            f"{path}: unknown key {unknown[0]!r}; expected workspace or workspace-from-remote."
        )
    if len(document) != 1:
        raise ValidationError(f"{path}: give workspace or workspace-from-remote, not both.")
    return document


def normalize_remote_url(url: str) -> str | None:
    """``host/path`` of a remote URL (lower-case host; no credentials, scheme, port, ``.git``).

    The path keeps its case: hosting services that ignore it (GitHub) and servers that do
    not (a bare repository on a Unix file system) cannot be told apart from the URL, and
    folding it could merge two repositories into one workspace. Members whose remotes spell
    the path differently name the workspace explicitly (``workspace = "…"``) instead.
    """
    text = url.strip()
    if not text:
        return None
    scheme, sep, rest = text.partition("://")
    if sep:
        if scheme.lower() == "file":
            host, path = "", rest
        else:
            authority, _, path = rest.partition("/")
            host = authority.rpartition("@")[2]
            # Drop the port: [ipv6]:port keeps its brackets.
            host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    else:
        match = _SCP_LIKE.fullmatch(text)
        if match is None:
            host, path = "", text  # a local path
        else:
            host, path = match["host"], match["path"]
    if not host:  # a local path: kept as written, without a trailing slash or ".git"
        local = path.rstrip("/").removesuffix(".git").rstrip("/")
        return local or None
    path = path.strip("/").removesuffix(".git").rstrip("/")
    return f"{host.lower()}/{path}" if path else None


def _remote_identity(top: Path, remote: object, where: str) -> str:
    if not isinstance(remote, str) or not _REMOTE_NAME.fullmatch(remote):
        raise ValidationError(f"{where}: workspace-from-remote must name a git remote.")
    from dsh_common.git import GitRunner  # noqa: PLC0415 - only for this option

    result = GitRunner(top, timeout=5.0, budget=5.0, max_output=64 * 1024).run(
        ["config", "--get", f"remote.{remote}.url"], check=False
    )
    found = normalize_remote_url(result.text) if result.returncode == 0 else None
    if found is None:
        raise ValidationError(f"{where}: the repository has no URL for the remote {remote!r}.")
    return _valid_name(found, where)


def workspace_identity(start: str | os.PathLike[str] | None = None) -> str | None:
    """The workspace name for the checkout at ``start`` (default: cwd), or None.

    None means "no identity configured": the caller keeps its path default.
    """
    from_env = os.environ.get(WORKSPACE_ENV, "")
    if from_env.strip():
        return _valid_name(from_env, WORKSPACE_ENV)
    top = _git_top(os.fspath(start) if start is not None else os.getcwd())
    if top is None:
        return None
    path = top / CONFIG_FILE
    document = _read_config(path)
    if document is None:
        return None
    if "workspace" in document:
        return _valid_name(document["workspace"], str(path))
    return _remote_identity(top, document["workspace-from-remote"], str(path))

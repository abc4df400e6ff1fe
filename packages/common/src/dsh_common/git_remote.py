"""Git remotes we may talk to: which URLs, over which transport, and how they are shown.

Every other git command we run can reach no transport at all (see :mod:`dsh_common.git`).
Fetch and push must reach exactly one: the transport of the URL the user configured, from
a short list. A URL names a program as easily as a host (``ext::sh -c …``, ``fd::``, any
``<helper>::<address>``, a host starting with ``-`` that ssh would read as an option), so
a URL is parsed here, once, into a :class:`RemoteUrl` - anything else is refused before
git sees it.

Accepted, and the transport each is allowed:

* a local path (absolute, or relative to the directory given) and ``file://`` URLs: ``file``
* ``https://[user[:password]@]host[:port]/path``: ``https``
* ``http://`` to a loopback host only (127.0.0.0/8, ``::1``, ``localhost``): ``http`` -
  a plain-text transfer is acceptable to the machine itself (a local mirror), nowhere else
* ``ssh://[user@]host[:port]/path`` and scp-like ``[user@]host:path``: ``ssh`` - never
  with a password (ssh takes none from a URL); a host may be an IPv6 address in brackets
  (``ssh://[2001:db8::1]/m.git``, ``git@[::1]:m.git``)

A fetch or push runs in a private git directory over the repository's objects
(:mod:`dsh_common.git_transfer_dir`): none of the repository's own config applies to it -
its ``http.*`` (a proxy, ``sslVerify=false``, extra headers, a cookie file), ``fsck.*``,
``push.*``, ``remote.*``, ssh command or credential helpers. The user's own config (system,
global) applies as to any git command; their ssh command and credential helpers, plain and
URL-scoped, and ``$GIT_SSH_COMMAND`` / ``$GIT_SSH``, are handed to it by
:mod:`dsh_common.git_user_programs`.

Credentials in a URL reach git (and git's own config) and nothing else: :attr:`RemoteUrl.
shown` is the form every output, error and journal uses - for http(s) the whole user
part is replaced (a token is often written as the user name), for ssh only a password.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from dsh_common.errors import DshError, GitError, SymlinkRejectedError
from dsh_common.git_user_programs import USER_SCOPES, UserProgramError, user_program_config

if TYPE_CHECKING:
    from dsh_common.git import GitResult, GitRunner
    from dsh_common.git_transfer_dir import TransferDir

TRANSPORTS = ("file", "https", "http", "ssh")
MAX_URL_LENGTH = 4096
_HIDDEN = "***"
# scp-like syntax as git reads it: [user@]host:path, no "://", and the colon comes before
# any slash (otherwise it is a local path such as ./a:b).
_SCP_LIKE = re.compile(r"(?:(?P<user>[^@/:]+)@)?(?P<host>\[[^\]/]+\]|[^@/:\[\]]+):(?P<path>.*)")
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What git reads as "<transport>::<address>" (a remote helper program): the URL's very start,
# letters, digits and "+.-" (not first), then "::" - git's own test (transport.c). A "::"
# anywhere else - inside "[::1]:repo", or in a path - names no helper.
_HELPER = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9+.-]*)?::")
_BRANCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")
# The user part runs to the *last* "@" before the path: a password may hold an "@" itself.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s]+)@")
# scp-like text whose path starts like "password@host:": a user:password@host:path remote.
_SCP_PASSWORD = re.compile(r"[^/]*@[^/]*:")
_SCP_USERINFO = re.compile(r"^(?P<user>[^/:@]+):[^/]*@(?=[^/]*:)")


class RemoteUrlError(DshError, ValueError):
    """A remote URL we will not hand to git (its transport, its shape or its host)."""

    code = "remote-invalid"


class RemoteConfigError(DshError, ValueError):
    """The repository's own config would redirect a transfer (``url.<x>.insteadOf``) or run
    a program during it: refused before git starts."""

    code = "unsafe-config"


@dataclass(frozen=True)
class RemoteUrl:
    """A checked remote: the URL as git is given it, its one transport, its shown form."""

    url: str
    transport: str
    shown: str


def _refuse(shown: str, why: str) -> RemoteUrlError:
    return RemoteUrlError(f"remote {shown!r} is refused: {why}")


def _hide_userinfo(match: re.Match[str]) -> str:
    scheme, userinfo = match.group("scheme"), match.group("userinfo")
    if scheme.lower() == "ssh://":
        user, colon, _ = userinfo.partition(":")
        return f"{scheme}{user}:{_HIDDEN}@" if colon else match.group(0)
    return f"{scheme}{_HIDDEN}@"


def redact_url(text: str) -> str:
    """``text`` with the credentials of every ``scheme://user:password@host`` in it hidden.

    http(s) and other schemes: the whole user part (``https://***@host/x``); ssh: only a
    password (``ssh://git:***@host/x``). Works on a URL alone and on a message quoting one.
    """
    return _USERINFO.sub(_hide_userinfo, text)


def redact_remote(text: str) -> str:
    """A remote URL as it may be shown: :func:`redact_url`, and the password of a
    ``user:password@host:path`` text (which no URL parser calls a URL) hidden too."""
    return _SCP_USERINFO.sub(r"\g<user>:" + _HIDDEN + "@", redact_url(text), count=1)


def _check_host(host: str, shown: str) -> str:
    if not host:
        raise _refuse(shown, "it names no host")
    if host.startswith("-"):
        raise _refuse(shown, "a host may not start with '-' (ssh would read it as an option)")
    if not _HOST_NAME.fullmatch(host):
        raise _refuse(shown, f"{host!r} is not a host name")
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _refuse(shown, f"{host!r} is not an IPv6 address in brackets") from None
    return host


def _is_loopback(host: str) -> bool:
    bare = host.strip("[]")
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def _parse_scheme_url(text: str, shown: str) -> RemoteUrl:
    scheme = text.split("://", 1)[0].lower()
    if scheme not in ("file", "https", "http", "ssh"):
        raise _refuse(
            shown, f"the {scheme!r} transport is not allowed (use a path, file, https or ssh)"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _refuse(shown, f"it is not a valid URL ({exc})") from None
    if parts.query or parts.fragment:
        raise _refuse(shown, "a remote URL has no query or fragment")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise _refuse(shown, "a file URL names no host")
        if not parts.path.startswith("/"):
            raise _refuse(shown, "a file URL needs an absolute path")
        return RemoteUrl(url=text, transport="file", shown=shown)
    host = parts.hostname or ""
    # urlsplit drops the brackets of an IPv6 address: checked (and shown) with them.
    host = _check_host(f"[{host}]" if ":" in host else host, shown)
    if port is not None and not 0 < port < 65536:
        raise _refuse(shown, "the port is out of range")
    if not parts.path or parts.path == "/":
        raise _refuse(shown, "it names no repository path")
    if scheme == "http" and not _is_loopback(host):
        raise _refuse(shown, "plain http is allowed only to this machine; use https")
    if scheme == "ssh" and (parts.username or "").startswith("-"):
        raise _refuse(shown, "a user name may not start with '-'")
    if scheme == "ssh" and parts.password is not None:
        # ssh takes no password from a URL (git hands ssh "user@host" only): a password
        # here would do nothing but sit in git's config.
        raise _refuse(shown, "an ssh URL holds no password (use ssh keys)")
    return RemoteUrl(url=text, transport=scheme, shown=shown)


def parse_remote_url(text: str, *, base: str | os.PathLike[str] | None = None) -> RemoteUrl:
    """Check ``text`` as a remote and return it; raise :class:`RemoteUrlError` otherwise.

    A relative local path is made absolute against ``base`` (default: the current
    directory), so the remote means the same thing from wherever git later runs.
    """
    if not isinstance(text, str) or not text.strip():
        raise RemoteUrlError("a remote URL is required")
    shown = redact_remote(text)
    if len(text) > MAX_URL_LENGTH:
        raise _refuse(shown[:80] + "…", f"it is longer than {MAX_URL_LENGTH} characters")
    if _CONTROL.search(text):
        raise _refuse(shown, "it holds a control character")
    if text.startswith("-"):
        raise _refuse(shown, "it may not start with '-'")
    if _HELPER.match(text):
        raise _refuse(shown, "a '<transport>::<address>' URL runs a remote helper program")
    if "://" in text:
        if " " in text:
            raise _refuse(shown, "a URL holds no space")
        return _parse_scheme_url(text, shown)
    scp = _SCP_LIKE.fullmatch(text)
    if scp is not None and "/" not in text.split(":", 1)[0]:
        if " " in text:
            raise _refuse(shown, "a host:path remote holds no space")
        _check_host(scp.group("host"), shown)
        if (scp.group("user") or "").startswith("-"):
            raise _refuse(shown, "a user name may not start with '-'")
        if not scp.group("path"):
            raise _refuse(shown, "it names no repository path")
        if _SCP_PASSWORD.match(scp.group("path")):
            # "user:password@host:path": git would hand "user" to ssh as the host and the
            # password would be shown as a path. ssh takes no password in a URL anyway.
            raise _refuse(shown, "a host:path remote holds no password (use ssh keys)")
        return RemoteUrl(url=text, transport="ssh", shown=shown)
    path = Path(base if base is not None else os.getcwd(), text)
    absolute = os.path.normpath(path if path.is_absolute() else path.absolute())
    return RemoteUrl(url=absolute, transport="file", shown=absolute)


# -- talking to a checked remote -------------------------------------------------------


#: How long one fetch or push may take (a first pull of a large memory over a slow link).
TRANSFER_TIMEOUT = 300.0


def _config_entries(runner: GitRunner, pattern: str) -> list[tuple[str, str, str]]:
    """``(scope, key, value)`` of every config entry whose key matches ``pattern``."""
    result = runner.run(
        ["config", "--show-scope", "--includes", "--null", "--get-regexp", pattern], check=False
    )
    if result.returncode not in (0, 1):
        return []
    entries = []
    # --null: "<scope>\0<key>\n<value>\0" per entry.
    fields = result.stdout.decode("utf-8", "replace").split("\0")
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        entries.append((scope, key, value))
    return entries


def repository_config(runner: GitRunner, pattern: str) -> list[str]:
    """Keys matching ``pattern`` (a ``git config --get-regexp`` pattern) that the
    repository's own config sets (its ``local`` and ``worktree`` levels and what they
    include) - the levels anyone who can write the repository controls."""
    return sorted(
        {
            key
            for scope, key, _ in _config_entries(runner, pattern)
            if scope not in (*USER_SCOPES, "command")
        }
    )


def check_transfer_config(runner: GitRunner) -> None:
    """Refuse a transfer the repository's own config would redirect.

    ``url.<base>.insteadOf`` rewrites every URL that starts with a given text - even the
    one we pass on the command line: a rule ``url."https://attacker/".insteadOf =
    "https://"`` would send a URL's credentials to another host. A transfer no longer reads
    the repository's config at all (:mod:`dsh_common.git_transfer_dir`), so such a rule
    would not apply; it is still refused, loudly, since a memory's own config that
    redirects its remote is one someone tampered with. The user's own (global) rewrites
    are kept.
    """
    keys = repository_config(runner, r"^url\..*\.(insteadof|pushinsteadof)$")
    if keys:
        raise RemoteConfigError(
            f"the repository's own git config rewrites remote URLs ({keys[0]}); remove it"
            " (`git config --local --unset ...`) before fetching or pushing"
        )


def _transfer_config(runner: GitRunner, transfer: TransferDir) -> list[str]:
    """``-c`` settings of a transfer: the user's ssh and credential helpers, and switches
    that keep it from running or writing anything else."""
    try:
        settings = user_program_config(runner, transfer)
    except UserProgramError as exc:
        raise RemoteConfigError(str(exc)) from None
    switches = [
        "push.gpgSign=false",
        "fetch.recurseSubmodules=false",
        "submodule.recurse=false",
        # What another repository sends us is checked as it arrives.
        "fetch.fsckObjects=true",
        # Config can name a file the cookies of a transfer are written to.
        "http.saveCookies=false",
        # With alternates, this names a shell command git runs to list their refs (the
        # private git directory's alternate is the repository: its refs are seeded).
        "core.alternateRefsCommand=true",
    ]
    return settings + [arg for switch in switches for arg in ("-c", switch)]


def _local_pack_program(runner: GitRunner, name: str) -> list[str]:
    """For a local remote: run its upload-pack / receive-pack with hooks and fsmonitor off.

    A push to a path starts a receiving git in that repository which reads *its* config
    and hooks, not our ``-c`` options; this hands it the same switches (git runs the
    command through the shell, so the program path is quoted).
    """
    git = shlex.quote(runner.program())
    switches = [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "protocol.allow=never",
        "core.alternateRefsCommand=true",
        # A non-bare remote set to updateInstead would check the push out in its work tree
        # (running the filters its config names); gc --auto would start more programs.
        "receive.denyCurrentBranch=refuse",
        "receive.autogc=false",
        "gc.auto=0",
    ]
    options = " ".join(f"-c {switch}" for switch in switches)
    return [f"--{name}={git} {options} {name}"]


@contextlib.contextmanager
def _private_dir(runner: GitRunner, *, seed_refs: bool) -> Iterator[TransferDir]:
    # Imported here: it needs shutil and tempfile, which status and search never load.
    from dsh_common.git_transfer_dir import transfer_dir  # noqa: PLC0415

    with contextlib.ExitStack() as stack:
        try:
            transfer = stack.enter_context(transfer_dir(runner, seed_refs=seed_refs))
        except SymlinkRejectedError as exc:
            raise RemoteConfigError(
                f"{exc.message}: the repository's git directory holds a link where a transfer"
                " makes its private git directory; remove it"
            ) from None
        yield transfer


def fetch(runner: GitRunner, remote: RemoteUrl, refspecs: Sequence[str]) -> GitResult:
    """``git fetch`` of ``refspecs`` from ``remote`` over its own transport only.

    It runs in a private git directory (none of the repository's config applies); the
    objects it brings are then moved into the repository and the refs named as the
    refspecs' destinations are set there.
    """
    from dsh_common.git_transfer_dir import adopt_objects, copy_refs  # noqa: PLC0415

    check_transfer_config(runner)
    targets = [spec.split(":", 1)[1] for spec in refspecs if ":" in spec]
    with _private_dir(runner, seed_refs=True) as transfer:
        args = [transfer.git_dir_option, *_transfer_config(runner, transfer), "fetch"]
        args += ["--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"]
        args += ["--no-auto-gc", "--quiet"]
        if remote.transport == "file":
            args += _local_pack_program(runner, "upload-pack")
        result = runner.run(
            [*args, "--", remote.url, *refspecs],
            transport=remote.transport,
            timeout=TRANSFER_TIMEOUT,
        )
        adopt_objects(transfer)
        copy_refs(runner, transfer, [t for t in targets if t.startswith("refs/")])
    return result


@dataclass(frozen=True)
class PushOutcome:
    """What a push did to one ref: ``pushed``, ``up-to-date`` or ``rejected`` (and why)."""

    status: str
    reason: str


def push(runner: GitRunner, remote: RemoteUrl, commit: str, branch: str) -> PushOutcome:
    """Push ``commit`` to ``refs/heads/<branch>`` of ``remote``, fast-forward only.

    No ``+``, no ``--force``: a push that is not a fast-forward is refused by git and
    reported as ``rejected`` with git's reason (``non-fast-forward``, ``fetch first``).
    """
    refspec = f"{commit}:refs/heads/{branch}"
    check_transfer_config(runner)
    with _private_dir(runner, seed_refs=False) as transfer:
        args = [transfer.git_dir_option, *_transfer_config(runner, transfer), "push"]
        args += ["--porcelain", "--no-verify", "--no-recurse-submodules", "--no-signed"]
        if remote.transport == "file":
            args += _local_pack_program(runner, "receive-pack")
        result = runner.run(
            [*args, "--", remote.url, refspec],
            transport=remote.transport,
            timeout=TRANSFER_TIMEOUT,
            check=False,
        )
    # --porcelain: "<flag>\t<from>:<to>\t<summary> (<reason>)" per ref.
    for line in result.text.splitlines():
        fields = line.split("\t")
        if len(fields) < 2 or not fields[1].endswith(f":refs/heads/{branch}"):
            continue
        flag, summary = fields[0], fields[2] if len(fields) > 2 else ""
        if flag == "=":
            return PushOutcome("up-to-date", summary)
        if flag == "!":
            reason = summary.partition("(")[2].rstrip(")") or summary.strip("[]")
            return PushOutcome("rejected", reason or "rejected")
        return PushOutcome("pushed", summary)
    if result.returncode != 0:
        first = result.stderr.strip().splitlines()[:1]
        raise GitError(
            "git push failed" + (f": {first[0]}" if first else ""),
            argv=result.argv,
            exit_code=result.returncode,
            stderr=result.stderr,
        )
    return PushOutcome("pushed", "")


#: What git says when the remote has no such branch (an empty repository, say).
_NO_REMOTE_REF = "couldn't find remote ref"


def fetch_branch(
    runner: GitRunner, remote: RemoteUrl, branch: str, tracking_ref: str
) -> str | None:
    """Fetch ``branch`` of ``remote`` into ``tracking_ref``; return its commit.

    None when the remote has no such branch (an empty repository): the tracking ref is then
    removed too, so nothing shows a tip the remote no longer has.
    """
    if not _BRANCH_NAME.fullmatch(branch) or not tracking_ref.startswith("refs/remotes/"):
        raise ValueError(f"refusing to fetch {branch!r} into {tracking_ref!r}")
    try:
        fetch(runner, remote, [f"+refs/heads/{branch}:{tracking_ref}"])
    except GitError as exc:
        if _NO_REMOTE_REF not in exc.stderr:
            raise
        runner.run(["update-ref", "-d", tracking_ref], check=False)
        return None
    return runner.rev_parse(f"{tracking_ref}^{{commit}}")

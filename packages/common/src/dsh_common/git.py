"""The one place that runs git.

Repositories are untrusted input: their config can name programs (``core.fsmonitor``,
hooks, filters, ``gpg.program``) that git would run on our behalf. Every command therefore

* is an argv list (never a shell) with ``--literal-pathspecs`` so a path is only a path,
* runs with every ``GIT_*`` variable removed from the environment (a caller's ``GIT_DIR``
  must not redirect us) and ``LC_ALL=C`` so messages can be matched, and no prompts,
* disables fsmonitor, hooks, signing, auto-gc and optional locks,
* can reach no transport at all, whatever the repository's config says: a partial clone's
  promisor remote would otherwise be fetched from the moment we look up a missing object,
  and ``remote.<name>.url = ext::<command>`` (or ``uploadpack``, ``core.sshCommand``) is a
  program. See :data:`TRANSPORT_ENV`. The one exception, a fetch or push of
  :mod:`dsh_common.git_remote`, opens the transport of a URL it checked, runs in a private
  git directory that reads none of the repository's config
  (:mod:`dsh_common.git_transfer_dir`), and gets a ``PATH`` without entries inside the
  repository either (it starts the user's ssh and credential helpers).
* has a per-command timeout, shares a total time budget with its runner, and has its
  output capped (the process is killed past the cap, not read to the end),
* starts the git found on ``PATH`` as an absolute path outside the repository (relative and
  empty ``PATH`` entries skipped: see :mod:`dsh_common.programs`), never a ``bin/git``
  committed to the repository it works in, and hands git a ``PATH`` without such entries.

Callers pass only the closed set of extra environment names in :data:`ALLOWED_ENV`.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from dsh_common.errors import (
    GitError,
    GitOutputTooLargeError,
    GitTimeoutError,
    GitUnavailableError,
)
from dsh_common.git_remote import redact_url
from dsh_common.programs import resolve_program, safe_search_path

#: Environment variables a caller may set for one command (alternate index, identity, dates).
ALLOWED_ENV: frozenset[str] = frozenset(
    {
        "GIT_INDEX_FILE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
    }
)

# Transport names git knows; each gets its own ``protocol.<name>.allow=never`` because a
# per-protocol setting in the repository's config beats ``protocol.allow=never``.
_KNOWN_PROTOCOLS = ("ext", "fd", "file", "ssh", "git", "http", "https", "ftp", "ftps")

#: Environment that keeps every transport closed (inherited by the ``git fetch`` that a
#: partial clone's lazy fetch spawns). ``GIT_ALLOW_PROTOCOL`` replaces all ``protocol.*``
#: config with its own list. The list may not be empty (git would then allow the transport
#: named "", i.e. ``::url`` or ``remote.<name>.vcs=`` running ``git-remote-``), so it names
#: one transport whose helper ``git-remote-<name>`` cannot exist: the name is longer than
#: any file system allows a file name to be (255 bytes). ``GIT_NO_LAZY_FETCH`` (git 2.44,
#: backported to 2.39.4+, ignored by older git) stops the lazy fetch before any transport.
TRANSPORT_ENV: Mapping[str, str] = MappingProxyType(
    {
        "GIT_ALLOW_PROTOCOL": "dsh-allows-no-transport-" + "x" * 256,
        "GIT_NO_LAZY_FETCH": "1",
    }
)

# Config that keeps git from running anything the repository names.
HARDENING_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=never" for name in _KNOWN_PROTOCOLS),
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.pager=cat",
    "credential.helper=",
)

DEFAULT_TIMEOUT = 10.0
DEFAULT_BUDGET = 60.0
DEFAULT_MAX_OUTPUT = 32 * 1024 * 1024
_STDERR_CAP = 64 * 1024


def hardened_env(
    extra: Mapping[str, str] | None = None,
    *,
    transport: str | None = None,
    outside: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """The environment for git: ours minus every ``GIT_*``, plus C locale, no prompts and
    no transport (or only ``transport``, for a fetch or push to a checked remote).

    ``PATH`` keeps only absolute entries, and with ``outside`` none inside that directory.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if "PATH" in env:
        # Nothing git starts is looked up in cwd (or, with outside, in the repository).
        env["PATH"] = safe_search_path(env["PATH"], outside=outside)
    env.update(
        {
            "LC_ALL": "C",
            "LANG": "C",
            "LANGUAGE": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_OPTIONAL_LOCKS": "0",
            **TRANSPORT_ENV,
        }
    )
    if transport is not None:
        env["GIT_ALLOW_PROTOCOL"] = _checked_transport(transport)
    for key, value in (extra or {}).items():
        if key not in ALLOWED_ENV:
            raise ValueError(f"environment variable {key} may not be passed to git")
        env[key] = value
    return env


#: The only commands :meth:`GitRunner.run` opens a transport for (git_remote's fetch and push).
_TRANSFER_COMMANDS = ("fetch", "push")


def _subcommand(args: Sequence[str]) -> str | None:
    """The git command ``args`` run, after any leading ``-c <setting>`` pairs and
    ``--git-dir=<dir>`` (git_remote's transfers run in a private git directory)."""
    index = 0
    while index < len(args):
        if args[index] == "-c" and index + 1 < len(args):
            index += 2
        elif args[index].startswith("--git-dir="):
            index += 1
        else:
            break
    return args[index] if index < len(args) else None


def _checked_transport(transport: str) -> str:
    # Only the short list of dsh_common.git_remote, never ext, fd or a helper's name.
    if transport not in ("file", "https", "http", "ssh"):
        raise ValueError(f"transport {transport!r} may not be allowed")
    return transport


@dataclass(frozen=True)
class GitResult:
    """A finished git command."""

    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")


@dataclass(frozen=True)
class IndexEntry:
    """One row of ``git ls-files -s``: mode, object id, merge stage and path."""

    mode: str
    object_id: str
    stage: int
    path: str


@dataclass(frozen=True)
class CatFileEntry:
    """One answer of ``git cat-file --batch``; ``type`` is "missing" when absent."""

    name: str
    object_id: str | None
    type: str
    size: int
    content: bytes | None


class GitRunner:
    """Runs hardened git commands in one directory, under one shared time budget."""

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        budget: float = DEFAULT_BUDGET,
        max_output: int = DEFAULT_MAX_OUTPUT,
        git: str = "git",
    ) -> None:
        #: ``git`` is a program name looked up on PATH (:func:`program`) or an absolute path.
        self.cwd = Path(cwd)
        self.timeout = timeout
        self.budget = budget
        self.max_output = max_output
        self.git = git
        self._program: str | None = None
        self._fence: Path | None = None
        self.commands_run = 0
        self._spent = 0.0

    def program(self) -> str:
        """The absolute path of the git this runner starts (GitUnavailableError if none).

        Found on PATH without its relative or empty entries, and never inside the work
        tree the runner works in (its git top level, else its directory).
        """
        if self._program is not None:
            return self._program
        found = resolve_program(self.git, outside=self.fence())
        if found is None:
            raise GitUnavailableError(
                f"git could not be started: no {self.git!r} on PATH outside {self.cwd} "
                "(relative and empty PATH entries are never searched)",
                argv=[self.git],
            )
        self._program = found
        return found

    def fence(self) -> Path:
        """The directory no program we start may come from: the git top level of the
        runner's directory, else that directory."""
        if self._fence is None:
            from dsh_common.locate import git_top_level  # noqa: PLC0415 - std-lib only, small

            top = git_top_level(self.cwd) if self.cwd.is_dir() else None
            self._fence = top if top is not None else self.cwd
        return self._fence

    @property
    def remaining_budget(self) -> float:
        return max(0.0, self.budget - self._spent)

    def argv(self, args: Sequence[str], *, transport: str | None = None) -> list[str]:
        """The full argv for ``args``: git, hardening config, global options, then args.

        ``transport`` opens that one transport (a later ``-c`` wins over the ``never`` of
        the hardening config); every other stays closed.
        """
        full = [self.git]
        for setting in HARDENING_CONFIG:
            full += ["-c", setting]
        if transport is not None:
            full += ["-c", f"protocol.{_checked_transport(transport)}.allow=always"]
        full += ["--no-optional-locks", "--literal-pathspecs", *args]
        return full

    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        max_output: int | None = None,
        transport: str | None = None,
    ) -> GitResult:
        """Run ``git <args>``; raise GitError on a non-zero exit when ``check``.

        ``transport`` is for :mod:`dsh_common.git_remote` only: fetch and push to a URL it
        checked, over that URL's own transport.
        """
        if transport is not None and _subcommand(args) not in _TRANSFER_COMMANDS:
            raise ValueError(f"a transport is opened only for {' and '.join(_TRANSFER_COMMANDS)}")
        argv = self.argv(args, transport=transport)
        shown = [redact_url(a) for a in argv]
        remaining = self.remaining_budget
        if remaining <= 0:
            exhausted = GitTimeoutError(
                f"git time budget of {self.budget:g}s is used up", argv=shown, exit_code=None
            )
            exhausted.budget_exhausted = True
            raise exhausted
        own_timeout = timeout if timeout is not None else self.timeout
        limit = min(own_timeout, remaining)
        cap = max_output if max_output is not None else self.max_output
        started = time.monotonic()
        program = self.program()
        try:
            proc = subprocess.Popen(
                [program, *argv[1:]],
                cwd=self.cwd,
                # A transfer starts the user's ssh and credential helpers: whatever they
                # look up by name is never found inside the repository.
                env=hardened_env(
                    env, transport=transport, outside=self.fence() if transport else None
                ),
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
            )
        except OSError as exc:
            raise GitUnavailableError(f"git could not be started: {exc}", argv=shown) from exc
        self.commands_run += 1
        try:
            stdout, stderr = _communicate_bounded(proc, input, started + limit, cap)
        except _Overflow:
            raise GitOutputTooLargeError(
                f"git printed more than {cap} bytes", argv=shown, exit_code=None
            ) from None
        except _Expired:
            expired = GitTimeoutError(
                f"git did not finish within {limit:.3g}s", argv=shown, exit_code=None
            )
            expired.budget_exhausted = limit < own_timeout
            raise expired from None
        finally:
            self._spent += time.monotonic() - started
        # git quotes a URL it failed on, credentials and all: never keep them.
        err_text = redact_url(stderr.decode("utf-8", "replace"))
        result = GitResult(argv=shown, returncode=proc.returncode, stdout=stdout, stderr=err_text)
        if check and proc.returncode != 0:
            first = err_text.strip().splitlines()[:1]
            raise GitError(
                f"git {_subcommand(args) or ''} failed with exit code {proc.returncode}"
                + (f": {first[0]}" if first else ""),
                argv=shown,
                exit_code=proc.returncode,
                stderr=err_text,
            )
        return result

    # -- a closed set of typed helpers --------------------------------------------------

    def top_level(self) -> Path:
        """The work tree's top-level directory (``rev-parse --show-toplevel``)."""
        return Path(self.run(["rev-parse", "--show-toplevel"]).text.rstrip("\n"))

    def rev_parse(self, revision: str, *, verify: bool = True) -> str | None:
        """The object id ``revision`` names, or None if it names nothing."""
        if revision.startswith("-"):
            raise ValueError("a revision may not start with '-'")
        args = ["rev-parse", "--verify", "--quiet", "--end-of-options", revision]
        if not verify:
            args = ["rev-parse", "--end-of-options", revision]
        result = self.run(args, check=False)
        return result.text.strip() if result.returncode == 0 else None

    def ls_files_stage(self, paths: Iterable[str] = ()) -> list[IndexEntry]:
        """Index entries (``ls-files -z -s``), optionally for the given literal paths."""
        result = self.run(["ls-files", "-z", "-s", "--", *paths])
        entries: list[IndexEntry] = []
        for record in result.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, object_id, stage = meta.decode().split(" ")
            entries.append(IndexEntry(mode, object_id, int(stage), path.decode("utf-8")))
        return entries

    def hash_objects(self, paths: Sequence[str], *, filters: bool = False) -> list[str]:
        """Blob ids of work-tree files, one process for all (``hash-object --stdin-paths``).

        ``--no-filters`` by default: a clean filter named by the repository is a program,
        and we never run it.
        """
        if not paths:
            return []
        if any("\n" in p or "\r" in p for p in paths):
            raise ValueError("hash_objects cannot take paths containing newlines")
        args = ["hash-object", "--stdin-paths"] + ([] if filters else ["--no-filters"])
        data = ("\n".join(paths) + "\n").encode("utf-8")
        lines = self.run(args, input=data).text.split()
        if len(lines) != len(paths):
            raise GitError("hash-object answered a different number of ids", argv=args)
        return lines

    def cat_file_batch(self, names: Sequence[str]) -> list[CatFileEntry]:
        """Contents of many objects in one process (``cat-file --batch``)."""
        return self._cat_file(names, with_content=True)

    def cat_file_batch_check(self, names: Sequence[str]) -> list[CatFileEntry]:
        """Type and size of many objects in one process (``cat-file --batch-check``)."""
        return self._cat_file(names, with_content=False)

    def _cat_file(self, names: Sequence[str], *, with_content: bool) -> list[CatFileEntry]:
        if not names:
            return []
        if any("\n" in n for n in names):
            raise ValueError("object names cannot contain newlines")
        mode = "--batch" if with_content else "--batch-check"
        out = self.run(["cat-file", mode], input=("\n".join(names) + "\n").encode()).stdout
        entries: list[CatFileEntry] = []
        pos = 0
        for name in names:
            newline = out.index(b"\n", pos)
            header = out[pos:newline].decode("utf-8", "replace")
            pos = newline + 1
            if header.endswith((" missing", " ambiguous")):
                entries.append(CatFileEntry(name, None, header.rsplit(" ", 1)[1], 0, None))
                continue
            object_id, kind, size_text = header.split(" ")
            size = int(size_text)
            content = None
            if with_content:
                content = out[pos : pos + size]
                pos += size + 1  # the content is followed by a newline
            entries.append(CatFileEntry(name, object_id, kind, size, content))
        return entries


class _Overflow(Exception):
    pass


class _Expired(Exception):
    pass


def _communicate_bounded(
    proc: subprocess.Popen[bytes], data: bytes | None, deadline: float, cap: int
) -> tuple[bytes, bytes]:
    """Like ``communicate`` but kills the process past ``deadline`` or ``cap`` bytes."""
    writer: threading.Thread | None = None
    if data is not None and proc.stdin is not None:
        stdin = proc.stdin

        def feed() -> None:
            try:
                stdin.write(data)
            except (BrokenPipeError, OSError):
                pass
            finally:
                try:
                    stdin.close()
                except OSError:
                    pass

        # A separate writer: git may fill its stdout pipe before it has read all input.
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover - PIPE was asked
        raise RuntimeError("git pipes were not created")
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    sizes = {out_fd: 0, err_fd: 0}
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    selector.register(proc.stderr, selectors.EVENT_READ)
    try:
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Expired
            for key, _ in selector.select(timeout=left):
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                sizes[fd] += len(chunk)
                if fd == out_fd:
                    if sizes[fd] > cap:
                        raise _Overflow
                    chunks[fd].append(chunk)
                elif sizes[fd] <= _STDERR_CAP:
                    chunks[fd].append(chunk)
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(left, 0.001))
        except subprocess.TimeoutExpired:
            raise _Expired from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        if writer is not None:
            writer.join(timeout=1.0)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])

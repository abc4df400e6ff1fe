"""One inspection's git session: a shared budget, cancellation, and failures as reason codes.

Every git command of an inspection goes through :class:`_Session`, which builds a hardened
``dsh_common.git.GitRunner`` per command with the time left and maps every runner failure to
one of the closed reasons (``timeout``, ``operation_budget_exceeded``, ``git_unavailable``,
``command_failed``, ``cancelled``).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dsh_common.errors import GitError, GitOutputTooLargeError, GitTimeoutError
from dsh_common.git import GitResult, GitRunner

FreshnessStatus = Literal["current", "potentially_stale", "unverifiable"]

#: A full SHA-1 or SHA-256 object id (``fullmatch`` only: ``match`` would let a newline in).
FULL_OBJECT_ID = re.compile(r"(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})")


@dataclass(frozen=True)
class SnapshotCheck:
    """The answer for one ``(commit, path)`` pair; ``reason`` is None only for ``current``."""

    status: FreshnessStatus
    reason: str | None


class _GitFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _unverifiable(reason: str) -> SnapshotCheck:
    return SnapshotCheck("unverifiable", reason)


class _Session:
    """Runs hardened git commands under one shared budget and maps failures to reasons."""

    def __init__(
        self,
        *,
        command_timeout: float,
        operation_budget: float,
        output_cap: int,
        cancel: threading.Event | None,
        git: str,
    ) -> None:
        self.command_timeout = command_timeout
        self.operation_budget = operation_budget
        self.output_cap = output_cap
        self.cancel = cancel
        self.git = git
        self.started = time.monotonic()
        self.commands_run = 0

    def run(
        self,
        cwd: str,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        max_output: int | None = None,
    ) -> GitResult:
        if self.cancel is not None and self.cancel.is_set():
            raise _GitFailure("cancelled")
        remaining = self.operation_budget - (time.monotonic() - self.started)
        if remaining <= 0:
            raise _GitFailure("operation_budget_exceeded")
        runner = GitRunner(
            cwd,
            timeout=min(self.command_timeout, remaining),
            budget=remaining,
            max_output=self.output_cap if max_output is None else max_output,
            git=self.git,
        )
        try:
            return runner.run(args, input=input, check=False)
        except GitOutputTooLargeError:
            raise _GitFailure("command_failed") from None
        except GitTimeoutError:
            # The command was cut at min(timeout, remaining budget): say which one bit.
            spent = time.monotonic() - self.started
            over_budget = spent >= self.operation_budget
            raise _GitFailure("operation_budget_exceeded" if over_budget else "timeout") from None
        except GitError as exc:
            # With check=False a GitError only means git could not be started at all.
            raise _GitFailure(
                "git_unavailable" if exc.exit_code is None else "command_failed"
            ) from None
        finally:
            self.commands_run += runner.commands_run

    def run_ok(
        self,
        cwd: str,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        max_output: int | None = None,
    ) -> GitResult:
        result = self.run(cwd, args, input=input, max_output=max_output)
        if result.returncode != 0:
            raise _GitFailure("command_failed")
        return result


def _split_nul(data: bytes) -> list[bytes]:
    if not data:
        return []
    if not data.endswith(b"\0"):
        raise _GitFailure("malformed_output")
    return data[:-1].split(b"\0")


def discover_root(session: _Session, workspace: str) -> str:
    """The work tree top level for ``workspace`` or a _GitFailure with the reason."""
    if not workspace or "\0" in workspace:
        raise _GitFailure("invalid_workspace")
    absolute = os.path.abspath(workspace)
    if not os.path.isdir(absolute):
        raise _GitFailure("invalid_workspace")
    result = session.run(absolute, ["rev-parse", "--show-toplevel"])
    if result.returncode != 0:
        raise _GitFailure("not_repository")
    # surrogateescape: a root whose name is not UTF-8 must still name the same directory.
    root = result.stdout.decode("utf-8", "surrogateescape")
    root = root[:-1] if root.endswith("\n") else root
    if not root or "\n" in root or "\0" in root or not os.path.isabs(root):
        # Also a bare repository or a .git directory: there is no work tree to compare.
        raise _GitFailure("malformed_output" if root else "not_repository")
    return root

"""The user's own programs for a transfer: the ssh command and the credential helpers.

Every git command we run ends the credential-helper list (``credential.helper=``, see
:mod:`dsh_common.git`) and strips every ``GIT_*`` variable, so without this module a fetch
or push would have no helper and the default ssh. What a person configured for their own
git is handed back here, from their own config only (system and global - a transfer runs
in a private git directory whose config names nothing, :mod:`dsh_common.git_transfer_dir`),
never from the repository's:

* **ssh**, in git's order: ``$GIT_SSH_COMMAND``, else ``core.sshCommand``, else
  ``$GIT_SSH`` (a program, found as an absolute path outside the repository), else
  ``ssh -o BatchMode=yes`` (a passphrase or host-key question fails at once instead of
  waiting for a terminal no agent has); ``$GIT_SSH_VARIANT`` is kept too.
* **credential helpers**, plain (``credential.helper``) and URL-scoped
  (``credential.https://github.com.helper``, what ``gh auth setup-git`` writes), each with
  its own key and in the config's order, empty values (which end the list so far)
  included - git then matches them against the URL exactly as it would have. A helper
  named by a plain name (``store --file ~/.creds``: git runs ``git credential-store ...``)
  is run by the absolute git this runner uses; an absolute path is refused when it lies
  inside the repository (``unsafe-config``).

A ``!command`` helper, ``core.sshCommand`` and ``$GIT_SSH_COMMAND`` are shell code the person
wrote into their own config or environment, and run as written: they are their choice, as
their shell aliases are, and shell code cannot be resolved word by word without being a
shell. What they look up by name is found on the transfer's ``PATH``, which has no
relative or empty entry and no entry inside the repository (:meth:`dsh_common.git.
GitRunner.run`), so it is never a file the repository holds.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dsh_common.programs import resolve_program

if TYPE_CHECKING:
    from dsh_common.git import GitRunner
    from dsh_common.git_transfer_dir import TransferDir

#: ``ssh.variant`` values git knows (``$GIT_SSH_VARIANT`` takes the same).
SSH_VARIANTS = ("auto", "ssh", "plink", "putty", "tortoiseplink", "simple")
#: Config levels that are the user's own; ``local`` and ``worktree`` belong to the
#: repository (untrusted), ``command`` is ours (the runner's ``-c``).
USER_SCOPES = ("system", "global")
_PATTERN = r"^(credential\..+\.helper|credential\.helper|core\.sshcommand)$"


class UserProgramError(ValueError):
    """The user's config names a program we will not start (raised as ``unsafe-config``)."""


def _entries(runner: GitRunner, transfer: TransferDir) -> list[tuple[str, str]]:
    """``(key, value)`` of the user's ssh command and credential helpers, in config order."""
    result = runner.run(
        [
            transfer.git_dir_option,
            "config",
            "--show-scope",
            "--includes",
            "--null",
            "--get-regexp",
            _PATTERN,
        ],
        check=False,
    )
    if result.returncode not in (0, 1):
        return []
    fields = result.stdout.decode("utf-8", "replace").split("\0")
    entries = []
    # --null: "<scope>\0<key>\n<value>\0" per entry.
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if scope in USER_SCOPES:
            entries.append((key, value))
    return entries


def _inside(path: str, fence: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(fence)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _helper(key: str, value: str, runner: GitRunner) -> str:
    """A credential helper as git will run it (see the module docstring)."""
    if not value or value.startswith("!"):
        return value  # "" ends the list; "!..." is the user's shell code
    if value.startswith("/"):  # git's test for "an absolute path": run as "<value> get"
        program = value.split(None, 1)[0]
        if _inside(program, str(runner.fence())):
            raise UserProgramError(
                f"your git config's {key} names {program}, inside the repository"
                f" {runner.fence()}: a program the repository holds never runs"
            )
        return value
    # git runs "git credential-<value>" through the shell: the same, with our own git.
    return f"!{shlex.quote(runner.program())} credential-{value}"


def _ssh_command(runner: GitRunner, configured: str | None, env: Mapping[str, str]) -> str:
    if env.get("GIT_SSH_COMMAND"):
        return env["GIT_SSH_COMMAND"]
    if configured is not None:
        return configured
    if env.get("GIT_SSH"):
        program = resolve_program(env["GIT_SSH"], outside=runner.fence())
        # (An absolute name is returned as it is: checked here.)
        if program is None or _inside(program, str(runner.fence())):
            raise UserProgramError(
                f"GIT_SSH names {env['GIT_SSH']!r}, which is no program outside the"
                f" repository {runner.fence()}"
            )
        return shlex.quote(program)
    program = resolve_program("ssh", outside=runner.fence())
    return f"{shlex.quote(program or 'ssh')} -o BatchMode=yes"


def user_program_config(
    runner: GitRunner, transfer: TransferDir, env: Mapping[str, str] | None = None
) -> list[str]:
    """``-c`` arguments that hand a transfer the user's ssh command and credential helpers
    (``env``: the environment ``GIT_SSH*`` are read from, default this process's)."""
    source = os.environ if env is None else env
    entries = _entries(runner, transfer)
    ssh = [value for key, value in entries if key == "core.sshcommand"]
    settings = [f"core.sshCommand={_ssh_command(runner, ssh[-1] if ssh else None, source)}"]
    if source.get("GIT_SSH_VARIANT") in SSH_VARIANTS:
        settings.append(f"ssh.variant={source['GIT_SSH_VARIANT']}")
    for key, value in entries:
        # A key git's own "-c key=value" cannot spell (an "=" in a URL) cannot be handed on.
        if key != "core.sshcommand" and "=" not in key:
            settings.append(f"{key}={_helper(key, value, runner)}")
    return [arg for setting in settings for arg in ("-c", setting)]

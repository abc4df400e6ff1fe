"""Run the consolidating agent on the staging folder: fixed prompt, minimal env, time limit.

The agent only *edits files* in the staging folder; its output goes to a private log that
is never parsed (a model's prose decides nothing) - only when the agent fails does the
error message quote the log's last lines, for the person running the sync.

Agents (``--agent``):

- ``dsh`` (default): the earlier tool's headless invocation,
  ``dsh --profile headless --patch <patch> "<prompt>"`` in the staging folder, where the
  patch routes DSH's ``session-persistence-jsonl`` to a private folder (so the sync's own
  session never shows up among the user's sessions). ``$DSH_BIN`` names another program.
- ``claude``: ``claude -p --permission-mode acceptEdits --allowedTools "Read(/<transcripts>/**)"
  -- "<prompt>"`` in the staging folder (``--allowedTools`` takes many values, hence ``--``):
  edits are accepted inside that folder only; the transcripts folder is readable.
- ``codex``: ``codex exec --skip-git-repo-check -s workspace-write -C <staging> "<prompt>"``:
  the sandbox allows writes in the staging folder only.
- ``command``: ``--agent-command`` split like a shell would (no shell runs), with the prompt
  as its last argument.

The child environment is rebuilt from nothing: ``HOME``, ``PATH``, ``LANG``, ``LC_*``, the
DSH control values (``DSH_HOME``, ``DSH_PERMISSION_MODE`` default ``workspace-write``,
``DSH_TELEMETRY_DISABLED=1``), ``TMPDIR`` pointing into the private folder, the two folders
(``DSH_MEMORY_STAGING``, ``DSH_MEMORY_SESSIONS``), and only the provider variables named in
``DSH_MEMORY_PROVIDER_ENV_NAMES`` (space separated, each ``[A-Za-z_][A-Za-z0-9_]*``).
Everything else - API keys, tokens, ``GIT_*`` - stays out. stdin is ``/dev/null`` (both
agent CLIs block on an open pipe).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh_common.errors import shown
from dsh_common.programs import resolve_program, safe_search_path
from dsh_memory.errors import (
    AgentFailedError,
    AgentTimeoutError,
    SyncInvalidRequestError,
    SyncUnavailableError,
)

AGENTS = ("dsh", "claude", "codex", "command")
DEFAULT_TIMEOUT_SECONDS = 1800.0
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PASS_THROUGH = ("HOME", "PATH", "LANG", "DSH_HOME")

PROMPT = """You are the dsh-memory consolidation agent running one incremental sync.
Do not extract or consolidate this session itself.

Work only in the staging memory repository {staging} (read its README.md first, above all
its section "提炼与整合" (distill and consolidate): it holds the rules). You may change
only summary.md, handbook/, rollouts/ and archive/ there.
Do not change README.md, do not create other files or folders, do not run git.

The redacted transcripts of {count} new session(s) are in {sessions} (one Markdown file
each). Read them. Keep only verified, durable, reusable knowledge: stable preferences,
final decisions and their reasons, failure modes, project entry points, reproducible
commands. Write records as Markdown with front matter (schema_version: 1, id, type).
When nothing is worth keeping, change nothing. Contradicted records are replaced, not
appended to; outdated ones move to archive/. Never write credentials.
The host validates, commits and journals your file changes; you only edit files.
"""


@dataclass(frozen=True)
class AgentRun:
    """Where the agent works and what it reads."""

    staging: Path
    sessions: Path
    private: Path
    session_count: int


def build_prompt(run: AgentRun) -> str:
    return PROMPT.format(staging=run.staging, sessions=run.sessions, count=run.session_count)


def child_environment(source: Mapping[str, str], run: AgentRun) -> dict[str, str]:
    """The allow-listed environment of the agent (values are copied, never logged)."""
    env = {name: source[name] for name in _PASS_THROUGH if source.get(name)}
    env.update({k: v for k, v in source.items() if k.startswith("LC_")})
    # The agent (and whatever it starts) looks nothing up in its working directory.
    env["PATH"] = safe_search_path(env.get("PATH") or "/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    tmp = run.private / "agent-tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    env["TMPDIR"] = str(tmp)
    env["DSH_PERMISSION_MODE"] = source.get("DSH_PERMISSION_MODE") or "workspace-write"
    env["DSH_TELEMETRY_DISABLED"] = "1"
    env["DSH_MEMORY_STAGING"] = str(run.staging)
    env["DSH_MEMORY_SESSIONS"] = str(run.sessions)
    for name in (source.get("DSH_MEMORY_PROVIDER_ENV_NAMES") or "").split():
        if not _NAME_RE.fullmatch(name):
            raise SyncInvalidRequestError(f"invalid provider environment variable name: {name}")
        if name in source:
            env[name] = source[name]
    return env


def _resolve(program: str, env: Mapping[str, str]) -> str:
    # An absolute path from an absolute PATH entry: the agent starts in the staging folder,
    # where a relative entry or name would mean something else again.
    found = resolve_program(program, path=env.get("PATH") or "/usr/bin:/bin")
    if found is None:
        raise SyncUnavailableError(
            f"the agent program {program!r} is not on PATH (give an absolute path or a "
            "name; relative and empty PATH entries are never searched)"
        )
    return found


def resolve_agent(agent: str | None, command: str | None) -> str:
    """The agent kind to run: ``agent``, else ``command`` when a command is given, else
    ``dsh``. An explicit option is never ignored: ``--agent-command`` with an agent other
    than ``command`` is refused (``sync-invalid-request``), as is an unknown agent."""
    given = command is not None and command.strip() != ""
    if agent is None:
        return "command" if given else "dsh"
    if agent not in AGENTS:
        raise SyncInvalidRequestError(
            f"unknown agent {shown(agent)}; choose one of {', '.join(AGENTS)}"
        )
    if given and agent != "command":
        raise SyncInvalidRequestError(
            f"--agent-command runs with --agent command, not --agent {agent}: drop one of them"
        )
    return agent


def agent_argv(
    agent: str,
    run: AgentRun,
    env: Mapping[str, str],
    *,
    command: str | None = None,
    dsh_bin: str | None = None,
) -> list[str]:
    """The argv of one agent kind (see the module docstring)."""
    prompt = build_prompt(run)
    if agent == "dsh":
        patch = run.private / "headless-session.patch.yml"
        session_root = run.private / "headless-sessions"
        patch.write_text(
            f"- id: session-persistence-jsonl\n  config:\n    root: {session_root}\n",
            encoding="utf-8",
        )
        os.chmod(patch, 0o600)
        program = _resolve(dsh_bin or "dsh", env)
        return [program, "--profile", "headless", "--patch", str(patch), prompt]
    if agent == "claude":
        program = _resolve("claude", env)
        return [
            program,
            "-p",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            f"Read(/{run.sessions}/**)",
            "--",
            prompt,
        ]
    if agent == "codex":
        program = _resolve("codex", env)
        return [
            program,
            "exec",
            "--skip-git-repo-check",
            "-s",
            "workspace-write",
            "-C",
            str(run.staging),
            prompt,
        ]
    if agent == "command":
        if not command or not command.strip():
            raise SyncInvalidRequestError("--agent command needs --agent-command")
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise SyncInvalidRequestError(f"--agent-command cannot be split: {exc}") from exc
        return [_resolve(words[0], env), *words[1:], prompt]
    raise SyncInvalidRequestError(
        f"unknown agent {shown(agent)}; choose one of {', '.join(AGENTS)}"
    )


def run_agent(
    agent: str,
    run: AgentRun,
    source_env: Mapping[str, str],
    *,
    command: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> int:
    """Run the agent to completion in the staging folder; return its exit code (0).

    The agent runs in its own process group, so a timeout kills it *and* whatever it
    started (a model CLI spawns helpers). Output goes to ``agent.log`` in the private
    folder; it is never read back by the sync.
    """
    child_env = child_environment(source_env, run)
    argv = agent_argv(agent, run, child_env, command=command, dsh_bin=source_env.get("DSH_BIN"))
    log_path = run.private / "agent.log"
    with open(log_path, "wb") as log:
        try:
            process = subprocess.Popen(
                argv,
                cwd=run.staging,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise SyncUnavailableError(f"the agent could not be started: {exc}") from exc
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AgentTimeoutError(f"the agent ran past its {timeout:g} s limit") from None
    # A killed group may leave grandchildren writing; the staging folder is validated
    # after this point only, and the group is gone by now.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if code != 0:
        raise AgentFailedError(f"the agent exited with status {code}: {_log_tail(log_path)}")
    return code


def _log_tail(path: Path, limit: int = 600) -> str:
    """The end of the agent's output, for the person reading the error (never journaled:
    the private folder and its log are removed when the run ends)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, path.stat().st_size - limit))
            tail = handle.read(limit).decode("utf-8", errors="replace").strip()
    except OSError:
        return "(no output)"
    return tail or "(no output)"

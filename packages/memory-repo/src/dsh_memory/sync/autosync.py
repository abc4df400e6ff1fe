"""Start ``dsh-memory-sync`` in the background when the last sync is old (off by default).

Memory grows when ``dsh-memory-sync`` turns idle sessions into records. Rather than asking
users for a scheduler, the session-start hook may start it: when the setting
``memory.auto_sync_interval_minutes`` in ``$DSH_HOME/settings.yaml`` is a positive number
of minutes and ``.last-sync`` (whose modification time the sync advances) is older than
that, the hook spawns ``dsh-memory-sync`` fully detached (own session, no stdin/stdout,
not waited for) and returns at once. It never spawns when the setting is absent or 0,
when memory is disabled, when the command is not installed, when a sync holds the
operation lock, or when it already spawned one within the interval (a throttle stamp,
``$DSH_HOME/state/memory-auto-sync.stamp``, keeps many parallel sessions from starting
many syncs - the sync itself serialises on its operation lock anyway). The command is
``$DSH_MEMORY_SYNC_COMMAND`` when set (an absolute path, or a name looked up on ``PATH``),
else the ``dsh-memory-sync`` installed beside this Python, else the one on ``PATH`` - always
through :func:`dsh_common.programs.resolve_program`: the hook runs in whatever repository
the agent opened, and a relative or empty ``PATH`` entry, or a ``PATH`` entry inside that
repository, would otherwise start a ``dsh-memory-sync`` committed to it. The sync starts in
``$DSH_HOME``, with ``PATH`` stripped of such entries, never in the repository.

``memory.auto_sync_agent`` (``dsh``, ``claude`` or ``codex``) is passed as ``--agent``; the
sync runs with ``--json`` (its output goes nowhere anyway). ``memory.auto_sync_remote: true``
adds ``--remote`` when the memory has a Git remote: the background sync then pulls before
and pushes after its run (see :mod:`dsh_memory.remote.remote_sync`); without a remote it syncs
locally as before.

The settings are read the way :mod:`dsh_memory.store.settings` reads ``enabled``: one key of the
top-level ``memory:`` block, line by line, nothing else of the file interpreted.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from dsh_memory.store.root import LAST_SYNC_FILE, dsh_home

SETTING = "auto_sync_interval_minutes"
SYNC_COMMAND = "dsh-memory-sync"
STAMP = Path("state") / "memory-auto-sync.stamp"

_KEY = re.compile(r"^[ \t]+auto_sync_interval_minutes\s*:\s*(?P<value>[0-9]+)\s*(?:#.*)?$")
_REMOTE = re.compile(r"^[ \t]+auto_sync_remote\s*:\s*(?P<value>true|false)\s*(?:#.*)?$")
_AGENT = re.compile(
    r"^[ \t]+auto_sync_agent\s*:\s*[\"']?(?P<value>dsh|claude|codex)[\"']?\s*(?:#.*)?$"
)


def _memory_lines(settings_file: Path) -> list[str]:
    """The lines of the ``memory:`` block; none when the file cannot be read."""
    from dsh_memory.store.settings import _memory_block, _read_lines  # noqa: PLC0415

    try:
        lines = _read_lines(settings_file)
        block = _memory_block(lines) if lines is not None else None
    except Exception:  # an unreadable settings file means: do not start anything
        return []
    if lines is None or block is None:
        return []
    return [line.rstrip("\r\n") for line in lines[block[0] + 1 : block[1]]]


def interval_minutes(settings_file: Path) -> int:
    """The configured interval, 0 (off) when absent or unreadable."""
    for line in _memory_lines(settings_file):
        match = _KEY.match(line)
        if match is not None:
            return int(match["value"])
    return 0


def sync_agent(settings_file: Path) -> str | None:
    """``memory.auto_sync_agent`` (dsh, claude or codex), or None for the sync's default."""
    for line in _memory_lines(settings_file):
        match = _AGENT.match(line)
        if match is not None:
            return match["value"]
    return None


def sync_remote(settings_file: Path) -> bool:
    """``memory.auto_sync_remote`` (default false)."""
    for line in _memory_lines(settings_file):
        match = _REMOTE.match(line)
        if match is not None:
            return match["value"] == "true"
    return False


def has_remote(root: Path) -> bool:
    """Whether the memory's own config names a remote URL (read through the hardened git)."""
    from dsh_common.errors import DshError  # noqa: PLC0415 - only on the spawning path
    from dsh_common.git import GitRunner  # noqa: PLC0415

    try:
        result = GitRunner(root, budget=5).run(
            ["config", "--local", "--get", "remote.origin.url"], check=False
        )
    except DshError:
        return False
    return result.returncode == 0 and bool(result.text.strip())


def sync_command(env: Mapping[str, str] | None = None) -> str | None:
    """``$DSH_MEMORY_SYNC_COMMAND``, else ``dsh-memory-sync`` beside this Python, else on
    ``PATH``, as an absolute path outside the working directory's repository; else None
    (not installed: nothing is started)."""
    from dsh_common.locate import git_top_level  # noqa: PLC0415 - only on the spawning path
    from dsh_common.programs import resolve_program, search_path  # noqa: PLC0415

    source = os.environ if env is None else env
    here = os.getcwd()
    top = git_top_level(here)
    outside = str(top) if top is not None else here
    path = search_path(source)
    configured = source.get("DSH_MEMORY_SYNC_COMMAND")
    if configured:
        return resolve_program(configured, path=path, outside=outside)
    beside = Path(sys.executable).parent / SYNC_COMMAND
    found = resolve_program(str(beside), outside=outside) if beside.is_absolute() else None
    return found or resolve_program(SYNC_COMMAND, path=path, outside=outside)


def _age_seconds(path: Path, now: float) -> float | None:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return None


def due(root: Path, minutes: int, env: Mapping[str, str] | None = None) -> bool:
    """True when a sync should start now (interval passed, no sync running, not throttled)."""
    if minutes <= 0:
        return False
    now = time.time()
    interval = minutes * 60
    last = _age_seconds(root / LAST_SYNC_FILE, now)
    if last is None or last < interval:
        return False  # no initialised repository, or synced recently
    if (root / ".sync" / "operation.lock").exists():
        return False
    stamp = _age_seconds(dsh_home(env) / STAMP, now)
    return stamp is None or stamp >= interval


def spawn_sync(
    command: str,
    agent: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    remote: bool = False,
) -> int:
    """Start ``command`` detached; touch the throttle stamp; return the child's pid."""
    import subprocess  # noqa: PLC0415 - only on the rare path that spawns

    stamp = dsh_home(env) / STAMP
    stamp.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp.touch()
    from dsh_common.programs import safe_search_path  # noqa: PLC0415

    argv = [
        command,
        "--json",
        *(["--agent", agent] if agent else []),
        *(["--remote"] if remote else []),
    ]
    child_env = {**(os.environ if env is None else env)}
    child_env["PATH"] = safe_search_path(child_env.get("PATH"))
    child = subprocess.Popen(
        argv,
        cwd=stamp.parent,  # $DSH_HOME/state: never the repository the hook ran in
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the hook and the agent session
        close_fds=True,
    )
    return child.pid


def maybe_start_sync(root: Path, settings_file: Path) -> int | None:
    """Spawn a background sync when one is due; the pid, or None."""
    minutes = interval_minutes(settings_file)
    if not due(root, minutes):
        return None
    command = sync_command()
    if command is None:
        return None
    remote = sync_remote(settings_file) and has_remote(root)
    return spawn_sync(command, sync_agent(settings_file), remote=remote)

"""Register a product's MCP server and hooks in Claude Code or Codex, and undo exactly that.

Used by ``dsh-compound setup``, ``dsh-memory setup`` and ``dsh-knowledge setup``. Pure
library: it plans file changes (:func:`plan`: every file found, checked, parsed and its new
content computed, nothing written), shows them as a unified diff, and applies them
(:func:`run_setup`). The files are those the hosts document:

- claude-code, project: ``<project>/.mcp.json`` (``mcpServers``) and
  ``<project>/.claude/settings.json`` (``hooks``);
- claude-code, user: ``~/.claude.json`` (``mcpServers``) and ``~/.claude/settings.json``;
- codex, user: ``$CODEX_HOME/config.toml`` (``[mcp_servers.NAME]``, default
  ``~/.codex``) and ``$CODEX_HOME/hooks.json``;
- codex, project: ``<project>/.codex/config.toml`` and ``<project>/.codex/hooks.json``
  (Codex reads them only for a project the user marked trusted).

Merging rules: every other key, server and hook of the user's files is kept as it was;
within our own entries only what :mod:`dsh_common.agent_setup_entries` calls ours is
refreshed (the user's ``env``, extra options and hook settings stay). Our server is the
entry named after the product; our hooks are the command hooks running the product's
command (by file name) with ``hook <subcommand>`` under the event setup registers it for.
Running setup twice changes nothing the second time; ``remove`` deletes only those entries,
then any container (a hook event list, ``hooks``, ``mcpServers``) that became empty, then a
file that became empty - so setup followed by remove leaves the files as they were. JSON is
written back with the indentation, line endings and final newline the file already had.

Applying: folders and lock files are made first; then, under the locks, every file is read
and planned again and written atomically, each only if it still holds the bytes planned
from (:mod:`dsh_common.agent_setup_files`). Concurrent setups therefore keep each other's
entries, and a failure leaves the files as they were.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_common import toml_tables
from dsh_common.agent_setup_entries import (
    HOOK_TIMEOUT_SECONDS,
    AgentSetupError,
    ConfigInvalidError,
    OurHook,
    SetupOption,
    hook_command_line,
    merge_hooks,
    merge_json_server,
    server_entry,
)
from dsh_common.agent_setup_files import (
    ConfigChangedError,
    ConfigUnwritableError,
    FileChange,
    locked,
    make_folders,
    prune,
    read_text,
    remove_empty_folders,
    target,
    write_all,
)
from dsh_common.programs import resolve_program

__all__ = [
    "HOOK_TIMEOUT_SECONDS",
    "HOSTS",
    "SCOPES",
    "AgentSetupError",
    "ConfigChangedError",
    "ConfigInvalidError",
    "ConfigUnwritableError",
    "FileChange",
    "Integration",
    "Locations",
    "SetupOption",
    "hook_command",
    "locations",
    "plan",
    "resolve_command",
    "run_setup",
]

HOSTS = ("claude-code", "codex")
SCOPES = ("user", "project")
#: How often setup plans again when a file changed between its read and its write.
_ATTEMPTS = 5
_SURROGATE = re.compile("[\ud800-\udfff]")

#: ``(option, value)`` pairs given to setup (see :class:`SetupOption`).
GivenOptions = Sequence[tuple[SetupOption, str]]
#: A JSON file's new text by (path, old text): what one run of setup computed already.
_Memo = dict[tuple[Path, str | None], str | None]


@dataclass(frozen=True)
class Integration:
    """What one product registers: its MCP server and its hook commands."""

    server: str  # the MCP server name, e.g. "dsh-compound"
    program: str  # the console script name, e.g. "dsh-compound"
    mcp_args: tuple[str, ...] = ("mcp",)
    #: (host event name, arguments after the program), e.g. ("SessionStart", ("hook", ...)).
    #: An argument ``{host}`` becomes the host's name (``claude-code`` or ``codex``).
    hooks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    command: str | None = None  # the resolved program; see resolve_command
    #: Variables copied into Codex's server entry when set at setup time: Codex starts MCP
    #: servers with a minimal environment, so a non-default DSH_HOME would not reach them.
    env_names: tuple[str, ...] = ("DSH_HOME",)
    #: Whole files we own, by path under the host's config folder (``~/.claude``,
    #: ``<project>/.claude``, ``$CODEX_HOME``, ``<project>/.codex``), e.g. a skill.
    files: tuple[tuple[str, str], ...] = ()


@dataclass
class Locations:
    """The two files a host and scope use."""

    mcp: Path
    hooks: Path
    kind: str = field(default="json")  # "json" (Claude) or "toml" (Codex) for the MCP file
    base: Path = field(default=Path())  # the host's config folder for this scope


def resolve_command(program: str) -> str:
    """The absolute path of ``program``: beside the running Python, else found on ``PATH``.

    A host starts hooks and servers with its own ``PATH``, which often lacks the virtual
    environment's ``bin``; the console script next to ``sys.executable`` is the one that
    belongs to this installation. Not resolved through symlinks: a venv's python is one.
    Otherwise ``PATH`` is searched as :func:`dsh_common.programs.resolve_program` does
    (absolute entries only). A bare name is never written: the host would look it up on
    its own ``PATH`` from inside whatever repository the user opened, where a relative entry
    finds a program anyone who can commit there planted.
    """
    candidate = Path(sys.executable).parent / program
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = resolve_program(program)
    if found is None:
        raise AgentSetupError(
            f"{program} is neither beside this Python ({Path(sys.executable).parent}) nor on an"
            " absolute PATH entry: run setup with the installation that has the command"
        )
    return found


def locations(
    host: str, scope: str, project_dir: Path, env: Mapping[str, str] | None = None
) -> Locations:
    """Where ``host`` keeps MCP servers and hooks for ``scope``."""
    environ = os.environ if env is None else env
    home = Path(environ.get("HOME") or Path.home())
    if host == "claude-code":
        if scope == "project":
            base = project_dir / ".claude"
            return Locations(project_dir / ".mcp.json", base / "settings.json", base=base)
        base = home / ".claude"
        return Locations(home / ".claude.json", base / "settings.json", base=base)
    if host == "codex":
        if scope == "project":
            base = project_dir / ".codex"
        else:
            base = Path(environ.get("CODEX_HOME") or home / ".codex")
        return Locations(base / "config.toml", base / "hooks.json", kind="toml", base=base)
    raise AgentSetupError(f"unknown host {host!r}; expected one of: {', '.join(HOSTS)}")


def _escape_surrogates(text: str) -> str:
    # json.loads accepts "\ud800" (valid JSON) and gives a lone surrogate, which UTF-8
    # cannot encode: write it back as the escape it was read from.
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ConfigInvalidError(f"{path} is nested too deeply to edit") from exc
    except ValueError as exc:
        raise ConfigInvalidError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigInvalidError(f"{path} does not hold a JSON object")
    return value


def _dump_json(document: dict[str, Any], like: str | None) -> str | None:
    """``document`` in the style of the text it replaces; None for an empty document."""
    if not document:
        return None
    indent: int | str = 2
    if like:
        for line in like.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                whitespace = line[: len(line) - len(stripped)]
                indent = len(whitespace) if whitespace.strip(" ") == "" else whitespace
                break
    try:
        text = _escape_surrogates(json.dumps(document, indent=indent, ensure_ascii=False))
    except RecursionError as exc:
        raise ConfigInvalidError("a config document is nested too deeply to edit") from exc
    text = text + "\n" if like is None or like.endswith("\n") else text
    # Raw newlines occur only between tokens (inside strings they are escaped).
    return text.replace("\n", "\r\n") if like and "\r\n" in like else text


def hook_command(integration: Integration, args: Sequence[str]) -> str:
    """The shell command line of one hook (hosts run hook commands through a shell)."""
    return hook_command_line(integration.command or integration.program, args)


def _our_hooks(integration: Integration, host: str, options: GivenOptions) -> list[OurHook]:
    hooks = []
    for event, args in integration.hooks:
        words = tuple(host if arg == "{host}" else arg for arg in args)
        sub = words[1] if len(words) > 1 else ""
        written = tuple((o.flag, value) for o, value in options if sub in o.hooks)
        hooks.append(OurHook(event, words, written))
    return hooks


def _set(variables: Mapping[str, str | None]) -> dict[str, str]:
    return {name: value for name, value in variables.items() if value is not None}


def _passed_env(integration: Integration, env: Mapping[str, str] | None) -> dict[str, str]:
    environ = os.environ if env is None else env
    return {name: environ[name] for name in integration.env_names if environ.get(name)}


def _refuse_undecodable(
    integration: Integration, passed: Mapping[str, str], options: GivenOptions
) -> None:
    """Our own values must be UTF-8: a host could not find a path we wrote mangled."""
    named = [("the command", integration.command or integration.program)]
    named += [(f"${name}", value) for name, value in passed.items()]
    named += [(option.flag, value) for option, value in options]
    for what, value in named:
        if _SURROGATE.search(value):
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise AgentSetupError(f"{what} {shown!r} is not valid UTF-8; nothing was changed")


def _server_change(
    integration: Integration,
    path: Path,
    kind: str,
    *,
    remove: bool,
    passed: Mapping[str, str],
    options: GivenOptions,
    confined: Path | None,
    memo: _Memo,
    variables: Mapping[str, str | None],
) -> FileChange:
    text = read_text(path)
    command = integration.command or integration.program
    written = [(option.flag, value) for option, value in options if option.server]

    def entry_for(existing: Any, where: str) -> dict[str, Any]:
        return server_entry(
            existing,
            kind=kind,
            command=command,
            fixed_args=integration.mcp_args,
            written=written,
            env=passed if kind == "toml" else {},
            where=where,
            variables=variables,
        )

    if kind == "toml":
        table = ["mcp_servers", integration.server]
        document = toml_tables.parse(text or "", str(path))
        servers = document.get("mcp_servers")
        existing = servers.get(integration.server) if isinstance(servers, dict) else None
        values = (
            None if remove else entry_for(existing, f"{path}: mcp_servers.{integration.server}")
        )
        if values is not None and values == existing:
            new_text: str | None = text  # already what setup would write: keep its bytes
        else:
            new_text = toml_tables.set_table(text or "", table, values, str(path))
            if new_text == "" and not text:
                new_text = text
            elif not (new_text or "").strip():
                new_text = None
        return FileChange(path, text, new_text, confined_to=confined)
    if (path, text) in memo:
        return FileChange(path, text, memo[path, text], confined_to=confined)
    before = _load_json(path, text)
    after = merge_json_server(before, integration.server, entry_for, remove=remove, path=path)
    new = memo[path, text] = text if after == before else _dump_json(after, text)
    return FileChange(path, text, new, confined_to=confined)


def plan(
    integration: Integration,
    host: str,
    *,
    scope: str = "user",
    project_dir: str | os.PathLike[str] | None = None,
    remove: bool = False,
    env: Mapping[str, str] | None = None,
    options: GivenOptions = (),
    variables: Mapping[str, str | None] | None = None,
) -> list[FileChange]:
    """The changes setup (or ``remove``) would make; nothing is written.

    Every file is located, checked (links, hard links, folders), read, parsed and given its
    new content - encoded, too - before this returns, so anything that can be refused is
    refused before the first byte is written.
    """
    return _plan(
        integration,
        host,
        scope=scope,
        project_dir=project_dir,
        remove=remove,
        env=env,
        options=options,
        memo={},
        variables=variables or {},
    )


def _plan(
    integration: Integration,
    host: str,
    *,
    scope: str,
    project_dir: str | os.PathLike[str] | None,
    remove: bool,
    env: Mapping[str, str] | None,
    options: GivenOptions,
    memo: _Memo,
    variables: Mapping[str, str | None],
) -> list[FileChange]:
    """:func:`plan`; ``memo`` keeps each JSON file's new text by its old text, so planning
    again under the locks does not re-serialise a large unchanged ``~/.claude.json``."""
    if host not in HOSTS:
        raise AgentSetupError(f"unknown host {host!r}; expected one of: {', '.join(HOSTS)}")
    if scope not in SCOPES:
        raise AgentSetupError(f"unknown scope {scope!r}; expected one of: {', '.join(SCOPES)}")
    project = Path(os.path.abspath(project_dir or os.getcwd()))
    if scope == "project" and not project.is_dir():
        raise AgentSetupError(f"project directory {project} does not exist")
    passed = _passed_env(integration, env)
    _refuse_undecodable(integration, {**passed, **_set(variables)}, options)
    where = locations(host, scope, project, env)
    # In a project nothing below its root may be a link; at home links are followed.
    confined = project if scope == "project" else None
    base = where.base if confined is not None else Path(os.path.realpath(where.base))
    changes = [
        _server_change(
            integration,
            target(where.mcp, confined),
            where.kind,
            remove=remove,
            passed=passed,
            options=options,
            confined=confined,
            memo=memo,
            variables=variables,
        )
    ]
    hooks_path = target(where.hooks, confined)
    hooks_text = read_text(hooks_path)
    if (hooks_path, hooks_text) not in memo:
        before_hooks = _load_json(hooks_path, hooks_text)
        after_hooks = merge_hooks(
            before_hooks,
            _our_hooks(integration, host, options),
            program=integration.program,
            command=integration.command or integration.program,
            remove=remove,
            path=hooks_path,
            variables=variables,
        )
        memo[hooks_path, hooks_text] = (
            hooks_text if after_hooks is before_hooks else _dump_json(after_hooks, hooks_text)
        )
    new_hooks = memo[hooks_path, hooks_text]
    changes.append(FileChange(hooks_path, hooks_text, new_hooks, confined_to=confined))
    for relative, text in integration.files:
        path = target(base / relative, confined)
        current = read_text(path)
        # Remove only a file that is exactly ours: one the user edited is theirs now.
        owned: str | None = (None if current == text else current) if remove else text
        changes.append(FileChange(path, current, owned, prune_to=base, confined_to=confined))
    for change in changes:
        change.encoded()  # raises here, not halfway through writing
    return changes


def _apply(
    make_plan: Callable[[], list[FileChange]], changes: list[FileChange]
) -> list[FileChange]:
    """Write ``changes``: under each file's lock, planned again from what is there now."""
    created: list[Path] = []
    try:
        for _ in range(_ATTEMPTS):
            done = False
            needed = {change.path for change in changes if change.changed}
            if not needed:
                return changes
            created += make_folders(changes)
            with locked(needed):
                changes = make_plan()  # re-read inside the locks: another setup may have written
                if not {change.path for change in changes if change.changed} <= needed:
                    continue  # a file we hold no lock for needs a change now: lock it too
                done = write_all(changes)
            if done:
                prune(changes)
                return changes
    except BaseException:
        remove_empty_folders(created)
        raise
    remove_empty_folders(created)
    paths = ", ".join(sorted(str(change.path) for change in changes if change.changed))
    raise ConfigChangedError(
        f"{paths} kept changing while setup was writing; nothing was changed, run it again"
    )


def run_setup(
    integration: Integration,
    host: str,
    *,
    scope: str = "user",
    project_dir: str | os.PathLike[str] | None = None,
    remove: bool = False,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    options: GivenOptions = (),
    variables: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """Plan, then apply unless ``dry_run``; the JSON result the ``setup`` commands print.

    ``options`` are the declared :class:`SetupOption` values given on the command line;
    each is written into the entries it names, replacing the same option's old value.
    ``variables`` (``{"DSH_RANKING": "hybrid"}``; None as a value: take it out) are the
    environment variables this run owns, in our server's ``env`` and in front of our hooks.
    """
    resolved = integration
    if integration.command is None:
        resolved = dataclasses.replace(integration, command=resolve_command(integration.program))

    memo: _Memo = {}

    def make_plan() -> list[FileChange]:
        return _plan(
            resolved,
            host,
            scope=scope,
            project_dir=project_dir,
            remove=remove,
            env=env,
            options=options,
            memo=memo,
            variables=variables or {},
        )

    changes = make_plan()
    if not dry_run:
        changes = _apply(make_plan, changes)
    result: dict[str, Any] = {
        "host": host,
        "scope": scope,
        "server": resolved.server,
        "command": resolved.command,
        "removed": remove,
        "dryRun": dry_run,
        "files": [{"path": str(c.path), "action": c.action} for c in changes],
    }
    notes: list[str] = []
    if host == "codex" and not remove:
        notes.append(
            "Codex skips hooks it has not been told to trust: review and trust them once in "
            "Codex, or run `codex exec --dangerously-bypass-hook-trust` headless."
        )
        if scope == "project":
            notes.append(
                "Codex reads <project>/.codex only for a project marked trusted "
                f'([projects."{Path(os.path.abspath(project_dir or os.getcwd()))}"] '
                'trust_level = "trusted" in $CODEX_HOME/config.toml).'
            )
    if scope == "project" and not remove:
        notes.append(
            "The project files now hold this machine's absolute command paths: commit them "
            "only if everyone shares that layout."
        )
    result["notes"] = notes
    if dry_run:
        result["diff"] = "".join(change.diff() for change in changes)
    return result

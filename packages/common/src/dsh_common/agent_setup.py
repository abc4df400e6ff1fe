"""Register a product's MCP server and hooks in Claude Code or Codex, and undo exactly that.

Used by ``dsh-compound setup``, ``dsh-memory setup`` and ``dsh-knowledge setup``. Pure
library: it plans file changes (:func:`plan`), shows them as a unified diff, and applies
them atomically (:func:`apply`). The files are those the hosts document:

- claude-code, project: ``<project>/.mcp.json`` (``mcpServers``) and
  ``<project>/.claude/settings.json`` (``hooks``);
- claude-code, user: ``~/.claude.json`` (``mcpServers``) and ``~/.claude/settings.json``;
- codex, user: ``$CODEX_HOME/config.toml`` (``[mcp_servers.NAME]``, default
  ``~/.codex``) and ``$CODEX_HOME/hooks.json``;
- codex, project: ``<project>/.codex/config.toml`` and ``<project>/.codex/hooks.json``
  (Codex reads them only for a project the user marked trusted).

Merging rules: every other key, server and hook of the user's files is kept as it was;
our server is the entry named after the product; our hooks are the command hooks whose
program is the product's command (by file name) followed by ``hook``. Running setup twice
changes nothing the second time; ``remove`` deletes only those entries, then any container
(a hook event list, ``hooks``, ``mcpServers``) that became empty, then a file that became
empty - so setup followed by remove leaves the files as they were. JSON is written back
with the indentation and final newline the file already had.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import shlex
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_common import toml_tables
from dsh_common.errors import DshError, SymlinkRejectedError

HOSTS = ("claude-code", "codex")
SCOPES = ("user", "project")
#: Seconds a host waits for one of our hooks; they take tens of milliseconds.
HOOK_TIMEOUT_SECONDS = 10


class AgentSetupError(DshError, ValueError):
    """A bad host, scope or project directory, or a config file we must not rewrite."""

    code = "invalid-arguments"


class ConfigInvalidError(AgentSetupError):
    """An existing config file is not valid JSON/TOML or has an unexpected shape."""

    code = "config-invalid"


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
class FileChange:
    """One file before and after (``None``: the file does not / will not exist)."""

    path: Path
    before: str | None
    after: str | None
    #: Empty folders left by a removal are pruned up to (not including) this one.
    prune_to: Path | None = None

    @property
    def action(self) -> str:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "created"
        return "removed" if self.after is None else "updated"

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass
class Locations:
    """The two files a host and scope use."""

    mcp: Path
    hooks: Path
    kind: str = field(default="json")  # "json" (Claude) or "toml" (Codex) for the MCP file
    base: Path = field(default=Path())  # the host's config folder for this scope


def resolve_command(program: str) -> str:
    """The absolute path of ``program`` beside the running Python, else its bare name.

    A host starts hooks and servers with its own ``PATH``, which often lacks the virtual
    environment's ``bin``; the console script next to ``sys.executable`` is the one that
    belongs to this installation. Not resolved through symlinks: a venv's python is one.
    """
    candidate = Path(sys.executable).parent / program
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return program


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


def _target(path: Path, scope: str) -> Path:
    """The file to edit for ``path``: checked before anything is written.

    In the user's home a config file is often a symlink into a dotfiles repository: we edit
    the file it points to, so the link survives. In a project (untrusted: it may be someone
    else's repository) a symlinked config file is refused. Hard-linked files are refused
    everywhere: replacing one would silently split the link.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise ConfigInvalidError(f"{path} cannot be inspected: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        if scope == "project":
            raise SymlinkRejectedError(f"{path} is a symbolic link; not editing it in a project")
        path = Path(os.path.realpath(path))
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return path
    if not stat.S_ISREG(info.st_mode):
        raise ConfigInvalidError(f"{path} is not a regular file")
    if info.st_nlink > 1:
        raise ConfigInvalidError(f"{path} has {info.st_nlink} hard links; not replacing it")
    return path


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigInvalidError(f"{path} cannot be read: {exc}") from exc


def _load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
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
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    return text + "\n" if like is None or like.endswith("\n") else text


def hook_command(integration: Integration, args: Sequence[str]) -> str:
    """The shell command line of one hook (hosts run hook commands through a shell)."""
    program = integration.command or integration.program
    return " ".join(shlex.quote(part) for part in (program, *args))


def _is_ours(hook: Any, integration: Integration) -> bool:
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return False
    command = hook.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and Path(words[0]).name == integration.program and words[1] == "hook"


def _merge_hooks(
    document: dict[str, Any],
    integration: Integration,
    *,
    remove: bool,
    path: Path,
    host: str,
) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(document))
    hooks = result.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigInvalidError(f"{path}: 'hooks' is not an object")
    wanted = (
        {}
        if remove
        else {
            event: tuple(host if arg == "{host}" else arg for arg in args)
            for event, args in integration.hooks
        }
    )
    # Existing events first, in the file's order; new ones after, in ours.
    for event in [*hooks, *(e for e in wanted if e not in hooks)]:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise ConfigInvalidError(f"{path}: hooks.{event} is not a list")
        kept: list[Any] = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list) and any(_is_ours(h, integration) for h in inner):
                rest = [h for h in inner if not _is_ours(h, integration)]
                if rest:
                    kept.append({**group, "hooks": rest})
                continue
            kept.append(group)
        if event in wanted:
            ours = {
                "type": "command",
                "command": hook_command(integration, wanted[event]),
                "timeout": HOOK_TIMEOUT_SECONDS,
            }
            kept.append({"hooks": [ours]})
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    # Unchanged when only our entry moved position: keep the user's file as it was.
    return document if _same_hooks(document, result) else result


def _same_hooks(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def canonical(doc: dict[str, Any]) -> str:
        hooks = doc.get("hooks", {})
        shaped = {k: sorted(json.dumps(g, sort_keys=True) for g in v) for k, v in hooks.items()}
        return json.dumps({**doc, "hooks": shaped}, sort_keys=True)

    return canonical(a) == canonical(b)


def _server_entry(
    integration: Integration, kind: str, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    command = integration.command or integration.program
    if kind == "toml":
        environ = os.environ if env is None else env
        passed = {name: environ[name] for name in integration.env_names if environ.get(name)}
        # required: codex waits for the server before the first model request.
        # default_tools_approval_mode: our tools touch only local dsh data, and without it
        # `codex exec` refuses every call ("requires approval, but approval policy is never").
        entry: dict[str, Any] = {
            "command": command,
            "args": list(integration.mcp_args),
            "required": True,
            "default_tools_approval_mode": "approve",
        }
        if passed:
            entry["env"] = passed
        return entry
    return {"type": "stdio", "command": command, "args": list(integration.mcp_args)}


def _merge_json_server(
    document: dict[str, Any], integration: Integration, *, remove: bool, path: Path
) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(document))
    servers = result.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigInvalidError(f"{path}: 'mcpServers' is not an object")
    if remove:
        servers.pop(integration.server, None)
    else:
        servers[integration.server] = _server_entry(integration, "json")
    if servers:
        result["mcpServers"] = servers
    else:
        result.pop("mcpServers", None)
    return result


def plan(
    integration: Integration,
    host: str,
    *,
    scope: str = "user",
    project_dir: str | os.PathLike[str] | None = None,
    remove: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[FileChange]:
    """The changes setup (or ``remove``) would make; nothing is written."""
    if host not in HOSTS:
        raise AgentSetupError(f"unknown host {host!r}; expected one of: {', '.join(HOSTS)}")
    if scope not in SCOPES:
        raise AgentSetupError(f"unknown scope {scope!r}; expected one of: {', '.join(SCOPES)}")
    project = Path(os.path.abspath(project_dir or os.getcwd()))
    if scope == "project" and not project.is_dir():
        raise AgentSetupError(f"project directory {project} does not exist")
    where = locations(host, scope, project, env)
    where = Locations(
        _target(where.mcp, scope), _target(where.hooks, scope), where.kind, where.base
    )
    changes: list[FileChange] = []

    mcp_text = _read(where.mcp)
    if where.kind == "toml":
        values = None if remove else _server_entry(integration, "toml", env)
        new_text: str | None = toml_tables.set_table(
            mcp_text or "", ["mcp_servers", integration.server], values, str(where.mcp)
        )
        if new_text == "" and not mcp_text:
            new_text = mcp_text
        elif not (new_text or "").strip():
            new_text = None
        changes.append(FileChange(where.mcp, mcp_text, new_text))
    else:
        before = _load_json(where.mcp, mcp_text)
        after = _merge_json_server(before, integration, remove=remove, path=where.mcp)
        changes.append(
            FileChange(
                where.mcp, mcp_text, mcp_text if after == before else _dump_json(after, mcp_text)
            )
        )

    hooks_text = _read(where.hooks)
    before_hooks = _load_json(where.hooks, hooks_text)
    after_hooks = _merge_hooks(
        before_hooks, integration, remove=remove, path=where.hooks, host=host
    )
    changes.append(
        FileChange(
            where.hooks,
            hooks_text,
            hooks_text if after_hooks is before_hooks else _dump_json(after_hooks, hooks_text),
        )
    )
    for relative, text in integration.files:
        path = _target(where.base / relative, scope)
        current = _read(path)
        # Remove only a file that is exactly ours: one the user edited is theirs now.
        owned: str | None = (None if current == text else current) if remove else text
        changes.append(FileChange(path, current, owned, prune_to=where.base))
    return changes


def apply(changes: Sequence[FileChange]) -> None:
    """Write (or delete) every changed file, each atomically; parents are created."""
    from dsh_common.io import atomic_write  # noqa: PLC0415

    for change in changes:
        if change.before == change.after:
            continue
        if change.after is None:
            change.path.unlink(missing_ok=True)
            _prune_empty(change.path.parent, change.prune_to)
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        # ~/.claude.json and config.toml may hold credentials: new files are owner-only.
        mode = None if change.path.exists() else 0o600
        atomic_write(change.path, change.after.encode("utf-8"), mode=mode)


def _prune_empty(directory: Path, stop: Path | None) -> None:
    """Remove ``directory`` and its parents while empty, below ``stop`` only."""
    if stop is None:
        return
    while directory != stop and stop in directory.parents:
        try:
            directory.rmdir()  # fails on a folder that is not empty: exactly what we want
        except OSError:
            return
        directory = directory.parent


def run_setup(
    integration: Integration,
    host: str,
    *,
    scope: str = "user",
    project_dir: str | os.PathLike[str] | None = None,
    remove: bool = False,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Plan, then apply unless ``dry_run``; the JSON result the ``setup`` commands print."""
    resolved = integration
    if integration.command is None:
        resolved = dataclasses.replace(integration, command=resolve_command(integration.program))
    changes = plan(resolved, host, scope=scope, project_dir=project_dir, remove=remove, env=env)
    if not dry_run:
        apply(changes)
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

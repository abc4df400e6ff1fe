"""Which parts of a host's config entries are ours, and how setup refreshes only those.

A user tunes what setup registered: an ``env`` on our server, ``--db X`` or ``--project Y``
after our hook command, a ``matcher`` on our hook group, a longer ``timeout``. Re-running
setup (after an upgrade, from a bootstrap script) must keep all of it. So setup owns only:

- in our MCP server entry: ``command``, the leading words of ``args`` (``mcp``) and, on
  Claude Code, ``type`` (``stdio``: the transport our server speaks). Other keys (``env``,
  ``cwd``, ``timeout``...) and options appended to ``args`` are the user's. Codex's
  ``required`` and ``default_tools_approval_mode`` are written only when absent (a value
  the user chose wins). The dsh variables of ``env_names`` that are set when setup runs
  are written into Codex's ``env`` (setting them is how the user asks for that); the other
  variables of ``env`` stay;
- in a hook command of ours (``<program> hook <subcommand>`` registered under the event
  setup uses for that subcommand): the program, ``hook <subcommand>`` and the options setup
  itself passes (``--mcp-server``, ``--host``). Options the user added stay, in their
  order, after ours; so do ``NAME=value`` words in front of the program, the hook's other
  keys (``timeout`` is written only when absent) and its group (``matcher``). A hook of
  ours is refreshed where it is, never moved, and its text is kept when its words are
  already right (the user's quoting stays).

Options declared with :class:`SetupOption` and given to setup (``--db URL``) replace the
same option's value in our entries; an option not given leaves whatever is there alone.
Likewise the environment variables a run of setup owns (``--ranking`` sets ``DSH_RANKING``):
given, each is written into our server's ``env`` and in front of our hook commands as
``NAME=value``, or taken out of both; not given, they stay as they are.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError

#: Seconds a host waits for one of our hooks; they take tens of milliseconds.
HOOK_TIMEOUT_SECONDS = 10


class AgentSetupError(DshError, ValueError):
    """A bad host, scope, project directory or option value, or a config file we must not
    rewrite."""

    code = "invalid-arguments"


class ConfigInvalidError(AgentSetupError):
    """An existing config file is not valid JSON/TOML or has an unexpected shape."""

    code = "config-invalid"


@dataclass(frozen=True)
class SetupOption:
    """An option ``setup`` can write into our entries, e.g. ``--db URL``.

    ``server``: appended to our MCP server's ``args``; ``hooks``: the hook subcommands
    (``user-prompt-submit``...) whose command gets it - only those that accept it, since a
    hook given an option it does not know stays silent.
    """

    flag: str
    help: str
    metavar: str = "VALUE"
    server: bool = True
    hooks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", self.flag):
            raise ValueError(f"a setup option is a long option like --db, not {self.flag!r}")


@dataclass(frozen=True)
class OurHook:
    """One hook command setup registers: the host event and the words after the program."""

    event: str  # "SessionStart"
    words: tuple[str, ...]  # ("hook", "session-start", "--host", "codex")
    written: tuple[tuple[str, str], ...] = ()  # setup options given for this hook

    @property
    def subcommand(self) -> str:
        return self.words[1]


def _split_fixed(words: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Our words as leading positionals and ``--flag value`` pairs (ours always take a value)."""
    positionals: list[str] = []
    index = 0
    while index < len(words) and not words[index].startswith("--"):
        positionals.append(words[index])
        index += 1
    tail = list(words[index:])
    pairs = [(flag, value) for flag, value in zip(tail[::2], [*tail[1::2], ""], strict=False)]
    return positionals, pairs


def _without_options(words: Sequence[str], flags: set[str]) -> list[str]:
    """``words`` without each ``--flag value`` / ``--flag=value`` of ``flags``; ``--`` ends it."""
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            kept.extend(words[index:])
            break
        if word in flags:
            index += 2
            continue
        if word.partition("=")[0] in flags and "=" in word:
            index += 1
            continue
        kept.append(word)
        index += 1
    return kept


def refresh_words(
    existing: Sequence[str] | None,
    fixed: Sequence[str],
    written: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """Our ``fixed`` words and ``written`` options, then what else ``existing`` holds.

    ``existing`` is the current argument list of our entry (None: there is none). Its
    leading words equal to our positionals are ours; so are our flags (fixed or written)
    with their values. Everything else is the user's and follows ours in its own order.
    """
    positionals, pairs = _split_fixed(fixed)
    pairs += list(written)
    rest = list(existing or [])
    if rest[: len(positionals)] == positionals:
        rest = rest[len(positionals) :]
    else:
        # Options moved in front of our words (a CLI accepts either order): take ours out.
        for word in positionals:
            if word in rest:
                rest.remove(word)
    extras = _without_options(rest, {flag for flag, _ in pairs})
    return [*positionals, *(part for pair in pairs for part in pair), *extras]


def set_variables(
    current: Mapping[str, Any], variables: Mapping[str, str | None]
) -> dict[str, Any]:
    """``current`` with each of ``variables`` set (in place, else appended) or, for None,
    removed; the other variables keep their values and order."""
    updated = {
        name: value for name, value in current.items() if variables.get(name, "") is not None
    }
    for name, value in variables.items():
        if value is not None:
            updated[name] = value
    return updated


def _string_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigInvalidError(f"{where} is not a list of strings")
    return value


# --- MCP server entries ----------------------------------------------------------------


def server_entry(
    existing: Any,
    *,
    kind: str,
    command: str,
    fixed_args: Sequence[str],
    written: Sequence[tuple[str, str]],
    env: Mapping[str, str],
    where: str,
    variables: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """Our server entry, refreshed from ``existing`` (None when there is none).

    ``variables`` are the environment variables setup owns in this run (``DSH_RANKING``):
    a value is written into the entry's ``env``, None takes the variable out (and an
    ``env`` left empty by that goes too); every other variable of ``env`` stays.
    """
    if existing is not None and not isinstance(existing, dict):
        raise ConfigInvalidError(f"{where} is not {'an object' if kind == 'json' else 'a table'}")
    entry: dict[str, Any] = dict(existing or {})
    old_args = None if "args" not in entry else _string_list(entry["args"], f"{where}.args")
    if kind == "json":
        entry["type"] = "stdio"
    entry["command"] = command
    entry["args"] = refresh_words(old_args, fixed_args, written)
    if kind == "toml":
        # required: codex waits for the server before the first model request.
        # default_tools_approval_mode: our tools touch only local dsh data, and without it
        # `codex exec` refuses every call ("requires approval, but approval policy is never").
        entry.setdefault("required", True)
        entry.setdefault("default_tools_approval_mode", "approve")
        if env:
            current = entry.get("env", {})
            if not isinstance(current, dict):
                raise ConfigInvalidError(f"{where}.env is not a table")
            entry["env"] = {**current, **env}
    if variables:
        current = entry.get("env", {})
        if not isinstance(current, dict):
            raise ConfigInvalidError(
                f"{where}.env is not {'an object' if kind == 'json' else 'a table'}"
            )
        updated = set_variables(current, variables)
        if updated:
            entry["env"] = updated
        elif "env" in entry and current:  # emptied by us: the key goes with its variables
            del entry["env"]
    if existing is None:
        # A new entry lists our keys first, in the order the hosts document them.
        order = ["type", "command", "args", "required", "default_tools_approval_mode", "env"]
        entry = {key: entry[key] for key in order if key in entry}
    return entry


def merge_json_server(
    document: dict[str, Any],
    name: str,
    entry_for: Callable[[Any, str], dict[str, Any]],
    *,
    remove: bool,
    path: Path,
) -> dict[str, Any]:
    """``document`` with ``mcpServers.<name>`` refreshed by ``entry_for(existing)`` or removed."""
    result: dict[str, Any] = dict(document)
    servers = result.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigInvalidError(f"{path}: 'mcpServers' is not an object")
    servers = dict(servers)
    if remove:
        servers.pop(name, None)
    else:
        servers[name] = entry_for(servers.get(name), f"{path}: mcpServers.{name}")
    if servers:
        result["mcpServers"] = servers
    else:
        result.pop("mcpServers", None)
    return result


# --- hooks -------------------------------------------------------------------------------


def hook_command_line(
    command: str, words: Sequence[str], assignments: Sequence[tuple[str, str]] = ()
) -> str:
    """The shell command line of one hook (hosts run hook commands through a shell).

    ``assignments`` are ``NAME=value`` words the user put in front (``DSH_HOME=/x cmd``):
    the value is quoted, never the name, or the shell would take it for a command.
    """
    prefix = [f"{name}={shlex.quote(value)}" for name, value in assignments]
    return " ".join([*prefix, *(shlex.quote(part) for part in (command, *words))])


_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def _parse_if_ours(
    hook: Any, program: str, subcommand: str
) -> tuple[list[tuple[str, str]], list[str]] | None:
    """``(assignments, words after the program)`` of ``hook`` when it runs ``program hook
    subcommand`` (after any ``NAME=value`` words), else None."""
    if not isinstance(hook, dict) or hook.get("type") != "command":
        return None
    command = hook.get("command")
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    assignments: list[tuple[str, str]] = []
    while words and (match := _ASSIGNMENT.match(words[0])) is not None:
        assignments.append((match[1], match[2]))
        words = words[1:]
    if len(words) >= 3 and Path(words[0]).name == program and words[1:3] == ["hook", subcommand]:
        return assignments, words[1:]
    return None


def _refreshed(hook: dict[str, Any], line: str) -> dict[str, Any]:
    """``hook`` running ``line``; its own text kept when it already says the same words."""
    refreshed = dict(hook)
    if shlex.split(line) != shlex.split(hook["command"]):
        refreshed["command"] = line
    refreshed.setdefault("timeout", HOOK_TIMEOUT_SECONDS)
    return refreshed


def merge_hooks(
    document: dict[str, Any],
    ours: Sequence[OurHook],
    *,
    program: str,
    command: str,
    remove: bool,
    path: Path,
    variables: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """``document`` with our hooks refreshed in place (added where missing) or removed.

    ``variables`` are set (a value) or taken out (None) among the ``NAME=value`` words in
    front of each hook of ours; the user's other words there stay, in their order.
    Returns ``document`` itself when nothing changes.
    """
    hooks = document.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigInvalidError(f"{path}: 'hooks' is not an object")
    by_event: dict[str, list[OurHook]] = {}
    for hook in ours:
        by_event.setdefault(hook.event, []).append(hook)
    new_hooks: dict[str, Any] = {}
    found: set[OurHook] = set()
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise ConfigInvalidError(f"{path}: hooks.{event} is not a list")
        wanted = by_event.get(event, [])
        kept: list[Any] = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not wanted or not isinstance(inner, list):
                kept.append(group)
                continue
            new_inner: list[Any] = []
            for hook in inner:
                match = next(
                    (
                        (our, parsed)
                        for our in wanted
                        if (parsed := _parse_if_ours(hook, program, our.subcommand)) is not None
                    ),
                    None,
                )
                if match is None:
                    new_inner.append(hook)
                    continue
                our, (assignments, words) = match
                found.add(our)
                if remove:
                    continue
                refreshed = refresh_words(words, our.words, our.written)
                if variables:
                    assignments = list(set_variables(dict(assignments), variables).items())
                new_inner.append(
                    _refreshed(hook, hook_command_line(command, refreshed, assignments))
                )
            if new_inner:
                kept.append({**group, "hooks": new_inner} if new_inner != inner else group)
            # A group left empty by a removal held only our hook: it goes with it.
        if kept:
            new_hooks[event] = kept
    if not remove:
        for our in ours:
            if our in found:
                continue
            prefix = [(name, value) for name, value in (variables or {}).items() if value]
            fresh = {
                "type": "command",
                "command": hook_command_line(
                    command, refresh_words(None, our.words, our.written), prefix
                ),
                "timeout": HOOK_TIMEOUT_SECONDS,
            }
            new_hooks.setdefault(our.event, []).append({"hooks": [fresh]})
    result = dict(document)
    if new_hooks:
        result["hooks"] = new_hooks
    else:
        result.pop("hooks", None)
    # Only "hooks" can differ; key order alone is not a change worth a rewrite.
    same = _canonical(result.get("hooks")) == _canonical(document.get("hooks"))
    return document if same else result


def _canonical(hooks: Any) -> str:
    return json.dumps(hooks, sort_keys=True, ensure_ascii=True)

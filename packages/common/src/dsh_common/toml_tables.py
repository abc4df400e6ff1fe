"""Add, replace or remove one ``[a.b]`` table of a TOML file, leaving every other byte alone.

A user's Codex ``config.toml`` is hand-written: comments, ordering and spacing are theirs.
Re-serialising the whole document would lose all of that, and a formatting-preserving TOML
library is a large dependency for one job. We only ever own whole tables written in header
form (``[mcp_servers.dsh-compound]`` and its sub-tables such as ``[...env]``), so we edit
those lines as text: a table runs from its header to the next header. The result is always
parsed again with :mod:`tomllib` and compared with what we meant to write; anything we do not
recognise (the same table written inline or with dotted keys) is refused, never guessed.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_common.errors import DshError

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class TomlConfigError(DshError, ValueError):
    """The TOML file cannot be parsed, or holds our table in a form we do not edit."""

    code = "config-invalid"


class TomlConflictError(DshError, ValueError):
    """Our table exists in a form other than header tables (inline or dotted keys)."""

    code = "config-conflict"


def parse(text: str, what: str) -> dict[str, Any]:
    """The parsed document, or TomlConfigError naming ``what``."""
    try:
        document: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlConfigError(f"{what} is not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise TomlConfigError(f"{what} is nested too deeply to edit") from exc
    return document


def _key_text(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value_text(value: Any) -> str:
    """A TOML value for every type :mod:`tomllib` reads (tables become inline tables).

    JSON string escapes (``\\"``, ``\\\\``, ``\\n``, ``\\uXXXX``) are all valid in TOML
    basic strings, so ``json.dumps`` writes a correct TOML string. Our own table holds only
    strings, booleans and lists, but a user may add keys of any type to it (setup keeps
    them): ``startup_timeout_sec = 30.5``, a date.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_key_text(k)} = {_value_text(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TomlConfigError(f"cannot write a {type(value).__name__} value as TOML")


def render_table(path: Sequence[str], values: Mapping[str, Any]) -> str:
    """``[a.b]`` and one ``key = value`` line per entry (tables as inline tables)."""
    lines = ["[" + ".".join(_key_text(part) for part in path) + "]"]
    lines += [f"{_key_text(key)} = {_value_text(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def _split_key(text: str) -> list[str] | None:
    """The parts of a header key (bare or quoted), or None when we cannot read it."""
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if rest[0] == '"':
            end = rest.find('"', 1)
            while end > 0 and rest[end - 1] == "\\":
                end = rest.find('"', end + 1)
            if end < 0:
                return None
            try:
                parts.append(json.loads(rest[: end + 1]))
            except ValueError:
                return None
            rest = rest[end + 1 :].strip()
        elif rest[0] == "'":
            end = rest.find("'", 1)
            if end < 0:
                return None
            parts.append(rest[1:end])
            rest = rest[end + 1 :].strip()
        else:
            match = re.match(r"[A-Za-z0-9_-]+", rest)
            if match is None:
                return None
            parts.append(match.group(0))
            rest = rest[match.end() :].strip()
        if rest.startswith("."):
            rest = rest[1:].strip()
        elif rest:
            return None
    return parts


def _owned_ranges(lines: list[str], path: Sequence[str]) -> list[tuple[int, int]]:
    """Line ranges ``[start, end)`` of the table ``path`` and of its sub-tables.

    A range ends at its last key line: blank lines and comments before the next header
    belong to what follows, not to us.
    """
    ranges: list[tuple[int, int]] = []
    start: int | None = None

    def close(limit: int) -> None:
        if start is None:
            return
        end = limit
        while end > start + 1 and (
            not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
        ):
            end -= 1
        ranges.append((start, end))

    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if match is None:
            continue
        close(index)
        start = None
        parts = _split_key(match["key"])
        if parts is not None and parts[: len(path)] == list(path):
            start = index
    close(len(lines))
    return ranges


def _lookup(document: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = document
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _without(document: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    """A copy of ``document`` without ``path`` and without parents it leaves empty."""
    copy: dict[str, Any] = json.loads(json.dumps(document, default=str))
    node = copy
    parents = []
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            return copy
        parents.append((node, part))
        node = node[part]
    node.pop(path[-1], None)
    for parent, part in reversed(parents):
        if parent[part]:
            break
        del parent[part]
    return copy


def set_table(text: str, path: Sequence[str], values: Mapping[str, Any] | None, what: str) -> str:
    """``text`` with table ``path`` set to ``values`` (None removes it). Refuses to guess."""
    before = parse(text, what)
    lines = text.splitlines(keepends=True)
    ranges = _owned_ranges(lines, path)
    if _lookup(before, path) is not None and not ranges:
        raise TomlConflictError(
            f"{what} defines {'.'.join(path)} with inline or dotted keys; edit or remove "
            "it by hand, then run setup again"
        )
    block = render_table(path, values) if values is not None else ""
    if ranges:
        owned = {i for a, b in ranges for i in range(a, b)}
        first = ranges[0][0]
        kept_before = lines[:first]
        kept_after = [line for i, line in enumerate(lines) if i >= first and i not in owned]
        if not block and kept_before and not kept_before[-1].strip():
            # The blank line we put before an appended table goes with it: at the end of
            # the file, or where it would leave two blank lines in a row.
            if not "".join(kept_after).strip():
                kept_after, kept_before = [], kept_before[:-1]
            elif not kept_after[0].strip():
                kept_before = kept_before[:-1]
        new_text = "".join(kept_before) + block + "".join(kept_after)
    elif block:
        prefix = text if not text or text.endswith("\n") else text + "\n"
        new_text = prefix + ("\n" if prefix.strip() else "") + block
    else:
        new_text = text
    after = parse(new_text, what)
    expected = _without(before, path)
    if _without(after, path) != expected or _lookup(after, path) != (
        dict(values) if values is not None else None
    ):
        raise TomlConflictError(f"{what}: the edit of {'.'.join(path)} did not round-trip")
    return new_text

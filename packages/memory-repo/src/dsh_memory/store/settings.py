"""``memory.enabled`` in the host settings file, ``$DSH_HOME/settings.yaml``.

The host file is YAML owned by DSH and may hold many other settings, so we neither need
nor want a YAML library that would re-serialise (and reformat) the whole file. We read and
edit exactly one key, ``enabled`` inside the top-level ``memory:`` block, line by line -
the same narrow reading the earlier tool's sync script does - and leave every other byte
of the file as it was. Anything we cannot read that way (a flow mapping such as
``memory: {enabled: false}``, a non-boolean value) is reported, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from dsh_common.errors import DshError, shown
from dsh_common.io import atomic_write, read_bounded
from dsh_memory.errors import (
    SettingsInvalidRequestError,
    SettingsUnavailableError,
    SettingsWriteFailedError,
)
from dsh_memory.store.root import dsh_home

SETTINGS_FILE = "settings.yaml"
MAX_SETTINGS_BYTES = 1024 * 1024
DEFAULT_ENABLED = True

_TOP_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_\"'-]+)\s*:(?P<rest>.*)$")
_ENABLED = re.compile(r"^(?P<indent>[ \t]+)enabled\s*:\s*(?P<value>[^#]*?)\s*(?P<comment>#.*)?$")
_TRUE = {"true", "True", "TRUE", "yes", "on"}
_FALSE = {"false", "False", "FALSE", "no", "off"}


def settings_path(env: Mapping[str, str] | None = None) -> Path:
    return dsh_home(env) / SETTINGS_FILE


def _read_lines(path: Path) -> list[str] | None:
    try:
        raw = read_bounded(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, DshError) as exc:
        raise SettingsUnavailableError(f"{path} cannot be read: {exc}") from exc
    try:
        return raw.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError as exc:
        raise SettingsUnavailableError(f"{path} is not UTF-8") from exc


def _memory_block(lines: list[str]) -> tuple[int, int] | None:
    """(index of the ``memory:`` line, index after its block), or None."""
    for index, line in enumerate(lines):
        match = _TOP_KEY.match(line.rstrip("\r\n"))
        if match is None or match["key"].strip("\"'") != "memory":
            continue
        rest = match["rest"].split("#", 1)[0].strip()
        if rest:
            raise SettingsUnavailableError("memory settings are not a block mapping")
        end = index + 1
        while end < len(lines):
            text = lines[end].rstrip("\r\n")
            if text.strip() and not text.startswith((" ", "\t")) and not text.startswith("#"):
                break
            end += 1
        return index, end
    return None


def _child_indent(lines: list[str], start: int, end: int) -> str | None:
    """The indentation of the ``memory:`` block's direct children: that of its first line.

    Only a direct child counts: in ``memory:\n  sync:\n    enabled: false`` the
    ``enabled`` belongs to ``memory.sync``, not to ``memory``.
    """
    for line in lines[start + 1 : end]:
        text = line.rstrip("\r\n")
        if text.strip() and not text.lstrip().startswith("#"):
            return text[: len(text) - len(text.lstrip(" \t"))]
    return None


def _direct_enabled(lines: list[str], start: int, end: int) -> Iterator[tuple[int, re.Match[str]]]:
    indent = _child_indent(lines, start, end)
    for index in range(start + 1, end):
        match = _ENABLED.match(lines[index].rstrip("\r\n"))
        if match is not None and match["indent"] == indent:
            yield index, match


def read_enabled(path: Path) -> bool:
    """``memory.enabled`` (default true when the file, block or key is absent)."""
    lines = _read_lines(path)
    if lines is None:
        return DEFAULT_ENABLED
    block = _memory_block(lines)
    if block is None:
        return DEFAULT_ENABLED
    for _, match in _direct_enabled(lines, *block):
        value = match["value"].strip("\"'")
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise SettingsUnavailableError(f"memory.enabled has a non-boolean value {shown(value)}")
    return DEFAULT_ENABLED


def write_enabled(path: Path, enabled: object) -> bool:
    """Persist ``memory.enabled``; only that one line of the file changes."""
    if not isinstance(enabled, bool):
        raise SettingsInvalidRequestError("enabled must be a boolean")
    lines = _read_lines(path) or []
    value = "true" if enabled else "false"
    block = _memory_block(lines)
    if block is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines += ["memory:\n", f"  enabled: {value}\n"]
    else:
        start, end = block
        for index, match in _direct_enabled(lines, start, end):
            text = lines[index]
            newline = text[len(text.rstrip("\r\n")) :] or "\n"
            comment = f" {match['comment']}" if match["comment"] else ""
            lines[index] = f"{match['indent']}enabled: {value}{comment}{newline}"
            break
        else:
            indent = _child_indent(lines, start, end) or "  "
            lines.insert(start + 1, f"{indent}enabled: {value}\n")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = None if path.exists() else 0o600  # keep a mode the user chose
        atomic_write(path, "".join(lines).encode("utf-8"), mode=mode)
    except (OSError, DshError) as exc:
        raise SettingsWriteFailedError(f"{path} could not be written: {exc}") from exc
    return enabled

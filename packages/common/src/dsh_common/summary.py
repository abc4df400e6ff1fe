"""A short human summary of any JSON result: what ``--format text`` prints.

Agents read the JSON; a person at a terminal wants the gist. The summary is generic, so
every command of every product has one without writing a renderer: top-level scalars as
``key: value``, a list as its length and its first few items on one line each, a nested
object as its scalar fields on one line. Envelopes (``{"ok": true, "value": {...}}``) are
unwrapped. Long strings are cut with an ellipsis; nothing here is meant to be parsed.
"""

from __future__ import annotations

from typing import Any

FIRST_ITEMS = 3
LINE_WIDTH = 100

# Fields that identify an item best come first in its one-line form.
_PREFERRED = (
    "id",
    "title",
    "name",
    "path",
    "content",
    "status",
    "type",
    "score",
    "code",
    "message",
)
_ENVELOPE_KEYS = ("value", "data", "result")


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


def one_line(value: Any, width: int = LINE_WIDTH) -> str:
    """``value`` on one line: an object as ``key=value`` pairs, identifying fields first."""
    if isinstance(value, dict):
        keys = [k for k in _PREFERRED if k in value] + [k for k in value if k not in _PREFERRED]
        parts = []
        for key in keys:
            item = value[key]
            if isinstance(item, list):
                parts.append(f"{key}=[{len(item)}]")
            elif isinstance(item, dict):
                # A wrapped object ({"knowledge": {...}, "score": 3}): its identifying fields.
                inner = [
                    k for k in _PREFERRED if k in item and not isinstance(item[k], dict | list)
                ]
                shown = [f"{key}.{k}={_scalar(item[k])}" for k in inner[:2]]
                parts.extend(shown or [f"{key}={{…}}"])
            else:
                parts.append(f"{key}={_scalar(item)}")
        return _cut(" ".join(parts), width)
    if isinstance(value, list):
        return _cut(", ".join(one_line(item, width) for item in value), width)
    return _cut(_scalar(value), width)


def _unwrap(value: Any) -> Any:
    # {"ok": true, "value": {...}}: the payload is what a person wants to see.
    if isinstance(value, dict) and value.get("ok") is True:
        for key in _ENVELOPE_KEYS:
            if isinstance(value.get(key), dict):
                return value[key]
    return value


def render_summary(value: Any, *, first_items: int = FIRST_ITEMS) -> str:
    """The human summary of a JSON result (a trailing newline included)."""
    value = _unwrap(value)
    if not isinstance(value, dict):
        if isinstance(value, list):
            value = {"items": value}
        else:
            return one_line(value) + "\n"
    error = value.get("error")
    if isinstance(error, dict) and "code" in error:
        return f"error {error['code']}: {_cut(str(error.get('message', '')), LINE_WIDTH * 4)}\n"
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, list):
            lines.append(f"{key}: {len(item)}")
            lines.extend(f"  - {one_line(entry, LINE_WIDTH - 4)}" for entry in item[:first_items])
            if len(item) > first_items:
                lines.append(f"  … {len(item) - first_items} more")
        elif isinstance(item, dict):
            lines.append(f"{key}: {one_line(item, LINE_WIDTH - len(key) - 2)}")
        else:
            lines.append(f"{key}: {_cut(_scalar(item), LINE_WIDTH * 2)}")
    return "\n".join(lines) + "\n"

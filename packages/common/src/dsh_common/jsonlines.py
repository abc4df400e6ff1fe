"""JSON lines from logs other programs wrote, read so that no single line can stop the read.

Agent transcripts (Claude Code, Codex, DSH session logs) are JSON lines, and any line may be
half-written, not JSON at all, or hostile. :func:`iter_json_lines` yields every non-blank
line with its 1-based number and either its parsed value or the reason it was skipped:

- ``malformed``: not JSON (or, with ``errors="strict"``, not UTF-8);
- ``too-deep``: arrays and objects nested more than ``max_depth`` (:data:`MAX_DEPTH`, 100)
  levels. Parsing such a line may itself exhaust the interpreter's stack, and every
  recursive walk over the parsed value afterwards - redacting it, rendering it, serialising
  it - would: one ``[[[[...`` line of a few kilobytes used to stop every later read with a
  ``RecursionError``. Real transcript lines nest a dozen levels or so.

Lines are split on ``\\n`` (``\\r\\n`` and ``\\r`` too), never on the other Unicode line
breaks ``str.splitlines`` knows: a JSON string may hold a raw U+2028. Values are parsed with
the standard library's ``json`` (it accepts what JavaScript's ``JSON.stringify`` writes,
lone surrogates and all). :func:`read_json_lines` collects the values and the counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "MAX_DEPTH",
    "JsonLine",
    "JsonLines",
    "iter_json_lines",
    "nesting_exceeds",
    "parse_json_line",
    "read_json_lines",
]

#: The deepest nesting of arrays and objects a line may have.
MAX_DEPTH = 100
MALFORMED = "malformed"
TOO_DEEP = "too-deep"


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line: its number, and its value or why it was skipped."""

    number: int
    value: Any = None
    problem: str | None = None


@dataclass
class JsonLines:
    """Every readable line's value (with its line number) and what was skipped."""

    values: list[Any] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    malformed: int = 0
    too_deep: int = 0

    @property
    def skipped(self) -> int:
        return self.malformed + self.too_deep


def nesting_exceeds(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests arrays/objects deeper than ``max_depth`` (no recursion:
    ``[]`` is depth 1, ``[[]]`` depth 2)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _could_exceed(text: str, max_depth: int) -> bool:
    # Fewer brackets than the limit cannot nest past it: most lines skip the walk.
    return text.count("[") + text.count("{") > max_depth


def parse_json_line(text: str, max_depth: int = MAX_DEPTH) -> tuple[Any, str | None]:
    """``(value, None)`` for one line, or ``(None, "malformed" | "too-deep")``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = json.loads(text)
    except RecursionError:
        return None, TOO_DEEP
    except ValueError:
        return None, MALFORMED
    if _could_exceed(text, max_depth) and nesting_exceeds(value, max_depth):
        return None, TOO_DEEP
    return value, None


def iter_json_lines(
    data: bytes,
    *,
    max_depth: int = MAX_DEPTH,
    errors: Literal["replace", "strict"] = "replace",
) -> Iterator[JsonLine]:
    """Every non-blank line of ``data``, numbered from 1, parsed or marked skipped.

    ``errors="replace"`` reads bytes that are not UTF-8 as U+FFFD (the line still counts);
    ``"strict"`` marks such a line ``malformed``.
    """
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8", errors)
        except UnicodeDecodeError:
            yield JsonLine(number, problem=MALFORMED)
            continue
        value, problem = parse_json_line(text, max_depth)
        yield JsonLine(number, value, problem)


def read_json_lines(
    data: bytes,
    *,
    max_depth: int = MAX_DEPTH,
    errors: Literal["replace", "strict"] = "replace",
) -> JsonLines:
    """:func:`iter_json_lines` collected: the values, their line numbers, the counts."""
    result = JsonLines()
    for line in iter_json_lines(data, max_depth=max_depth, errors=errors):
        if line.problem == TOO_DEEP:
            result.too_deep += 1
        elif line.problem is not None:
            result.malformed += 1
        else:
            result.values.append(line.value)
            result.numbers.append(line.number)
    return result

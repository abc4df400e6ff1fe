"""Tool arguments no tool can take are answered as tool errors, never left unanswered.

Two things an MCP client can send break below the tools, where no tool code runs:

* **Nesting.** The SDK parses each message with a recursive parser that gives up beyond
  about 200 levels; the message is then dropped, and the client waits forever for the
  answer. :func:`clip_nesting` runs on each line before the SDK sees it: a value nested
  deeper than :data:`MAX_MESSAGE_DEPTH` is replaced by the string :data:`TOO_DEEP`, so the
  request parses, keeps its id, and reaches the server, which answers it with
  :func:`argument_problem`'s message as a tool error.
* **Values JSON cannot carry back.** An integer beyond 64 bits, ``1e400`` (infinity) or
  ``NaN`` parse, but our JSON writer refuses or rewrites them. Each server catches every
  unexpected exception of a tool and answers a tool error with a code, so such a value
  costs the caller an error it can read, not a JSON-RPC protocol error.

Standard library only, so it can be tested without the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Levels of ``[`` / ``{`` a message may have; the arguments object is the third.
MAX_MESSAGE_DEPTH = 64
#: What replaces a value nested deeper than the limit (a JSON string no client writes).
TOO_DEEP = "\x00dsh: nested too deeply"
_TOO_DEEP_JSON = '"\\u0000dsh: nested too deeply"'

_STRUCTURE = re.compile(r'[\[\]{}"]')
# The rest of a JSON string after its opening quote, escapes included (unrolled: linear).
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def clip_nesting(line: str, limit: int = MAX_MESSAGE_DEPTH) -> str:
    """``line`` with every value nested deeper than ``limit`` replaced by :data:`TOO_DEEP`.

    A line within the limit (every real request) is returned as it is, after two counts
    in C. Text that is not JSON is returned unchanged where the scan loses track (an
    unterminated string): the parser then refuses it as it always did.
    """
    if line.count("[") + line.count("{") <= limit:
        return line
    out: list[str] = []
    depth = 0
    skipping = 0  # > 0: inside a value being replaced, this many levels deep in it
    index = 0
    while True:
        found = _STRUCTURE.search(line, index)
        if found is None:
            if not skipping:
                out.append(line[index:])
            break
        at = found.start()
        char = line[at]
        if char == '"':
            rest = _STRING_REST.match(line, at + 1)
            if rest is None:
                return line  # not JSON: leave it to the parser
            if not skipping:
                out.append(line[index : rest.end()])
            index = rest.end()
            continue
        if skipping:
            skipping += 1 if char in "[{" else -1
            index = at + 1
            continue
        if char in "[{":
            if depth == limit:
                out.append(line[index:at])
                out.append(_TOO_DEEP_JSON)
                skipping = 1
                index = at + 1
                continue
            depth += 1
        else:
            depth -= 1
        out.append(line[index : at + 1])
        index = at + 1
    return "".join(out)


def argument_problem(arguments: Mapping[str, Any] | None) -> str | None:
    """A message when ``arguments`` hold a value :func:`clip_nesting` replaced, else None."""
    pending: list[Any] = [arguments]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if value == TOO_DEEP:
                return (
                    "arguments are nested too deeply: at most "
                    f"{MAX_MESSAGE_DEPTH - 3} levels of arrays and objects"
                )
        elif isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return None

"""JSON in and out, through orjson.

``dumps`` writes what JavaScript's ``JSON.stringify(value)`` writes for the data we
produce (no spaces, keys in insertion order, non-ASCII as raw UTF-8), so the files and
front matter we share with Node programs are byte for byte what those programs write
(docs/compatibility/ states each format).
"""

from __future__ import annotations

from typing import Any

import orjson

from dsh_common.errors import InvalidJsonError


def dumps(value: Any) -> str:
    """Compact JSON text, as ``JSON.stringify(value)``."""
    return orjson.dumps(value).decode("utf-8")


def dumps_bytes(value: Any, *, pretty: bool = False) -> bytes:
    """JSON as UTF-8 bytes; ``pretty`` indents by two spaces (``JSON.stringify(v, null, 2)``)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 if pretty else 0)


def loads(data: bytes | str, *, what: str = "input") -> Any:
    """Parse JSON, raising InvalidJsonError (code ``invalid-json``) on malformed text."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidJsonError(f"{what} is not valid JSON: {exc}") from exc

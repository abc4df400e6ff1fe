"""Every program a dsh command starts, found once as an absolute path outside the repository.

A program started by bare name (``Popen(["git", ...], cwd=repo)``) is looked up on ``PATH``
by the child, *after* it changed into ``cwd``: a relative ``PATH`` entry (``./bin``,
``node_modules/.bin``, ``bin``) or an empty one (``PATH=/usr/bin:`` means the current
directory) then finds a file that anyone who can commit to that repository put there. The
agent hosts run our hooks and MCP servers inside whatever repository the user opened, so
that file would run with the user's rights on the first ``knowledge_add``.

:func:`resolve_program` walks ``PATH`` itself, skips every entry that is not absolute, and
returns an absolute path (cached per process), so what runs does not depend on the working
directory. :func:`safe_search_path` is the same ``PATH`` without those entries, for the
environment of the children we start: whatever *they* look up is safe in the same way.
Standard library only: hooks use it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

__all__ = ["resolve_program", "safe_search_path", "search_path"]

_cache: dict[tuple[str, str, str], str | None] = {}


def search_path(environ: Mapping[str, str] | None = None) -> str:
    """The ``PATH`` of ``environ`` (default: this process), or the platform's default."""
    value = (os.environ if environ is None else environ).get("PATH")
    return value if value is not None else os.defpath


def _absolute_entries(path: str) -> list[str]:
    return [entry for entry in path.split(os.pathsep) if entry and os.path.isabs(entry)]


def safe_search_path(
    path: str | None = None, *, outside: str | os.PathLike[str] | None = None
) -> str:
    """``path`` (default: this process's ``PATH``) without relative and empty entries, and
    with ``outside`` (a repository) without entries inside that directory either."""
    entries = _absolute_entries(search_path() if path is None else path)
    if outside is not None:
        fence = os.path.realpath(outside)
        entries = [e for e in entries if not _is_inside(os.path.realpath(e), fence)]
    return os.pathsep.join(entries)


def _is_inside(candidate: str, directory: str) -> bool:
    return candidate == directory or candidate.startswith(directory.rstrip(os.sep) + os.sep)


def _spellings(candidate: str) -> list[str]:
    # Windows runs "git" as git.exe / git.cmd...: the extensions PATHEXT names.
    if os.name != "nt" or os.path.splitext(candidate)[1]:
        return [candidate]
    extensions = os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").split(os.pathsep)
    return [candidate + extension for extension in extensions if extension]


def _executable(candidate: str) -> bool:
    try:
        mode = os.stat(candidate).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(mode) and os.access(candidate, os.X_OK)


def resolve_program(
    name: str, *, path: str | None = None, outside: str | os.PathLike[str] | None = None
) -> str | None:
    """The absolute path of program ``name``, or None when there is none we may run.

    ``name`` may be absolute (checked and returned as is); a relative name with a directory
    part (``./git``, ``bin/git``) is refused, since it means a different file in every
    working directory. Otherwise ``path`` (default: this process's ``PATH``) is walked,
    relative and empty entries skipped. With ``outside`` (a repository the program will
    work in), a candidate inside that directory is skipped too: an absolute ``PATH``
    entry such as direnv's ``$PWD/bin`` must not run the repository's own files either.
    Answers are cached per process (by name, ``PATH`` and ``outside``).
    """
    if not name or "\0" in name:
        return None
    if os.path.isabs(name):
        return name if _executable(name) else None
    if os.sep in name or (os.altsep is not None and os.altsep in name):
        return None
    value = search_path() if path is None else path
    fence = os.path.realpath(outside) if outside is not None else ""
    key = (name, value, fence)
    if key in _cache:
        return _cache[key]
    found: str | None = None
    for entry in _absolute_entries(value):
        for candidate in _spellings(os.path.join(entry, name)):
            if fence and _is_inside(os.path.realpath(candidate), fence):
                continue
            if _executable(candidate):
                found = candidate
                break
        if found is not None:
            break
    _cache[key] = found
    return found

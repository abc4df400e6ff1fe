"""Command-line arguments that are not valid UTF-8, refused before anything runs.

Python hands undecodable argv bytes over as lone surrogates (``surrogateescape``). SQLite,
git paths and our JSON output take text only, so such an argument would fail somewhere in the
middle of a command as ``internal-error`` - or, for ``--db``, create a file whose name cannot
be printed. It is answered up front instead, with the bytes escaped, and nothing is opened,
created or written: ``invalid-path`` for the options that name paths, ``invalid-arguments``
for every other argument.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh_knowledge._storage_errors import printable

#: Options whose value is a path (or a workspace, which is one).
PATH_OPTIONS = frozenset({"--db", "--repo", "--workspace"})


def undecodable_argument(argv: Sequence[str]) -> tuple[str, str] | None:
    """``(code, message)`` for the first argument holding undecodable bytes, else None."""
    previous = ""
    for argument in argv:
        option, equals, value = argument.partition("=")
        if equals and option in PATH_OPTIONS:
            name, shown = option, value
        else:
            name, shown = (previous if previous in PATH_OPTIONS else ""), argument
        if printable(argument) != argument:
            if name:
                return (
                    "invalid-path",
                    f"{name} '{printable(shown)}' is not valid UTF-8; nothing was changed.",
                )
            return (
                "invalid-arguments",
                f"argument '{printable(argument)}' is not valid UTF-8; nothing was changed.",
            )
        previous = argument
    return None

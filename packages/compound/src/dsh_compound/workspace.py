"""Selecting the workspace, and refusing path text that is not UTF-8.

A path that came from bytes which are not UTF-8 (a shell argument such as
``$'/srv/\\xffnope'``, or ``os.fsdecode`` of a raw name) holds lone surrogates. No JSON
result or record could name it faithfully, so it is refused up front with ``invalid-path``
and its bytes escaped as ``\\xNN`` in the message - before anything is read or written.
"""

from __future__ import annotations

import os

from dsh_common import paths as common_paths
from dsh_common.cli import escape_undecodable, is_undecodable
from dsh_compound.errors import InvalidPathError, translate_common_errors


def require_decodable_path(path: str | os.PathLike[str], what: str) -> str:
    """``path`` as text, or InvalidPathError when it is not valid UTF-8."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise InvalidPathError(f"{what} must be text, not bytes")
    if is_undecodable(text):
        raise InvalidPathError(f"{what} is not valid UTF-8: '{escape_undecodable(text)}'")
    return text


def select_workspace(workspace: str | os.PathLike[str]) -> common_paths.Workspace:
    """The canonical workspace for ``workspace`` (a directory, not a symlink, UTF-8 text)."""
    text = require_decodable_path(workspace, "the workspace path")
    with translate_common_errors():
        selected = common_paths.resolve_workspace(text)
    # An ancestor symlink may lead to a canonical path that is not UTF-8, and every path
    # we return is built on the canonical root.
    require_decodable_path(str(selected.canonical), "the canonical workspace path")
    return selected

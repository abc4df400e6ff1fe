"""Workspace canonicalisation and workspace-relative path validation.

The rules are those of dsh-compound's contract (docs/compatibility/compound.md, "Paths, writes and
locks"), shared by every
product: a path a user or an agent hands us is untrusted. It must name something *inside* the
selected workspace, in a form that means the same thing on POSIX and Windows, and must not
pass through a symbolic link at any existing component, even one that points back inside.

Validation happens in two stages:

1. :func:`validate_relative_path` is purely lexical (no file-system access): it normalises
   ``\\`` to ``/`` and rejects everything ambiguous.
2. :func:`resolve_in_workspace` maps absolute spellings under the workspace into relative
   ones, runs stage 1, then walks every existing component with ``lstat``.

This is not a sandbox against a process that mutates the tree concurrently; readers still
open files with ``O_NOFOLLOW`` (see :mod:`dsh_common.io`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from dsh_common.errors import InvalidPathError, SymlinkRejectedError, WorkspaceError

# Not typing.TYPE_CHECKING: this module loads without the typing module (start-up time).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

#: Directories that hold agent, VCS or credential state; never evidence, never a target.
INTERNAL_DIRECTORIES: frozenset[str] = frozenset(
    {".git", ".codex", ".claude", ".agents", ".dsh", ".ssh"}
)

# Reserved DOS device names are reserved with any extension ("nul.txt") and, on current
# Windows, with the superscript digits too ("COM¹").
# Matched with fullmatch(): "$" after match() would also accept a trailing newline.
_DEVICE_NAME = re.compile(
    r"(con|prn|aux|nul|conin\$|conout\$|clock\$|(com|lpt)[0-9\u00b9\u00b2\u00b3])",
    re.IGNORECASE,
)
_DRIVE_LETTER = re.compile(r"[A-Za-z]:")  # the first two characters
# Characters Windows forbids in names, plus ':' (alternate data streams, drive syntax).
_WINDOWS_FORBIDDEN_CHARS = frozenset('<>:"|?*')


def is_windows_device_name(name: str) -> bool:
    """True for ``CON``, ``nul.txt``, ``COM1``, ``lpt9.log``... (case-insensitive)."""
    stem = name.split(".", 1)[0].rstrip(" ")
    return bool(_DEVICE_NAME.fullmatch(stem))


def _reject(raw: str, why: str) -> InvalidPathError:
    return InvalidPathError(f"invalid path {raw!r}: {why}", details={"path": raw, "reason": why})


def validate_relative_path(
    raw: str,
    *,
    forbidden_names: Iterable[str] = INTERNAL_DIRECTORIES,
    forbidden_prefixes: Iterable[str] = (),
) -> str:
    """Return ``raw`` as a normalised ``/``-separated relative path, or raise InvalidPathError.

    ``forbidden_names`` are rejected as any component (case-insensitively: Windows and macOS
    file systems fold case, so ``.GIT`` is ``.git`` there). ``forbidden_prefixes`` are
    relative directories (such as a product's corpus directory) that the path must not be
    inside or equal to.
    """
    if not isinstance(raw, str) or raw == "":
        raise _reject(str(raw), "empty path")
    if "\x00" in raw:
        raise _reject(raw, "contains NUL")
    text = raw.replace("\\", "/")
    if text.startswith("//"):
        raise _reject(raw, "UNC path")
    if text.startswith("/"):
        raise _reject(raw, "absolute path")
    if _DRIVE_LETTER.fullmatch(text[:2]):
        raise _reject(raw, "drive letter")
    components = text.split("/")
    forbidden = {name.casefold() for name in forbidden_names}
    for component in components:
        if component in ("", "."):
            raise _reject(raw, "empty or '.' component")
        if component == "..":
            raise _reject(raw, "parent traversal")
        if any(ord(ch) < 0x20 for ch in component):
            raise _reject(raw, "control character")
        if any(ch in _WINDOWS_FORBIDDEN_CHARS for ch in component):
            raise _reject(raw, "character reserved on Windows")
        if component.endswith((".", " ")):
            raise _reject(raw, "trailing dot or space")
        if is_windows_device_name(component):
            raise _reject(raw, "Windows device name")
        if component.casefold() in forbidden:
            raise _reject(raw, f"internal directory {component!r}")
    folded = [c.casefold() for c in components]
    for prefix in forbidden_prefixes:
        prefix_parts = [p.casefold() for p in prefix.replace("\\", "/").strip("/").split("/") if p]
        if prefix_parts and folded[: len(prefix_parts)] == prefix_parts:
            raise _reject(raw, f"inside the reserved directory {prefix!r}")
    return "/".join(components)


class Workspace:
    """A selected workspace: the path as given (made absolute) and its canonical form.

    ``lexical`` keeps ancestors as the user spelled them (an ancestor may be a symlink or a
    junction); ``canonical`` is ``realpath``. Paths under either map to ``canonical``.
    Immutable, compared and hashed by both paths. A plain class, not a dataclass: agent
    hooks import this module at every prompt, and ``dataclasses`` (with ``inspect``) costs
    them ~4 ms of start-up.
    """

    __slots__ = ("canonical", "lexical")
    lexical: Path
    canonical: Path

    def __init__(self, lexical: Path, canonical: Path) -> None:
        object.__setattr__(self, "lexical", lexical)
        object.__setattr__(self, "canonical", canonical)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"cannot assign to field {name!r}: a Workspace is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"cannot delete field {name!r}: a Workspace is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workspace):
            return NotImplemented
        return (self.lexical, self.canonical) == (other.lexical, other.canonical)

    def __hash__(self) -> int:
        return hash((self.lexical, self.canonical))

    def __repr__(self) -> str:
        return f"Workspace(lexical={self.lexical!r}, canonical={self.canonical!r})"

    def absolute(self, relative: str) -> Path:
        """The canonical absolute path of a validated relative path."""
        return self.canonical.joinpath(*relative.split("/"))

    def relative_of(self, absolute: str) -> str | None:
        """``absolute`` (``/``-separated) relative to either root, or None if outside both."""
        for root in (self.lexical, self.canonical):
            root_text = root.as_posix().rstrip("/")
            if absolute == root_text:
                return ""
            if absolute.startswith(root_text + "/"):
                return absolute[len(root_text) + 1 :]
        return None


def resolve_workspace(path: str | os.PathLike[str]) -> Workspace:
    """Canonicalise a workspace root; reject a missing root, a non-directory, or a symlink.

    The root itself must not be a symlink (lstat), though an ancestor may be one.
    """
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise WorkspaceError(f"invalid workspace path {text!r}")
    lexical = Path(os.path.abspath(text))
    try:
        info = os.lstat(lexical)
    except FileNotFoundError as exc:
        raise WorkspaceError(f"workspace {lexical} does not exist") from exc
    except OSError as exc:
        raise WorkspaceError(f"workspace {lexical} cannot be read: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRejectedError(f"workspace root {lexical} is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise WorkspaceError(f"workspace {lexical} is not a directory")
    return Workspace(lexical=lexical, canonical=Path(os.path.realpath(lexical)))


def check_no_symlinks(workspace: Workspace, relative: str) -> bool:
    """Walk each component of ``relative`` under the canonical root with ``lstat``.

    Raises SymlinkRejectedError at the first symlink (a link inside the workspace is as
    unacceptable as one pointing out: its target can change under us), and InvalidPathError
    if a non-final component exists but is not a directory. Returns whether the full path
    exists. Missing components end the walk: nothing below them can be a link yet.
    """
    current = workspace.canonical
    parts = relative.split("/") if relative else []
    for index, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return False
        except NotADirectoryError as exc:
            raise InvalidPathError(f"{relative!r} passes through a non-directory") from exc
        if stat.S_ISLNK(info.st_mode):
            shown = "/".join(parts[: index + 1])
            raise SymlinkRejectedError(
                f"{shown!r} is a symbolic link", details={"path": relative, "link": shown}
            )
        if index < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise InvalidPathError(f"{relative!r} passes through a non-directory")
    return True


def to_relative(
    workspace: Workspace,
    raw: str,
    *,
    forbidden_names: Iterable[str] = INTERNAL_DIRECTORIES,
    forbidden_prefixes: Iterable[str] = (),
) -> str:
    """Lexically map ``raw`` to a validated workspace-relative path (no file-system access).

    An absolute spelling under the lexical or canonical workspace root is accepted and
    mapped; any other absolute path is rejected.
    """
    if not isinstance(raw, str):
        raise InvalidPathError("path must be a string")
    text = raw.replace("\\", "/")
    if text.startswith("/") and not text.startswith("//"):
        # Collapse '..' lexically before comparing prefixes, so '/ws/../etc' cannot pass.
        if any(part == ".." for part in text.split("/")):
            raise _reject(raw, "parent traversal")
        mapped = workspace.relative_of(str(PurePosixPath(text)))
        if mapped is None:
            raise _reject(raw, "absolute path outside the workspace")
        if mapped == "":
            raise _reject(raw, "names the workspace root itself")
        text = mapped
    return validate_relative_path(
        text, forbidden_names=forbidden_names, forbidden_prefixes=forbidden_prefixes
    )


def resolve_in_workspace(
    workspace: Workspace,
    raw: str,
    *,
    forbidden_names: Iterable[str] = INTERNAL_DIRECTORIES,
    forbidden_prefixes: Iterable[str] = (),
) -> tuple[str, Path]:
    """Validate ``raw`` fully (lexically, then every existing component) for use.

    Returns ``(relative, canonical_absolute)``. The path need not exist; callers that need
    an existing regular file open it with :func:`dsh_common.io.read_bounded`.
    """
    relative = to_relative(
        workspace, raw, forbidden_names=forbidden_names, forbidden_prefixes=forbidden_prefixes
    )
    check_no_symlinks(workspace, relative)
    return relative, workspace.absolute(relative)

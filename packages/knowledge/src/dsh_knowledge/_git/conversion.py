"""What git would store for a work-tree file: line endings, file modes, tree entries.

Freshness hashes the raw work-tree bytes (``hash-object --no-filters``) and must never ask git
to convert anything (a conversion can name a program). When the raw bytes differ from the
recorded blob only by CRLF line endings, whether the file is *changed* depends on whether git
would turn CRLF into LF when storing it. That is decided here, in Python, by the same rules as
git's ``convert.c`` (``convert_attrs`` / ``crlf_to_git``), from the ``text``, ``crlf`` and
``eol`` attributes and ``core.autocrlf``:

* ``-text`` (also the ``binary`` macro) or ``-crlf``: never converted, whatever
  ``core.autocrlf`` says;
* ``text``, ``text=input``, ``crlf``, ``crlf=input``, or an ``eol`` with no ``text``: CRLF
  is always turned into LF;
* ``text=auto`` (or nothing, with ``core.autocrlf`` true or ``input``): converted unless git's
  content heuristic calls the file binary (a NUL, a lone CR, or too many control bytes);
* nothing and ``core.autocrlf`` false or unset: never converted.

File modes matter as much as content: git reports a ``chmod +x`` (with ``core.fileMode``),
a symlink replaced by a regular file holding its target text, or a mode staged with
``update-index --chmod`` as a change, even though the blob is identical.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from dsh_common.errors import DshError
from dsh_common.io import read_bounded

#: Largest work-tree file re-hashed in Python to see through a CRLF-only difference.
MAX_LINE_ENDING_REHASH_BYTES = 32 * 1024 * 1024

CrlfAction = Literal["binary", "text", "auto", "undefined"]

MODE_FILE = "100644"
MODE_EXECUTABLE = "100755"
MODE_SYMLINK = "120000"

# Bytes gather_stats() in convert.c counts as non-printable: controls other than BS, HT,
# ESC, FF (CR and LF are counted apart), and DEL.
_NON_PRINTABLE = bytes(c for c in range(32) if c not in (8, 9, 10, 12, 13, 27)) + b"\x7f"


def _attribute_action(value: str | None) -> CrlfAction:
    """git_path_check_crlf(): one ``text`` or ``crlf`` attribute value."""
    if value == "set":
        return "text"
    if value == "unset":
        return "binary"
    if value == "input":
        return "text"
    if value == "auto":
        return "auto"
    return "undefined"


def crlf_action(values: Mapping[str, str], autocrlf: str | None) -> CrlfAction:
    """convert_attrs() for the check-in direction: how git treats CR/LF when storing the file.

    ``values`` are the ``check-attr`` answers for ``text``, ``crlf`` and ``eol``;
    ``autocrlf`` is ``core.autocrlf`` as ``--type=bool-or-str`` prints it (None when unset).
    """
    action = _attribute_action(values.get("text"))
    if action == "undefined":
        action = _attribute_action(values.get("crlf"))
    if action != "binary" and values.get("eol") in ("lf", "crlf") and action != "auto":
        # An eol attribute makes a file text even without a text attribute.
        action = "text"
    if action == "undefined":
        action = "auto" if autocrlf in ("true", "input") else "binary"
    return action


def looks_binary(data: bytes) -> bool:
    """convert_is_binary(gather_stats(data)): git's "do not touch line endings" heuristic."""
    crlf = data.count(b"\r\n")
    lone_cr = data.count(b"\r") - crlf
    nul = data.count(0)
    non_printable = len(data) - len(data.translate(None, _NON_PRINTABLE))
    # CR and LF are counted apart; everything else that is not non-printable is printable.
    printable = len(data) - non_printable - data.count(b"\r") - data.count(b"\n")
    if data.endswith(b"\x1a"):
        # A trailing DOS end-of-file mark is not counted as non-printable (nor printable).
        non_printable -= 1
    return bool(lone_cr or nul or (printable >> 7) < non_printable)


def would_convert_crlf(action: CrlfAction, data: bytes) -> bool:
    """crlf_to_git(): would git turn this content's CRLF into LF when storing it?

    Only called when the LF form of ``data`` is the recorded (and staged) blob: that blob then
    holds no CR of a CRLF pair, so git's "the index already has CRLF" exception cannot apply.
    """
    if action == "binary" or b"\r\n" not in data:
        return False
    if action == "text":
        return True
    return not looks_binary(data)


def read_lf_form(root: str, path: str) -> tuple[bytes, bytes] | None:
    """(raw bytes, bytes with CRLF turned into LF) of a work-tree file, or None if unreadable.

    ``replace`` removes the CR of every CRLF pair left to right, exactly as git's loop does
    (``\\r\\r\\n`` keeps its first CR).
    """
    try:
        data = read_bounded(os.path.join(root, path), MAX_LINE_ENDING_REHASH_BYTES)
    except (OSError, DshError):
        return None
    return data, data.replace(b"\r\n", b"\n")


def blob_id(content: bytes, object_id_length: int) -> str:
    """The git blob id of ``content`` in a SHA-1 (40) or SHA-256 (64) repository."""
    digest = hashlib.sha256 if object_id_length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(content) + content).hexdigest()


def parse_tree(data: bytes, raw_id_length: int) -> dict[bytes, str] | None:
    """name -> canonical mode of a raw tree object, or None if it does not parse.

    Git canonicalises regular-file modes (an old ``100664`` means ``100644``).
    """
    entries: dict[bytes, str] = {}
    position = 0
    while position < len(data):
        space = data.find(b" ", position)
        nul = data.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 1 + raw_id_length > len(data):
            return None
        try:
            mode = int(data[position:space], 8)
        except ValueError:
            return None
        entries[data[space + 1 : nul]] = canonical_mode(mode)
        position = nul + 1 + raw_id_length
    return entries


def canonical_mode(mode: int) -> str:
    kind = mode & 0o170000
    if kind == 0o100000:
        return MODE_EXECUTABLE if mode & 0o100 else MODE_FILE
    return f"{mode:o}"


@dataclass(frozen=True)
class WorktreeConfig:
    """The three settings that decide how git sees a work-tree file.

    ``autocrlf`` is None (unset), "true", "false" or "input"; the booleans default as git's do
    (``core.fileMode`` and ``core.symlinks`` are true unless the repository says otherwise).
    """

    autocrlf: str | None = None
    filemode: bool = True
    symlinks: bool = True


def parse_worktree_config(output: bytes) -> WorktreeConfig | None:
    """``git config -z --type=bool-or-str --get-regexp`` output, or None if git would refuse it.

    The last value of a key wins, as in git. A boolean key with a non-boolean value makes
    git itself fail, so it makes the comparison fail too.
    """
    values: dict[str, str] = {}
    for record in output.split(b"\0"):
        if not record:
            continue
        key, _, value = record.decode("utf-8", "replace").partition("\n")
        values[key.lower()] = value
    flags: dict[str, bool] = {}
    for key in ("core.filemode", "core.symlinks"):
        value = values.get(key, "true")
        if value not in ("true", "false"):
            return None
        flags[key] = value == "true"
    autocrlf = values.get("core.autocrlf")
    if autocrlf is not None and autocrlf not in ("true", "false", "input"):
        return None
    return WorktreeConfig(autocrlf, flags["core.filemode"], flags["core.symlinks"])

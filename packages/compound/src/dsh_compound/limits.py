"""Where records live and every bound the contract fixes (docs/compatibility/compound.md, Limits).

Text lengths are counted the way the earlier Node helper counts them: in JavaScript
characters, i.e. UTF-16 code units. A CJK character is one unit; an emoji or a CJK
Extension B ideograph is two. Counting Python code points instead would accept drafts the
Node helper rejects, and the two tools must agree on what is valid.
"""

from __future__ import annotations

#: The corpus, relative to the workspace root. Never evidence, never a draft location.
CORPUS_DIRECTORY = "docs/solutions/dsh-compound"

#: The only record schema this package writes and reads.
SCHEMA_VERSION = 1

_MIB = 1024 * 1024


class Limits:
    """The contract's limits, read-only. Names are snake_case; ``as_dict`` gives them for JSON.

    A plain slotted class rather than a dataclass: every command imports this module, and
    generating a 24-field dataclass costs a millisecond of start-up for nothing.
    """

    __slots__ = ()

    id_length: int = 100
    title_length: int = 160
    tag_length: int = 64
    tags_min: int = 1
    tags_max: int = 12
    problem_length: int = 4000
    root_cause_length: int = 4000
    resolution_length: int = 4000
    when_to_use_length: int = 2000
    verification_field_length: int = 2000
    files_min: int = 1
    files_max: int = 32
    draft_bytes: int = 32 * 1024
    record_bytes: int = 64 * 1024
    source_bytes: int = 8 * _MIB
    query_length: int = 500
    query_terms: int = 999
    default_limit: int = 5
    max_limit: int = 10
    scan_names: int = 500
    scan_bytes: int = 4 * _MIB
    warnings: int = 20
    summary_length: int = 240
    evidence_string_length: int = 500

    def as_dict(self) -> dict[str, int]:
        """The limits as a plain dict, in declaration order."""
        return {
            name: value
            for name, value in vars(Limits).items()
            if not name.startswith("_") and isinstance(value, int)
        }


LIMITS = Limits()


def js_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript's ``String.prototype.length``."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate (text decoded from broken JSON escapes) is one unit
    # in JavaScript too, and must not make the count raise.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def exceeds_js_length(text: str, limit: int) -> bool:
    """``js_length(text) > limit``, without encoding in the common cases.

    A code point is one or two UTF-16 units, so ``len`` bounds the answer from both sides;
    only a text between ``limit / 2`` and ``limit`` code points needs counting.
    """
    count = len(text)
    if count > limit:
        return True
    if 2 * count <= limit or text.isascii():
        return False
    return js_length(text) > limit


def js_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-16 code units.

    JavaScript's ``text.slice(0, limit)``, except that a surrogate pair is never split: an
    emoji that would straddle the cut is left out whole. One pass over at most ``limit``
    code points, whatever the text holds - no loop that re-measures a shrinking text.
    """
    if limit <= 0:
        return ""
    if len(text) <= limit // 2 or text.isascii():
        return text[:limit]  # every code point is at most two units / exactly one unit
    units = 0
    for index, char in enumerate(text):
        units += 2 if char > "\uffff" else 1
        if units > limit:
            return text[:index]
    return text

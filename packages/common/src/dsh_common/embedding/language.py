"""Which language a stored text is written in, as far as semantic scoring needs to know.

A multilingual sentence model scores a query closer to texts in the query's own language
than to an equally good answer in another, so fusion normalises semantic scores within each
document language (:mod:`dsh_common.embedding.fusion`). That needs only a coarse, fast and
deterministic label per text, not a real language identifier: the share of Han characters
among the letters decides. Engineering notes in Chinese are full of Latin identifiers
(``Nginx``, ``X-Forwarded-For``, ``real_ip``), so the threshold is low: a fifth of the letters
being Han already makes a text Chinese, while an English note quoting one Chinese word stays
English.
"""

from __future__ import annotations

import unicodedata
from typing import Final

#: The labels :func:`detect_language` returns.
CHINESE: Final = "zh"
ENGLISH: Final = "en"
OTHER: Final = "other"
LANGUAGES: Final = (CHINESE, ENGLISH, OTHER)

#: Han characters as a share of all letters at or above which a text counts as Chinese.
HAN_SHARE: Final = 0.2
#: Latin letters as a share of all letters at or above which a non-Chinese text counts as
#: English (Latin-script text in general: the model's other Latin languages group with it).
LATIN_SHARE: Final = 0.5
#: Only the start of a long text is looked at: a label needs no more.
SAMPLE_CHARACTERS: Final = 4000


def _is_han(code: int) -> bool:
    # The same blocks dsh_common.text treats as Han runs.
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x3134F
        or code == 0x3007
    )


def _is_latin_letter(char: str, code: int) -> bool:
    if code < 0x80:
        return char.isalpha()
    # Latin-1 Supplement to Latin Extended-B, and the fullwidth Latin letters.
    return (0xC0 <= code <= 0x24F or 0xFF21 <= code <= 0xFF5A) and char.isalpha()


def letter_counts(text: str) -> tuple[int, int, int]:
    """``(han, latin, other)`` letters in the first :data:`SAMPLE_CHARACTERS` of ``text``."""
    han = latin = other = 0
    for char in text[:SAMPLE_CHARACTERS]:
        code = ord(char)
        if _is_han(code):
            han += 1
        elif _is_latin_letter(char, code):
            latin += 1
        elif char.isalpha() or unicodedata.category(char) == "Lo":
            other += 1
    return han, latin, other


def detect_language(text: str) -> str:
    """``"zh"``, ``"en"`` or ``"other"`` for ``text`` (see the module docstring).

    Text with no letters at all (empty, digits, punctuation) is ``"other"``.
    """
    han, latin, other = letter_counts(text)
    letters = han + latin + other
    if letters == 0:
        return OTHER
    if han >= HAN_SHARE * letters:
        return CHINESE
    if latin >= LATIN_SHARE * letters:
        return ENGLISH
    return OTHER

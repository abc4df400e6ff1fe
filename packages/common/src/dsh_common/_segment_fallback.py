"""Pure-Python word segmentation, used only when ICU cannot be imported.

It follows the Unicode word-boundary rules (UAX #29) closely enough for search: runs of
letters, digits, marks and connector punctuation are words; an apostrophe or a full stop
between two letters, or a full stop or comma between two digits, keeps a word together
("don't", "e.g", "3.14", "1,000"); katakana runs and hangul runs are words; each Han
ideograph and each hiragana character is a word of its own, because without ICU's
dictionary there is no way to tell where a Chinese or Japanese word ends. Spaces, symbols
and punctuation are not word-like and are dropped, as ``isWordLike`` drops them.
"""

from __future__ import annotations

import re

_HAN = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HIRAGANA = "\u3041-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
# \w minus every script handled on its own above.
_LETTER = f"[^\\W{_HAN}{_HIRAGANA}{_KATAKANA}{_HANGUL}]"
_ALPHA = f"[^\\W\\d_{_HAN}{_HIRAGANA}{_KATAKANA}{_HANGUL}]"

_WORD = re.compile(
    f"[{_HAN}]"
    f"|[{_HIRAGANA}]"
    f"|[{_KATAKANA}]+"
    f"|[{_HANGUL}]+"
    # a word: letters/digits/underscore, joined across ' . (letters) and . , (digits)
    f"|{_LETTER}+(?:(?:(?<={_ALPHA})['\u2019.](?={_ALPHA})|(?<=\\d)[.,](?=\\d)){_LETTER}+)*"
)


def segment_words(text: str) -> list[str]:
    """The word-like segments of ``text``, in order (see the module docstring)."""
    return _WORD.findall(text)

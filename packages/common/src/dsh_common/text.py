"""Text normalisation and word segmentation shared by every product.

Segmentation uses ICU's word break iterator with the Chinese locale - the same engine and
rules that Node's ``Intl.Segmenter("zh", {granularity: "word"})`` uses - and keeps the
segments ICU marks as word-like (rule status >= 100: numbers, letters, kana, ideographs),
exactly what ``isWordLike`` reports. Because dictionary segmentation of Chinese can split a
phrase differently from how a record splits it, every run of Han characters also
contributes all its two-character n-grams; that is what makes "数据库连接池" find
"连接池耗尽导致超时".

Where ``icu`` cannot be imported (pyicu-wheels has no wheel for the platform: macOS before
15, a Python newer than its wheels, glibc before 2.28), :mod:`dsh_common._segment_fallback`
takes over with one warning on stderr: Unicode word boundaries without a dictionary, so a Han
run becomes one segment per character. The Han bigrams are the same on both paths, so a
Chinese query still finds its records; only the whole-word segments differ.

ASCII text needs neither: no dictionary is involved, and the word rules restricted to ASCII
fit in one regular expression (:data:`_ASCII_WORD`), which gives exactly ICU's word-like
segments (checked against ICU over every string of up to six characters drawn from one
character of each ASCII word-break class, every ASCII string of up to three characters, and
random text: ``test_ascii_words_are_icus_words``). So an English query never loads ICU (~7
ms of an agent hook's start), and the fallback agrees with ICU on ASCII text.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import warnings
from collections.abc import Callable

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# ICU's UBRK_WORD_NONE_LIMIT: rule statuses below it are spaces and punctuation.
_WORD_LIKE_MIN_STATUS = 100

# Han ideographs: the CJK Unified blocks (with Extension A and B-H) and the compatibility
# ideographs, plus the ideographic zero. Kana and Hangul are not part of a "Chinese run".
_HAN_RUN = re.compile("[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")

# UAX #29 word boundaries for ASCII: letters, digits and "_" never break between each other
# (WB5, WB8-10, WB13a-b); "." "'" ":" join two letters (WB6-7), "." "'" "," ";" two digits
# (WB11-12). ICU marks every such run word-like except a lone "_".
_ASCII_WORD = re.compile(
    r"[A-Za-z0-9_]+(?:(?:(?<=[A-Za-z])[.':](?=[A-Za-z])|(?<=[0-9])[.',;](?=[0-9]))[A-Za-z0-9_]+)*"
)

FALLBACK_WARNING = (
    "dsh: the ICU library (pyicu-wheels) is not installed for this platform; "
    "word segmentation falls back to plain Unicode word boundaries (Chinese is matched "
    "by character pairs only)"
)

_local = threading.local()
_backend_lock = threading.Lock()
# Resolved on first use, not at import: importing ICU costs start-up time that commands
# which never segment text should not pay.
_segmenter: Callable[[str], list[str]] | None = None
_backend_name: str | None = None


def _icu_segmenter(icu: Any) -> Callable[[str], list[str]]:
    def iterator() -> Any:
        # Creating a word iterator costs ~100x a segmentation; iterators are not
        # thread-safe, so each thread keeps its own.
        found = getattr(_local, "iterator", None)
        if found is None:
            found = icu.BreakIterator.createWordInstance(icu.Locale("zh"))
            _local.iterator = found
        return found

    def segment(text: str) -> list[str]:
        it = iterator()
        # ICU counts UTF-16 code units; slicing the UnicodeString keeps astral characters whole.
        utext = icu.UnicodeString(text)
        it.setText(utext)
        segments: list[str] = []
        start = it.first()
        for end in it:
            if it.getRuleStatus() >= _WORD_LIKE_MIN_STATUS:
                segments.append(str(utext[start:end]))
            start = end
        return segments

    return segment


def _resolve() -> Callable[[str], list[str]]:
    global _segmenter, _backend_name
    with _backend_lock:
        if _segmenter is None:
            try:
                import icu  # noqa: PLC0415 - optional native dependency, resolved on use
            except ImportError:
                from dsh_common._segment_fallback import segment_words as fallback  # noqa: PLC0415

                warnings.warn(FALLBACK_WARNING, RuntimeWarning, stacklevel=3)
                _segmenter, _backend_name = fallback, "fallback"
            else:
                _segmenter, _backend_name = _icu_segmenter(icu), "icu"
        return _segmenter


def segmenter_name() -> str:
    """``"icu"`` or ``"fallback"``: which engine :func:`segment_words` uses in this process."""
    _resolve()
    assert _backend_name is not None  # noqa: S101 - set by _resolve
    return _backend_name


def normalize(text: str) -> str:
    """NFKC, then lowercase: full-width and compatibility forms fold to plain ones."""
    return unicodedata.normalize("NFKC", text).lower()


def segment_words(text: str) -> list[str]:
    """The word-like segments of ``text``, in order, as ``Intl.Segmenter`` (zh, word) gives.

    Segments are returned as written (not normalised).
    """
    if not text:
        return []
    if text.isascii():
        return [word for word in _ASCII_WORD.findall(text) if word != "_"]
    segment = _segmenter if _segmenter is not None else _resolve()
    return segment(text)


def han_runs(text: str) -> list[str]:
    """Maximal runs of Han (Chinese) characters in ``text``."""
    return _HAN_RUN.findall(text)


def han_bigrams(text: str) -> list[str]:
    """Every two-character n-gram of every Han run, in order (duplicates kept)."""
    grams: list[str] = []
    for run in han_runs(text):
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def query_terms(text: str, *, dedupe: bool = True) -> list[str]:
    """Search terms of a query: word segments plus Han bigrams, each normalised.

    Terms come from the original text (so segmentation sees what the user typed) and are
    then NFKC-lowercased; empty results of normalisation are dropped. With ``dedupe`` the
    first occurrence of each term is kept, in order.
    """
    raw = segment_words(text) + han_bigrams(text)
    terms = [term for term in (normalize(t) for t in raw) if term]
    if not dedupe:
        return terms
    return list(dict.fromkeys(terms))


def index_terms(text: str) -> list[str]:
    """Distinct terms under which a stored text should be findable (same rules as queries)."""
    return query_terms(text, dedupe=True)

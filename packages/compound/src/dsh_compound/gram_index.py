"""An inverted index of characters and character pairs, for recall without scanning text.

Recall scores a term in a field when the term is a substring of the field's normalised
text. Scanning 500 records' text for each term costs ~0.8 ms a term (a 500-character
Chinese query has ~600 distinct terms). This index answers the same question from
postings: for every character and every pair of neighbouring characters in a field, the
fields it occurs in. A term of one or two characters occurs in a field exactly when it is
one of the field's unigrams or bigrams, so its postings are its answer. A longer term can
only occur where its rarest character pair occurs; those few fields are then searched for
the term's UTF-8 bytes (a UTF-8 needle matches UTF-8 text only at character boundaries, so
a byte match is a character match). Either way the set of fields is exactly the set the
substring test gives; property tests compare the two.

A field is identified as ``slot * 8 + field`` (seven fields in
:data:`dsh_compound.scoring.FIELD_WEIGHTS` order; slots are record positions, at most
8,191). Keys are the integers :func:`dsh_compound.scoring.gram_keys` gives, unigrams with
the top bit set so that they never equal a pair. The arrays are native machine integers:
the cache that stores them is keyed by the machine's byte order.
"""

from __future__ import annotations

import bisect
import collections
import itertools
from array import array
from collections.abc import Callable, Iterable, Sequence

from dsh_compound.scoring import NATIVE_UTF32, gram_keys

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Set on unigram keys: a pair's key is below 2**53 (two code points of 21 bits).
UNIGRAM_FLAG = 1 << 63
#: Fields per slot in a field id (seven are used).
SLOT_FIELDS = 8
MAX_SLOTS = 65536 // SLOT_FIELDS

#: ``find(needle, start, end)`` over the stored UTF-8 field texts: ``mmap.find``.
Finder = Callable[[bytes, int, int], int]


def build(slots: Sequence[Sequence[str]]) -> tuple[array[int], array[int], array[int]]:
    """``(keys, starts, postings)`` for the fields of each slot (seven texts per slot).

    ``keys`` are sorted; the field ids holding ``keys[i]`` are
    ``postings[starts[i]:starts[i + 1]]``, ascending.
    """
    if len(slots) > MAX_SLOTS:
        raise ValueError(f"at most {MAX_SLOTS} records per index")
    lists: collections.defaultdict[int, list[int]] = collections.defaultdict(list)
    lookup = lists.__getitem__
    append = list.append
    for slot, fields in enumerate(slots):
        for position, text in enumerate(fields):
            field_id = slot * SLOT_FIELDS + position
            unigrams, bigrams = gram_keys(text)
            # Both loops run in C (map and deque): a Python loop here costs ~3x as much.
            collections.deque(
                map(append, map(lookup, bigrams), itertools.repeat(field_id)), maxlen=0
            )
            flagged = (key | UNIGRAM_FLAG for key in unigrams)
            collections.deque(
                map(append, map(lookup, flagged), itertools.repeat(field_id)), maxlen=0
            )
    keys = array("Q", sorted(lists))
    starts = array("I", [0])
    postings = array("H")
    for key in keys:
        postings.extend(lists[key])
        starts.append(len(postings))
    return keys, starts, postings


def term_keys(term: str) -> tuple[list[int], bytes] | None:
    """A term's keys to look up (its character, its pair, or its distinct pairs) and its
    UTF-8 bytes; None for a term that cannot occur in stored text (a lone surrogate)."""
    try:
        raw = memoryview(term.encode(NATIVE_UTF32))
        needle = term.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if len(term) == 1:
        return [int(raw.cast("I")[0]) | UNIGRAM_FLAG], needle
    even = len(raw) // 8 * 8
    odd = (len(raw) - 4) // 8 * 8
    pairs = set(raw[:even].cast("Q"))
    pairs.update(raw[4 : 4 + odd].cast("Q"))
    return sorted(pairs), needle


class GramIndex:
    """Postings over mapped (or in-memory) arrays; see the module docstring."""

    __slots__ = ("base", "field_starts", "find", "keys", "postings", "starts")

    def __init__(
        self,
        keys: Sequence[int],
        starts: Sequence[int],
        postings: Sequence[int],
        field_starts: Sequence[int],
        find: Finder,
        *,
        base: int = 0,
    ) -> None:
        self.keys = keys
        self.starts = starts
        self.postings = postings
        #: Byte offsets of each field's text, from ``base`` in what ``find`` searches: field
        #: ``i`` spans ``field_starts[i]`` to ``field_starts[i + 1]`` (``slot * 8 + 7`` ends
        #: a slot).
        self.field_starts = field_starts
        self.find = find
        self.base = base

    def _postings(self, key: int) -> Sequence[int] | None:
        position = bisect.bisect_left(self.keys, key)
        if position == len(self.keys) or self.keys[position] != key:
            return None
        return self.postings[self.starts[position] : self.starts[position + 1]]

    def fields_with(self, term: str) -> Iterable[int]:
        """The ids of the fields whose text contains ``term`` (each once)."""
        found = term_keys(term)
        if found is None:
            return ()
        keys, needle = found
        best: Sequence[int] = ()
        for position, key in enumerate(keys):
            postings = self._postings(key)
            if postings is None:
                return ()  # a character or pair of the term occurs nowhere
            if position == 0 or len(postings) < len(best):
                best = postings
        if len(term) <= 2:
            return best
        # The rarest pair's fields, searched for the whole term. Every step is a C call
        # (map over bound methods): a Python function per field would double the cost.
        offset, starts = self.base.__add__, self.field_starts.__getitem__
        begins = map(offset, map(starts, best))
        ends = map(offset, map(starts, map((1).__add__, best)))
        found_at = map(self.find, itertools.repeat(needle), begins, ends)
        return itertools.compress(best, map((-1).__ne__, found_at))

    def field_counts(self, terms: Iterable[str]) -> collections.Counter[int]:
        """How many of ``terms`` (distinct) each field contains, by field id."""
        counts: collections.Counter[int] = collections.Counter()
        for term in terms:
            counts.update(self.fields_with(term))
        return counts


def slot_scores(
    counts: collections.Counter[int], weights: Sequence[int], live: dict[int, Any]
) -> dict[int, int]:
    """The recall score of each slot in ``live`` with a matching field (weights per field)."""
    scores: dict[int, int] = {}
    for field_id, count in counts.items():
        slot = field_id >> 3
        if slot in live:
            scores[slot] = scores.get(slot, 0) + count * weights[field_id & 7]
    return scores

"""Text normalisation and tokenisation for retrieval and near-duplicate detection.

Latin-script behaviour is exactly the earlier tool's: NFKC, lowercase, every run of
characters that are neither letters nor numbers becomes one space, tokens are what the
spaces separate. We go one step further for Chinese: the earlier tool kept a whole Han run
as a single token, so "数据库连接池" could only ever match a record containing exactly that
run. Here every Han run of two or more characters is replaced by its two-character n-grams
(dsh-common's ``han_bigrams``), and a Han run glued to Latin letters ("api接口") is split
from them first. A token with no Han character is never touched, so Latin text tokenises,
filters and scores exactly as specified.
"""

from __future__ import annotations

import re

from dsh_common.text import han_bigrams, han_runs, normalize

# ``[\W_]`` is exactly "not a letter and not a number" (Unicode categories L* and N*) for
# Python's ``re``: \w is letters, numbers and the underscore. Checked over every code point.
_NOT_LETTER_OR_NUMBER = re.compile(r"[\W_]+")

MIN_QUERY_TOKEN_LENGTH = 2
MAX_QUERY_TOKENS = 16
MAX_QUERY_CHARACTERS = 1200

STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "get",
        "got",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "make",
        "me",
        "more",
        "most",
        "my",
        "need",
        "nor",
        "now",
        "of",
        "off",
        "on",
        "once",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "please",
        "same",
        "she",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "use",
        "used",
        "using",
        "very",
        "want",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

CONTRAST_TOKENS: frozenset[str] = frozenset(
    [
        "allow",
        "always",
        "avoid",
        "can",
        "cannot",
        "could",
        "disallow",
        "except",
        "forbid",
        "may",
        "might",
        "must",
        "never",
        "no",
        "not",
        "only",
        "optional",
        "prohibit",
        "required",
        "shall",
        "should",
        "unless",
        "will",
        "without",
        "would",
    ]
)


def normalize_text(value: str) -> str:
    """NFKC, lowercase, non-letter/number runs to one space, trimmed (the earlier rule)."""
    return _NOT_LETTER_OR_NUMBER.sub(" ", normalize(value)).strip()


def _expand_han(token: str) -> list[str]:
    """Split a token containing Han characters into its Latin parts and Han bigrams."""
    runs = han_runs(token)
    if not runs:
        return [token]
    parts: list[str] = []
    rest = token
    for run in runs:
        before, _, rest = rest.partition(run)
        if before:
            parts.append(before)
        # A lone Han character stays a (one-character) token; longer runs become bigrams.
        parts.extend(han_bigrams(run) if len(run) > 1 else [run])
    if rest:
        parts.append(rest)
    return parts


def tokenize(normalized: str) -> list[str]:
    """Tokens of already-normalised text, in order, Han runs expanded into bigrams."""
    if not normalized:
        return []
    tokens: list[str] = []
    for token in normalized.split(" "):
        if token.isascii():
            tokens.append(token)  # fast path: the common case never needs the Han scan
        else:
            tokens.extend(_expand_han(token))
    return tokens


def content_tokens(content: str) -> list[str]:
    """Tokens of stored content (normalise, then tokenise)."""
    return tokenize(normalize_text(content))


def query_tokens(normalized_query: str) -> list[str]:
    """Meaningful query tokens: length >= 2, not a stopword, first occurrence, at most 16."""
    meaningful = (
        token
        for token in tokenize(normalized_query)
        if len(token) >= MIN_QUERY_TOKEN_LENGTH and token not in STOP_WORDS
    )
    return list(dict.fromkeys(meaningful))[:MAX_QUERY_TOKENS]

"""One secret detector for every dsh product: credential shapes in free text, as spans.

dsh-knowledge refuses a write that contains a secret, dsh-memory redacts session transcripts
before an agent reads them (and before anything reaches the memory's Git history); both ask
this module, so a shape caught by one is caught by the other.

Shapes (each reported as a :class:`Span` with its ``kind``):

- vendor tokens: OpenAI / Anthropic / DeepSeek ``sk-…``, ``sk_…``, GitHub ``ghp_ gho_ ghu_
  ghs_ ghr_ github_pat_``, GitLab ``glpat-``, AWS key ids ``AKIA ASIA …`` (+16), Slack
  ``xox[abposr]-`` and ``xapp-``, Stripe ``sk_ rk_ pk_`` ``live_/test_`` and ``whsec_``,
  Google ``AIza…``, xAI ``xai-``, npm ``npm_``, PyPI ``pypi-AgE…``, Hugging Face ``hf_``,
  age ``AGE-SECRET-KEY-1…``; Slack and Discord webhook URLs;
- ``Bearer <token>`` and ``Authorization: Basic <credentials>``;
- JWTs: three base64url segments, the header starting ``eyJ``;
- PEM private-key blocks (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP …; to the END line when
  there is one) and PuTTY ``Private-Lines``;
- the password in a URL's user information, any scheme (``postgresql+psycopg2://u:p@h``,
  ``https://u:p@h``);
- assignments whose name says secret: ``key=value``, ``key: value``, ``"key": "value"``,
  ``--key value``, for names such as ``password``, ``DB_PASSWORD``, ``MYSQL_ROOT_PASSWORD``,
  ``client_secret``, ``GITHUB_TOKEN``, ``api_key``, ``AWS_SECRET_ACCESS_KEY`` (see
  :func:`is_secret_name`), and Chinese labels (``密码: …``, ``密钥是…``). A Chinese input
  method's full-width separators, quotes and spaces count as their ASCII forms
  (``password：…``, ``DB_PASSWORD＝…``, “token”：“…”, ``密码：“…”``).

Boundaries are ASCII: a token may be glued to Chinese text on either side (``密钥是sk-…``)
and is still found, where a Unicode ``\\b`` would see one long word. Values of placeholders
(``${DB_PASSWORD}``, ``$TOKEN``, ``<your-token>``, ``***``, ``[REDACTED]``, ``null``) are not
secrets.

Prose is not a credential: a bare ``Token:`` or ``Secret:`` followed by a plain word
("Token: rotate it monthly") and a Chinese label followed by 是/为 and a word ("令牌是JWT格式")
are left alone.

Two sensitivities, one table of shapes. The default is for *refusing* (dsh-knowledge): a
false positive loses a user's fact, so vendor tokens need their real length (``sk-`` and
20 characters) and an assigned value at least 3 characters. ``eager=True`` is for
*redacting* (dsh-memory): a false positive hides a few characters of a transcript, so the
short forms the predecessor's session filter redacted (``sk-`` and 3, ``ghp_`` and 4,
``Bearer`` and 3, any case) count too, any non-empty value counts and ``auth`` /
``authorization`` name a secret. Everything the default reports, ``eager`` reports too.

Cost: a scan is linear in the text. Token patterns start with a literal (the regex engine's
fast prefix scan finds candidates) and check their boundary behind it; no repeat holds
another one that can match more than once, so nothing backtracks over a run it has read
(tests check both on the compiled patterns); values, names and key blocks are bounded; a
key block's END line is found by one scan and a binary search per BEGIN.
``bench/bench_secrets.py`` feeds it adversarial megabytes (docs/benchmarks.md has the
results).

This module is standard-library only and uses no regular-expression syntax newer than
Python 3.8 (no possessive repeats, no atomic groups): dsh-memory inlines its source into the
memory repository's standalone ``scripts/filter_session.py``, which the sync of
dsh-memory's predecessor runs with whatever ``python3`` the machine has
(docs/compatibility/memory.md).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Span", "contains_secret", "find_secrets", "is_secret_name", "redact"]


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` is a secret of shape ``kind`` (``"github-token"``, ``"jwt"`` ...)."""

    kind: str
    start: int
    end: int


_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE

# A token starts where the previous character is not an ASCII letter, digit or underscore
# (the ASCII meaning of \b, as JavaScript has it): Chinese text glued to it is a boundary.
_WORD_BEFORE = "A-Za-z0-9_"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    #: Lower-case strings of which one must occur for the rule to be worth a scan.
    needles: tuple[str, ...]
    #: The regex group that is the secret (0: the whole match).
    group: int | str = 0


def _token(
    kind: str,
    prefix: str,
    rest: str,
    needles: tuple[str, ...],
    *,
    flags: int = _A,
    boundary: str = _WORD_BEFORE,
) -> _Rule:
    """A token: a literal ``prefix`` (every alternative the same length) at an ASCII
    boundary, then ``rest``.

    The boundary is checked by a look-behind *after* the prefix, not before it: a pattern
    that starts with a literal is searched for by the regex engine's fast prefix scan
    (about 30 times faster than trying a look-behind at every position).
    """
    alternatives = prefix.split("|")
    width = len(alternatives[0])
    if any(len(alternative) != width for alternative in alternatives):
        raise ValueError(f"{kind}: every prefix alternative must have the same length")
    literal = "|".join(re.escape(alternative) for alternative in alternatives)
    pattern = f"(?:{literal})(?<![{boundary}][\\s\\S]{{{width}}}){rest}"
    return _Rule(kind, re.compile(pattern, flags), needles)


# Shapes whose whole match is the secret, in both sensitivities. A token's run of characters
# is its last repeat (or is followed by a character it cannot hold), so a failed match never
# re-splits a run it has read.
_COMMON_TOKENS: tuple[_Rule, ...] = (
    _token(
        "stripe-key",
        "sk_live_|sk_test_|rk_live_|rk_test_|pk_live_|pk_test_",
        "[A-Za-z0-9]{12,}",
        ("_live_", "_test_"),
    ),
    _token("stripe-webhook-secret", "whsec_", "[A-Za-z0-9]{20,}", ("whsec_",)),
    _token("github-token", "github_pat_", "[A-Za-z0-9_]{20,}", ("github_pat_",)),
    _token(
        "aws-access-key-id",
        "AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA",
        "[A-Z0-9]{16}(?![A-Za-z0-9])",
        ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "asca"),
    ),
    _token("aws-access-key-id", "A3T", "[A-Z0-9]{16}(?![A-Za-z0-9])", ("a3t",)),
    _token("slack-token", "xoxa-|xoxb-|xoxp-|xoxo-|xoxs-|xoxr-", "[A-Za-z0-9-]{10,}", ("xox",)),
    _token("slack-token", "xapp-", "[0-9]-[A-Za-z0-9-]{10,}", ("xapp-",)),
    _Rule(
        "slack-webhook",
        re.compile(
            r"https?://hooks\.slack\.com/(?:services|workflows|triggers)"
            r"/[A-Za-z0-9_/-]{20,}",
            _A,
        ),
        ("hooks.slack.com",),
    ),
    _Rule(
        "discord-webhook",
        re.compile(
            r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks"
            r"/[0-9]{5,30}/[A-Za-z0-9_-]{20,}",
            _A,
        ),
        ("/api/webhooks/",),
    ),
    _token("google-api-key", "AIza", "[A-Za-z0-9_-]{30,}", ("aiza",)),
    _token("xai-key", "xai-", "[A-Za-z0-9_-]{20,}", ("xai-",)),
    _token("gitlab-token", "glpat-", "[A-Za-z0-9_-]{20,}", ("glpat-",)),
    _token("npm-token", "npm_", "[A-Za-z0-9]{30,}", ("npm_",)),
    _token("pypi-token", "pypi-AgE", "[A-Za-z0-9_-]{50,}", ("pypi-",)),
    _token("huggingface-token", "hf_", "[A-Za-z0-9]{30,}", ("hf_",)),
    _token("age-secret-key", "AGE-SECRET-KEY-1", "[0-9A-Z]{50,}", ("age-secret-key-",)),
    _token("api-key", "sk_", "[A-Za-z0-9_-]{20,}", ("sk_",)),
    # The boundary holds every character of a segment (and "-"), so no attempt can start
    # inside a long segment and read it again.
    _token(
        "jwt",
        "eyJ",
        r"[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        ("eyj",),
        boundary="A-Za-z0-9_-",
    ),
    _Rule(
        "basic-auth",
        re.compile(
            r"authorization(?<![A-Za-z0-9_-][\s\S]{13})[\"'”’＂＇]?[ \t\u3000]{0,16}"
            r"[:=：＝][ \t\u3000]{0,16}[\"'“‘＂＇]?basic[ \t]{1,16}"
            r"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})",
            _AI,
        ),
        ("basic",),
        "secret",
    ),
)

_STRICT_TOKENS: tuple[_Rule, ...] = (
    _token("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{20,}", ("sk-ant-",)),
    _token("openai-key", "sk-", "[A-Za-z0-9_-]{20,}", ("sk-",)),
    _token("github-token", "ghp_|gho_|ghu_|ghs_|ghr_", "[A-Za-z0-9]{20,}", ("gh",)),
    _token("bearer", "bearer", r"\s{1,16}[A-Za-z0-9._~+/-]{16,}=*", ("bearer",), flags=_AI),
)

# The session filter's short forms, any case: what a transcript has always lost.
_EAGER_TOKENS: tuple[_Rule, ...] = (
    _token("anthropic-key", "sk-ant-", "[A-Za-z0-9_-]{3,}", ("sk-ant-",), flags=_AI),
    _token("openai-key", "sk-", "[A-Za-z0-9_-]{3,}", ("sk-",), flags=_AI),
    _token("github-token", "ghp_|gho_|ghu_|ghs_|ghr_", "[A-Za-z0-9]{4,}", ("gh",), flags=_AI),
    _token("bearer", "bearer", r"[ \t]{1,16}[A-Za-z0-9._~+/=-]{3,}", ("bearer",), flags=_AI),
)

_URL_PASSWORD = _Rule(
    "url-password",
    # ://user:password@ in any scheme - the password may hold "@" (the last one ends it) but
    # never "/" (the authority ends there); both bounded. The scheme does not matter, so
    # the pattern starts at the literal "://".
    re.compile(r"://[^\s:@/?#\"'<>\\]{0,256}:(?P<secret>[^\s/\"'<>\\]{1,256})@", _A),
    ("://",),
    "secret",
)

_PEM_BEGIN = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|Private-Lines:[ \t]{0,16}[0-9]+",
    _AI,
)
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----", _AI)
# A block whose END line is missing (cut by a paste or a truncation): its base64 lines and
# RFC 1421 headers ("Proc-Type: 4,ENCRYPTED"), real or JSON-escaped ("\\n") line breaks
# between them - one character class, read in one pass.
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=:,. \t\r\n\\-]*", _A)
_PEM_MAX_BLOCK = 64 * 1024
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+", _A)

# -- assignments ----------------------------------------------------------------------------

_NAME_SPLIT = re.compile(r"[^A-Za-z0-9]+", _A)
_CAMEL_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _A)  # names are <= 64
# A name whose last part is one of these names a secret ...
_SECRET_LAST = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "passcode",
        "secret",
        "secrets",
        "token",
        "apikey",
        "apitoken",
        "accesskey",
        "secretkey",
        "privatekey",
        "clientsecret",
        "accesstoken",
        "authtoken",
        "refreshtoken",
        "credential",
        "credentials",
    }
)
# ... and so does "<qualifier> key" (api_key, AWS_SECRET_ACCESS_KEY, signingKey ...).
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "client",
        "auth",
        "signing",
        "encryption",
        "master",
        "session",
        "app",
        "account",
        "service",
        "webhook",
        "deploy",
        "consumer",
    }
)
# "max_token: 4096" counts tokens, it is not one.
_COUNTING = frozenset(["max", "min", "num", "number", "total", "count", "n", "per", "limit"])
_EAGER_LAST = frozenset({"auth", "authorization"})
# Bare English nouns: "Token: rotate it monthly" is prose unless the value looks like a key.
_PROSE_NOUNS = frozenset({"token", "secret", "secrets"})

# A name of one word, no separator: PGPASSWORD, DBPASSWORD, SSHPASS. No ordinary word ends
# in "password" or "passwd", but "pass" ends bypass, compass and trespass: it names a secret
# only after the prefix of a well-known variable.
_SECRET_SUFFIXES = ("password", "passwd", "passphrase", "passcode")
_PASS_PREFIXES = frozenset(
    {
        "db",
        "pg",
        "mysql",
        "redis",
        "mongo",
        "ssh",
        "root",
        "admin",
        "user",
        "ftp",
        "sftp",
        "smtp",
        "mail",
        "imap",
        "ldap",
        "sql",
        "vnc",
        "rabbitmq",
        "amqp",
        "wifi",
    }
)

# Chinese and Japanese input methods type full-width punctuation: "password：…",
# "DB_PASSWORD＝…", “token”：“…”, 「密码」. A separator, a quote or a space in either width
# is the same one. A full-width quote holds a value only when what it holds is printable
# ASCII: “请在设置里生成” is words, not a credential. The value's run stops at the first
# character that is not, so a quote that never closes is not read to the end of the window.
_FULLWIDTH_QUOTES = {"“": "”", "‘": "’", "＂": "＂", "＇": "＇", "「": "」", "『": "』"}
_FULLWIDTH_VALUE = {
    opener: re.compile(f"{opener}(?P<v>[!-~][ -~]{{0,4095}}){closer}")
    for opener, closer in _FULLWIDTH_QUOTES.items()
}

# An assignment is found from its secret word: the word ending an identifier run (nothing
# of a name may follow it), an optional closing quote, a separator - or, for a
# command-line flag ("--password value"), a space. The pattern starts with the word, so the
# engine's prefix scan finds candidates; the rest of the name is read backwards, at most
# _NAME_TAIL characters (is_secret_name decides on the end of a name).
_ASSIGNMENT = re.compile(
    r"(?P<word>pass(?:word|wd|phrase|code)?|pwd|secrets?|token|key|credentials?"
    r"|auth(?:orization)?)(?![A-Za-z0-9_.-])(?:\\?[\"'”’＂＇」』])?"
    r"(?:[\s\u3000]{0,16}(?P<sep>:=|=>|=|:|：|＝)|(?P<space>[ \t]{1,16}))[\s\u3000]{0,16}",
    _AI,
)
_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_NAME_TAIL = 64
_ASSIGNMENT_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential", "auth")
_CJK_LABEL = re.compile(
    r"(?:访问令牌|访问密钥|私钥|密钥|秘钥|密码|口令|令牌|凭证|凭据)[」』”’＂＇]?[ \t\u3000]{0,4}"
    r"(?P<sep>[:：=＝]|是|为)[ \t\u3000]{0,4}",
)
_CJK_NEEDLES = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌", "凭证", "凭据")

# A value: quoted (JSON escapes allowed, also inside an escaped JSON string) or a run of
# printable ASCII. Non-ASCII ends an unquoted value, so Chinese glued after it stays.
_QUOTED_VALUE = {
    '"': re.compile(r'"(?P<v>(?:[^"\\\r\n]|\\.)*)"', _A),
    "'": re.compile(r"'(?P<v>(?:[^'\\\r\n]|\\.)*)'", _A),
    '\\"': re.compile(r'\\"(?P<v>(?:[^"\\\r\n]|\\[^"])*)\\"', _A),
    "\\'": re.compile(r"\\'(?P<v>(?:[^'\\\r\n]|\\[^'])*)\\'", _A),
}
_UNCLOSED_VALUE = re.compile(r"\\?[\"'](?P<v>[^\"'\r\n]{0,4096})", _A)
_BARE_VALUE = re.compile(r"[!#-&(-_a-~]{1,4096}", _A)  # printable ASCII but space, quotes, `
_QUERY_VALUE = re.compile(r"[!#-%(-_a-~]{1,4096}", _A)  # ... and "&" ends a query parameter
_SENTENCE_TAIL = ".,;:!?"
_ESCAPED_BREAK = re.compile(r"\\[\\nrt\"']")
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_VALUE_WINDOW = 8192
_PLACEHOLDER = re.compile(
    r"\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|\$\(.*\)|<[^<>]*>|\{\{.*\}\}|%\([A-Za-z_]+\)s|(?:\[REDACTED\])+"
    r"|\*+|[xX]{3,}|\.\.\.|…|null|None|none|nil|NULL|true|false|True|False|undefined|\?+",
    re.DOTALL,
)


def is_secret_name(name: str, *, eager: bool = False) -> bool:
    """Whether a field or variable called ``name`` holds a secret.

    The name is split at separators and camelCase humps (``AWS_SECRET_ACCESS_KEY``,
    ``clientSecret``, ``db.password``); it names a secret when its last part is a secret
    word (``password``, ``passwd``, ``pwd``, ``secret``, ``token``, ``apikey``,
    ``credential`` ...), or it ends in ``<qualifier> key`` (``api_key``, ``secret_key``,
    ``access_key``, ``private_key`` ...), or ``pass`` after a prefix (``DB_PASS``). A
    name of one word counts when it ends in ``password``, ``passwd``, ``passphrase`` or
    ``passcode`` (``PGPASSWORD``), or is ``pass`` after a well-known prefix (``DBPASS``,
    ``SSHPASS``; ``bypass`` and ``compass`` are words). A count is not a secret
    (``max_token``). ``eager`` adds ``auth`` and ``authorization``.
    """
    return _secret_name(name, eager)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str, eager: bool) -> bool:
    parts = [
        piece.lower() for chunk in _NAME_SPLIT.split(name) for piece in _CAMEL_PARTS.findall(chunk)
    ]
    if not parts:
        return False
    last = parts[-1]
    before = parts[-2] if len(parts) > 1 else ""
    if eager and last in _EAGER_LAST:
        return True
    if last in _SECRET_LAST:
        return before not in _COUNTING
    if last == "key":
        return before in _KEY_QUALIFIERS
    if last == "pass":
        return bool(before)
    if last.endswith(_SECRET_SUFFIXES):
        return True
    return last.endswith("pass") and last[:-4] in _PASS_PREFIXES


def _trimmed_end(text: str, start: int, end: int) -> int:
    """Where a bare value ends once trailing punctuation of the sentence around it is cut.

    ``password=abc.`` ends a sentence; ``(password=abc)`` closes a parenthesis. A closer
    is cut only when the value does not open it (``${DB_PASSWORD}`` keeps its brace).
    """
    while end > start + 1:
        last = text[end - 1]
        opener = _CLOSERS.get(last)
        if opener is not None:
            if text.count(opener, start, end) >= text.count(last, start, end):
                break
        elif last not in _SENTENCE_TAIL:
            break
        end -= 1
    return end


def _value(text: str, start: int, *, query: bool) -> tuple[int, int, bool] | None:
    """The value that starts at ``start``: its span (quotes excluded) and whether quoted."""
    window = min(len(text), start + _VALUE_WINDOW)
    head = text[start : start + 2]
    if head[:1] in _FULLWIDTH_VALUE:
        match = _FULLWIDTH_VALUE[head[:1]].match(text, start, window)
        if match is not None:
            return match.start("v"), match.end("v"), True
        start += 1  # unclosed: what follows the quote is read as an unquoted value
        head = text[start : start + 2]
    quote = head if head in _QUOTED_VALUE else head[:1]
    if quote in _QUOTED_VALUE:
        match = _QUOTED_VALUE[quote].match(text, start, window)
        if match is None:  # an unclosed quote: the rest of the line is the value
            match = _UNCLOSED_VALUE.match(text, start, window)
        if match is None:
            return None
        return match.start("v"), match.end("v"), True
    match = (_QUERY_VALUE if query else _BARE_VALUE).match(text, start, window)
    if match is None:
        return None
    end = match.end()
    # Text quoted inside JSON (a transcript's tool call) ends a line with the two characters
    # "\n" (and JSON inside JSON escapes its quotes as \\\"): an unquoted value stops at
    # such an escape, as it would at the character it stands for.
    escape = _ESCAPED_BREAK.search(text, start, min(len(text), end + 1))
    if escape is not None:
        end = escape.start()
        if end <= start:
            return None
    return start, _trimmed_end(text, start, end), False


def _plausible(value: str, *, eager: bool, quoted: bool, prose_form: bool) -> bool:
    """Whether an assigned ``value`` is a credential and not a placeholder or prose."""
    if len(value) < (1 if eager else 3) or _PLACEHOLDER.fullmatch(value):
        return False
    if prose_form and not quoted:
        # "Token: rotate it" - a plain word after a bare noun is prose, not a credential.
        return not value.isalpha()
    return True


def _assignments(text: str, eager: bool) -> Iterator[Span]:
    covered = 0  # the end of the last value reported: words inside it are not names
    for match in _ASSIGNMENT.finditer(text):
        word = match.start()
        if word < covered:
            continue
        head = text[max(0, word - _NAME_TAIL) : word]
        prefix = head[len(head.rstrip(_NAME_CHARACTERS)) :]
        name = prefix + match["word"]
        if match["space"] is not None and not name.startswith("--"):
            continue  # "the token value" is prose; "--token value" is a flag
        if not is_secret_name(name, eager=eager):
            continue
        before = word - len(prefix) - 1
        found = _value(text, match.end(), query=before >= 0 and text[before] in "?&")
        if found is None:
            continue
        start, end, quoted = found
        prose_form = match["sep"] in (":", "：") and name.lower() in _PROSE_NOUNS
        if _plausible(text[start:end], eager=eager, quoted=quoted, prose_form=prose_form):
            covered = end
            yield Span("assignment", start, end)


def _cjk_labels(text: str, eager: bool) -> Iterator[Span]:
    covered = 0  # the end of the last value reported: a label inside it is read once
    for match in _CJK_LABEL.finditer(text):
        if match.start() < covered:
            continue
        head = text[match.end() : match.end() + 1]
        if not head.isascii() and head not in _FULLWIDTH_QUOTES:
            continue  # "密码：必填" - the value is words, not a credential
        found = _value(text, match.end(), query=False)
        if found is None:
            continue
        start, end, quoted = found
        value = text[start:end]
        # "密码是什么", "令牌是JWT格式": after 是/为 only a value that looks like a key counts.
        if match["sep"] in ("是", "为") and (len(value) < 6 or value.isalpha()):
            continue
        if _plausible(value, eager=eager, quoted=quoted, prose_form=False):
            covered = end
            yield Span("assignment", start, end)


def _private_keys(text: str) -> Iterator[Span]:
    ends: list[tuple[int, int]] | None = None
    covered = 0  # a BEGIN inside the block already reported is part of it: read once
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < covered:
            continue
        if ends is None:  # every END line once, then a binary search per BEGIN: linear
            ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
        index = bisect.bisect_left(ends, (begin.end(), 0))
        if index < len(ends) and ends[index][0] - begin.end() <= _PEM_MAX_BLOCK:
            covered = ends[index][1]
        else:
            limit = min(len(text), begin.end() + _PEM_MAX_BLOCK)
            body = _PEM_BODY.match(text, begin.end(), limit)
            covered = body.end() if body else begin.end()
        yield Span("private-key", begin.start(), covered)


def _rule_spans(rule: _Rule, text: str) -> Iterator[Span]:
    for match in rule.pattern.finditer(text):
        value = match.group(rule.group)
        if rule.kind == "url-password" and _PLACEHOLDER.fullmatch(value):
            continue
        yield Span(rule.kind, match.start(rule.group), match.end(rule.group))


def _scan(text: str, eager: bool) -> Iterator[Span]:
    lowered = text.lower()
    tokens = _EAGER_TOKENS if eager else _STRICT_TOKENS
    for rule in (*tokens, *_COMMON_TOKENS, _URL_PASSWORD):
        if any(needle in lowered for needle in rule.needles):
            yield from _rule_spans(rule, text)
    if "private" in lowered:
        yield from _private_keys(text)
    if any(needle in lowered for needle in _ASSIGNMENT_NEEDLES):
        yield from _assignments(text, eager)
    if any(needle in text for needle in _CJK_NEEDLES):
        yield from _cjk_labels(text, eager)


class _PercentDecoded:
    """``text`` with its percent-escapes decoded (and ``+`` read as a space), and the way
    back from a position in the decoded text to one in ``text``.

    A secret inside a URL's query (``?q=%E5%AF%86%E7%A0%81%3Ahunter2``, a webhook URL passed
    as a parameter, a PEM block in a form post) is found in the decoded text and reported
    where its escapes are in the original.
    """

    def __init__(self, text: str) -> None:
        pieces: list[str] = []
        self.marks: list[int] = []  # where each segment starts in the decoded text
        self.origin: list[tuple[int, int, bool]] = []  # (start, end, is it literal)
        decoded = position = 0
        for run in _PERCENT_RUN.finditer(text):
            for start, end, literal in ((position, run.start(), True), (*run.span(), False)):
                if start == end:
                    continue
                piece = (
                    text[start:end].replace("+", " ")
                    if literal
                    else bytes.fromhex(text[start:end].replace("%", "")).decode("utf-8", "replace")
                )
                self.marks.append(decoded)
                self.origin.append((start, end, literal))
                pieces.append(piece)
                decoded += len(piece)
            position = run.end()
        if position < len(text):
            self.marks.append(decoded)
            self.origin.append((position, len(text), True))
            pieces.append(text[position:].replace("+", " "))
        self.text = "".join(pieces)

    def span(self, span: Span) -> Span:
        first = bisect.bisect_right(self.marks, span.start) - 1
        start, _, literal = self.origin[first]
        if literal:
            start += span.start - self.marks[first]
        last = bisect.bisect_right(self.marks, span.end - 1) - 1
        end_start, end, literal = self.origin[last]
        if literal:
            end = end_start + span.end - self.marks[last]
        return Span(span.kind, start, end)


def _iter_secrets(text: str, eager: bool) -> Iterator[Span]:
    yield from _scan(text, eager)
    if "%" in text and _PERCENT_RUN.search(text):
        view = _PercentDecoded(text)
        for span in _scan(view.text, eager):
            yield view.span(span)


def find_secrets(text: str, *, eager: bool = False) -> list[Span]:
    """Every secret in ``text``, ordered by start (longest first); spans may overlap."""
    return sorted(_iter_secrets(text, eager), key=lambda span: (span.start, -span.end))


def contains_secret(text: str, *, eager: bool = False) -> bool:
    """Whether ``text`` holds any secret :func:`find_secrets` would report."""
    return next(_iter_secrets(text, eager), None) is not None


def redact(text: str, replacement: Callable[[Span], str], *, eager: bool = False) -> str:
    """``text`` with every secret replaced by ``replacement(span)``.

    Overlapping spans merge into one, which keeps the kind of the span that starts first
    (the longer on a tie): ``Bearer <jwt>`` is one ``bearer`` span, replaced once.
    """
    pieces: list[str] = []
    position = 0
    current: Span | None = None
    for span in find_secrets(text, eager=eager):
        if current is not None and span.start < current.end:
            if span.end > current.end:
                current = Span(current.kind, current.start, span.end)
            continue
        if current is not None:
            pieces.extend((text[position : current.start], replacement(current)))
            position = current.end
        current = span
    if current is None:
        return text
    pieces.extend((text[position : current.start], replacement(current), text[current.end :]))
    return "".join(pieces)

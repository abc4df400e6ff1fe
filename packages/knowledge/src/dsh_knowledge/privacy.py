"""The privacy filter in front of every model-facing write: common secret shapes are refused.

An agent may paste a token into a "fact". Content, evidence ``source`` and ``locator`` that
match any of the patterns below are rejected with one fixed message that never includes the
matched text, and nothing is stored. The patterns are the earlier Node tool's
``SECRET_PATTERNS``, so both tools refuse the same inputs. This is a filter for common
shapes (API keys, bearer tokens, JWTs, credential assignments, connection strings with a
password, private keys), not a complete scanner: the trusted repository API does not scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from dsh_knowledge.errors import KnowledgeError

__all__ = [
    "PRIVACY_REJECTION_MESSAGE",
    "SECRET_PATTERNS",
    "PrivacyRejectedError",
    "contains_sensitive_content",
    "ensure_no_secrets",
]

PRIVACY_REJECTION_MESSAGE = "knowledge content rejected by privacy policy"

# re.ASCII: JavaScript's \b is an ASCII word boundary; a token glued to a non-ASCII letter
# ("éghp_…") must still be caught, as it is by the earlier tool.
_FLAGS = re.ASCII
SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----", _FLAGS | re.IGNORECASE),
    re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AKIA[A-Z0-9]{16}"
        r"|ASIA[A-Z0-9]{16}|xox[baprs]-[A-Za-z0-9-]{10,}|sk_(?:live|test)_[A-Za-z0-9]{12,}"
        r"|sk-[A-Za-z0-9_-]{20,}|sk_[A-Za-z0-9_-]{20,}|AIza[A-Za-z0-9_-]{30,}"
        r"|xai-[A-Za-z0-9_-]{20,})\b",
        _FLAGS,
    ),
    re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*", _FLAGS | re.IGNORECASE),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b", _FLAGS),
    re.compile(
        r"\b(?:password|passwd|pwd|api[_-]?key|access[_-]?token|auth[_-]?token"
        r"|client[_-]?secret|private[_-]?key|credential)\s*[:=]\s*[\"']?[^\s\"']{3,}",
        _FLAGS | re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis)://[^\s:@/]+:[^\s@/]+@",
        _FLAGS | re.IGNORECASE,
    ),
)


class PrivacyRejectedError(KnowledgeError, ValueError):
    """Content or evidence looked like a secret; nothing was stored.

    The message is always :data:`PRIVACY_REJECTION_MESSAGE`: it must never carry the value.
    """

    code = "privacy-policy-rejected"

    def __init__(self) -> None:
        super().__init__(PRIVACY_REJECTION_MESSAGE)


def contains_sensitive_content(text: object) -> bool:
    """True when ``text`` is a string matching any secret pattern."""
    if not isinstance(text, str) or not text:
        return False
    return any(pattern.search(text) for pattern in SECRET_PATTERNS)


def ensure_no_secrets(content: object, evidence: Iterable[object] = ()) -> None:
    """Raise :class:`PrivacyRejectedError` when content or any evidence source/locator matches."""
    if contains_sensitive_content(content):
        raise PrivacyRejectedError
    for record in evidence:
        if not isinstance(record, Mapping):
            continue
        if contains_sensitive_content(record.get("source")) or contains_sensitive_content(
            record.get("locator")
        ):
            raise PrivacyRejectedError

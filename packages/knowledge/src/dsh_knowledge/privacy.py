"""The privacy filter in front of every model-facing write: secret shapes are refused.

An agent may paste a token into a "fact". Content, evidence ``source`` and ``locator`` that
hold a secret are rejected with one fixed message that never includes the matched text, and
nothing is stored. What counts as a secret is :mod:`dsh_common.secrets` (the detector
dsh-memory's transcript redaction uses too) at its default sensitivity, the one meant for
refusing: vendor tokens at their real length, bearer tokens, JWTs, private-key blocks, URL
passwords in any scheme and assignments whose name says secret (``DB_PASSWORD=…``, JSON
``"password": "…"``, ``aws_secret_access_key = …``), in English or glued to Chinese text.
It refuses what the earlier Node tool's ``SECRET_PATTERNS`` refused, and more - except an
assigned value that is a placeholder (``password=${DB_PASSWORD}``), not printable ASCII
("password: 请问运维") or only punctuation. This is a filter for common shapes, not a complete
scanner; the trusted repository API does not scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dsh_common.secrets import contains_secret
from dsh_knowledge.errors import KnowledgeError

__all__ = [
    "PRIVACY_REJECTION_MESSAGE",
    "PrivacyRejectedError",
    "contains_sensitive_content",
    "ensure_no_secrets",
]

PRIVACY_REJECTION_MESSAGE = "knowledge content rejected by privacy policy"


class PrivacyRejectedError(KnowledgeError, ValueError):
    """Content or evidence looked like a secret; nothing was stored.

    The message is always :data:`PRIVACY_REJECTION_MESSAGE`: it must never carry the value.
    """

    code = "privacy-policy-rejected"

    def __init__(self) -> None:
        super().__init__(PRIVACY_REJECTION_MESSAGE)


def contains_sensitive_content(text: object) -> bool:
    """True when ``text`` is a string holding a secret."""
    if not isinstance(text, str) or not text:
        return False
    return contains_secret(text)


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

"""The rules-first classifier of automatic extraction: which user statements are knowledge.

Deliberately narrow, deterministic and conservative (it may miss valid knowledge; it should
not invent any). One user message in, at most one candidate ``(type, content)`` out:

1. Only the first sentence is considered and stored (split after ``.``, ``!`` or ``?``).
2. Rejected: a first sentence ending with ``?``; shorter than 12 characters; code (a code
   fence, or a line starting with import/export/class/function/const/let/var); temporary or
   speculative wording (maybe, perhaps, probably, might, could, someday, for now,
   temporarily, for this task, in this task).
3. ``decision`` - starts with "we decided (to)", "our team decided", "the team (has|have)
   decided" or "decision:", and names something durable (the DURABLE_CUE words below).
4. ``lesson`` - a failure signal (failed, blocked, hung, timed out, broke, error…), a fix
   signal (fixed, fixed by, resolved by, the fix was, solved by, adding … fixed, setting …
   resolved) and a causal link (because, caused by, so that, by adding/setting, after
   adding/setting, or ``;``).
5. ``fact`` - a correction ("no,", "actually", "correction:", "that's incorrect", "that's not
   right"; the prefix is dropped) or a durable constraint/statement: a DURABLE_CUE word
   together with a constraint or state verb (must, never, always, should, only, requires,
   uses, runs, is deployed, lives in, is stored).
"""

from __future__ import annotations

import re

__all__ = ["MAX_CANDIDATE_CONTENT_CHARS", "classify_message", "first_sentence"]

MAX_CANDIDATE_CONTENT_CHARS = 600
MIN_STATEMENT_CHARS = 12

_I = re.IGNORECASE
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
DECISION_PREFIX = re.compile(
    r"^(?:(?:we|our team|the team)\s+(?:(?:have|has)\s+)?decided(?:\s+to)?\b|decision\s*:)", _I
)
CORRECTION_PREFIX = re.compile(
    r"^(?:no\b[,.:!]?|actually\b[,:]?|correction\b\s*[:,]?|that'?s incorrect\b[,.:!]?"
    r"|that'?s not right\b[,.:!]?)\s*",
    _I,
)
FAILURE_SIGNAL = re.compile(
    r"\b(?:failed|failure|fails|blocked|blocking|hung|hangs|timed out|broke|broken|error)\b", _I
)
FIX_SIGNAL = re.compile(
    r"\b(?:fixed|fix(?:ed)? by|resolved by|the fix was|solved by|resolved)\b"
    r"|\badding\b.*\bfixed\b|\bsetting\b.*\bresolved\b",
    _I,
)
CAUSAL_SIGNAL = re.compile(
    r"\b(?:because|caused by|so that|by adding|by setting|after adding|after setting)\b|;", _I
)
DURABLE_CUE = re.compile(
    r"\b(?:project|repository|repo|application|app|backend|frontend|api|service"
    r"|authentication|authorization|database|deployment|build|cache|routing|provider|package"
    r"|codebase|supabase|render|postgres(?:ql)?|sqlite|mysql|mongodb|redis|dynamodb"
    r"|typescript|javascript|node(?:\.js)?|python|rust|docker|kubernetes|github|git|react"
    r"|next(?:\.js)?)\b",
    _I,
)
CONSTRAINT_OR_STATE = re.compile(
    r"\b(?:must|never|always|should|only|requires?|uses?|runs?|is deployed|lives in"
    r"|is stored)\b",
    _I,
)
TEMPORARY_OR_SPECULATIVE = re.compile(
    r"\b(?:maybe|perhaps|probably|might|could|someday|for now|temporarily|for this task"
    r"|just for this task|in this task)\b",
    _I,
)
CODE_START = re.compile(r"^\s*(?:import|export|class|function|const|let|var)\b")


def first_sentence(text: str) -> str:
    stripped = " ".join(text.strip().split())
    return _SENTENCE_SPLIT.split(stripped, maxsplit=1)[0] if stripped else ""


def _looks_like_code(text: str) -> bool:
    return "```" in text or any(CODE_START.match(line) for line in text.splitlines())


def classify_message(text: str) -> tuple[str, str] | None:
    """``(type, content)`` for a direct user message, or None when no rule applies."""
    if _looks_like_code(text):
        return None
    sentence = first_sentence(text)
    if (
        len(sentence) < MIN_STATEMENT_CHARS
        or sentence.endswith("?")
        or len(sentence) > MAX_CANDIDATE_CONTENT_CHARS
        or TEMPORARY_OR_SPECULATIVE.search(sentence)
    ):
        return None
    if DECISION_PREFIX.match(sentence):
        return ("decision", sentence) if DURABLE_CUE.search(sentence) else None
    if (
        FAILURE_SIGNAL.search(sentence)
        and FIX_SIGNAL.search(sentence)
        and CAUSAL_SIGNAL.search(sentence)
    ):
        return "lesson", sentence
    correction = CORRECTION_PREFIX.match(sentence)
    if correction and correction.end() > 0:
        rest = sentence[correction.end() :].strip()
        if len(rest) >= MIN_STATEMENT_CHARS and DURABLE_CUE.search(rest):
            return "fact", rest[0].upper() + rest[1:]
        return None
    if DURABLE_CUE.search(sentence) and CONSTRAINT_OR_STATE.search(sentence):
        return "fact", sentence
    return None

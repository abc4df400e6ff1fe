"""What ``dsh-compound check`` tells a commit hook, a CI job and a person.

The JSON result of :func:`dsh_compound.review.check` stays the contract; this module only
reads it: whether it fails a gate (``--fail-on``), one GitHub Actions annotation per lesson
(``--format github``) and a short list for a person (``--format text``).

A gate that could not look at everything fails: under ``--fail-on`` a corpus scan cut at
its bounds, or sources the hashing budget left unhashed, fail the check, and
:func:`incomplete_note` says why.

GitHub reads ``::warning file=PATH::message`` lines from a step's output and shows each on
the named file of the pull request. The path is relative to the repository's top level
(where GitHub checks the repository out), which is the workspace itself unless the
workspace is a sub-folder. Values are escaped as GitHub's own toolkit escapes them, so a
title holding ``::`` or a newline cannot end the annotation early or start another command.
GitHub shows only the first 10 warning annotations of a step and drops the rest without
a word, so the most important come first, the rest are plain lines of the log, and a
``::notice::`` says how many were not annotated.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from dsh_common.cli import default_error_document
from dsh_common.locate import git_top_level
from dsh_compound.evidence import CHANGED, MISSING, UNCHANGED, UNKNOWN
from dsh_compound.scanning import modified_warning

#: ``--fail-on`` values: sources changed or gone, or anything at all under ``needsReview``;
#: ``never`` turns a gate off again (a pre-commit hook's ``args`` come after its ``entry``,
#: and the last ``--fail-on`` wins).
FAIL_ON_CHANGED = "changed"
FAIL_ON_NEEDS_REVIEW = "needs-review"
FAIL_ON_NEVER = "never"
FAIL_ON_CHOICES = (FAIL_ON_CHANGED, FAIL_ON_NEEDS_REVIEW, FAIL_ON_NEVER)

#: Annotations of one kind (warning, error, notice) GitHub shows for a step.
ANNOTATIONS_PER_STEP = 10

_REFRESH_HINT = "re-verify the lesson, then re-capture it (capture --replace) to refresh it"

# Most important first: a source gone, then changed, then not verifiable, then the rest.
_PRIORITY = {MISSING: 0, CHANGED: 1, UNKNOWN: 2}


def _gated(fail_on: str | None) -> bool:
    return fail_on is not None and fail_on != FAIL_ON_NEVER


def incomplete_note(result: dict[str, Any], fail_on: str | None) -> str | None:
    """Why the gate ``fail_on`` fails a check that did not look at everything, or None."""
    if not _gated(fail_on):
        return None
    gaps = []
    if result["truncated"]:
        gaps.append(
            f"the corpus scan stopped at its bounds after {result['scanned']} records, so "
            "the lessons past them were not checked"
        )
    unverified = result.get("unverified")
    if unverified:
        gaps.append(
            f"{unverified['count']} source file(s) were left unhashed by the hashing budget "
            "(status unknown)"
        )
    if not gaps:
        return None
    return (
        f"--fail-on {fail_on}: the check is incomplete ({'; '.join(gaps)}); an incomplete "
        "check fails the gate"
    )


def fails(result: dict[str, Any], fail_on: str | None) -> bool:
    """Whether ``result`` fails the gate ``fail_on`` (never, when it is None or ``never``)."""
    if not _gated(fail_on):
        return False
    if incomplete_note(result, fail_on) is not None:
        return True
    if fail_on == FAIL_ON_NEEDS_REVIEW:
        return bool(result["needsReview"])
    return any(item["evidenceStatus"] in (CHANGED, MISSING) for item in result["needsReview"])


def _files_with(item: dict[str, Any], status: str) -> list[str]:
    return [entry["path"] for entry in item["evidenceFiles"] if entry["status"] == status]


def _reasons(item: dict[str, Any]) -> list[str]:
    """Why one ``needsReview`` entry is there, most important first, in plain words."""
    reasons = []
    for status in (CHANGED, MISSING):
        files = _files_with(item, status)
        if files:
            reasons.append(f"sources {status}: {', '.join(files)}")
    unknown = [
        entry["path"]
        for entry in item["evidenceFiles"]
        if entry["status"] not in (CHANGED, MISSING, UNCHANGED)
    ]
    if unknown:
        reasons.append(f"sources not verifiable: {', '.join(unknown)}")
    if not item["evidenceFiles"]:
        reasons.append("no source files recorded")
    if item["contentStatus"] != "consistent":
        reasons.append("record body edited by hand")
    # Said above already: the evidence line and the hand-edited body.
    evidence_line = f"record {item['id']!r}: evidence "
    said = (modified_warning(item["id"]),)
    other = [w for w in item["warnings"] if not w.startswith(evidence_line) and w not in said]
    if other and not reasons:
        reasons.append(other[0])
    elif other:
        reasons.append(f"{len(other)} warning(s)")
    return reasons


def _summary(result: dict[str, Any]) -> str:
    needing = len(result["needsReview"])
    total = needing + result["unchangedConsistent"]["count"]
    selection = result.get("selection")
    scope = "selected " if selection is not None else ""
    line = f"dsh-compound check: {needing} of {total} {scope}lesson(s) need review"
    if result["truncated"]:
        line += f" (corpus scan truncated after {result['scanned']} records)"
    return line


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation_path(record_path: str, workspace: str | os.PathLike[str]) -> str:
    top = git_top_level(workspace)
    base = str(top) if top is not None else os.path.realpath(workspace)
    relative = os.path.relpath(record_path, base)
    return relative.replace(os.sep, "/")


def _other_warnings(result: dict[str, Any]) -> list[str]:
    """The result's warnings, less those a listed lesson already carries (its hand-edited
    body, its unknown fields): one mention per lesson is enough."""
    carried = {warning for item in result["needsReview"] for warning in item["warnings"]}
    return [warning for warning in result["warnings"] if warning not in carried]


def _by_priority(result: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(result["needsReview"], key=lambda item: _PRIORITY.get(item["evidenceStatus"], 3))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def github_annotations(
    result: dict[str, Any], workspace: str | os.PathLike[str], note: str | None = None
) -> str:
    """Up to 10 ``::warning`` annotations, most important first (``note``, then lessons with
    sources missing, changed, not verifiable, the rest, then scan warnings); what does not
    fit as plain log lines with a ``::notice::`` counting them; then a summary line."""
    entries: list[tuple[str | None, str]] = [(None, note)] if note is not None else []
    for item in _by_priority(result):
        record = _annotation_path(item["path"], workspace)
        message = f"lesson {item['id']!r} ({item['title']}): " + "; ".join(_reasons(item))
        entries.append((record, f"{message} - {_REFRESH_HINT}"))
    entries.extend((None, warning) for warning in _other_warnings(result))
    shown, rest = entries[:ANNOTATIONS_PER_STEP], entries[ANNOTATIONS_PER_STEP:]
    lines = []
    for path, message in shown:
        where = f" file={_escape_property(path)}" if path is not None else ""
        lines.append(f"::warning{where}::{_escape_data(message)}")
    # On one line each, never starting with "::": the log shows them, GitHub reads no command.
    lines.extend(_one_line(f"{path or 'warning'}: {message}") for path, message in rest)
    if rest:
        lines.append(
            f"::notice::{len(rest)} more lesson(s) or warning(s) than GitHub annotates for "
            f"one step ({ANNOTATIONS_PER_STEP}); all are listed in this step's log"
        )
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def github_error_document(code: str, message: str) -> dict[str, Any]:
    """The usual error document, after printing the error as a GitHub ``::error::`` line on
    stdout (where the warnings go), so CI tells a failed check from a failed gate."""
    sys.stdout.write(f"::error title=dsh-compound {code}::{_escape_data(message)}\n")
    sys.stdout.flush()
    return default_error_document(code, message)


def _indented(lines: Iterable[str]) -> list[str]:
    return [f"    {line}" for line in lines]


def text_report(result: dict[str, Any], note: str | None = None) -> str:
    """A person's list: each lesson needing review with its reasons, then the summary."""
    lines = []
    for item in result["needsReview"]:
        lines.append(f"{item['id']}: {' '.join(str(item['title']).split())}")
        lines.extend(_indented(_reasons(item)))
    if result["needsReview"]:
        lines.append(f"To clear a lesson: {_REFRESH_HINT}.")
    warnings = [note] if note is not None else []
    lines.extend(f"warning: {warning}" for warning in [*warnings, *_other_warnings(result)])
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"

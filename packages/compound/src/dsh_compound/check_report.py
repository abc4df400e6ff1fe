"""What ``dsh-compound check`` tells a commit hook, a CI job and a person.

The JSON result of :func:`dsh_compound.review.check` stays the contract; this module only
reads it: whether it fails a gate (``--fail-on``), one GitHub Actions annotation per lesson
(``--format github``) and a short list for a person (``--format text``).

GitHub reads ``::warning file=PATH::message`` lines from a step's output and shows each on
the named file of the pull request. The path is relative to the repository's top level
(where GitHub checks the repository out), which is the workspace itself unless the
workspace is a sub-folder. Values are escaped as GitHub's own toolkit escapes them, so a
title holding ``::`` or a newline cannot end the annotation early or start another command.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from dsh_common.locate import git_top_level
from dsh_compound.evidence import CHANGED, MISSING, UNCHANGED

#: ``--fail-on`` values: sources changed or gone, or anything at all under ``needsReview``.
FAIL_ON_CHANGED = "changed"
FAIL_ON_NEEDS_REVIEW = "needs-review"
FAIL_ON_CHOICES = (FAIL_ON_CHANGED, FAIL_ON_NEEDS_REVIEW)

_REFRESH_HINT = "re-verify the lesson, then re-capture it (capture --replace) to refresh it"


def fails(result: dict[str, Any], fail_on: str | None) -> bool:
    """Whether ``result`` fails the gate ``fail_on`` (never, when it is None)."""
    if fail_on is None:
        return False
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
    evidence_line = f"record {item['id']!r}: evidence "
    other = [w for w in item["warnings"] if not w.startswith(evidence_line)]
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


def github_annotations(result: dict[str, Any], workspace: str | os.PathLike[str]) -> str:
    """One ``::warning`` line per lesson needing review, a line per scan warning, a summary."""
    lines = []
    for item in result["needsReview"]:
        path = _annotation_path(item["path"], workspace)
        message = f"lesson {item['id']!r} ({item['title']}): " + "; ".join(_reasons(item))
        message += f" - {_REFRESH_HINT}"
        lines.append(f"::warning file={_escape_property(path)}::{_escape_data(message)}")
    lines.extend(f"::warning::{_escape_data(warning)}" for warning in result["warnings"])
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def _indented(lines: Iterable[str]) -> list[str]:
    return [f"    {line}" for line in lines]


def text_report(result: dict[str, Any]) -> str:
    """A person's list: each lesson needing review with its reasons, then the summary."""
    lines = []
    for item in result["needsReview"]:
        lines.append(f"{item['id']}: {' '.join(str(item['title']).split())}")
        lines.extend(_indented(_reasons(item)))
    if result["needsReview"]:
        lines.append(f"To clear a lesson: {_REFRESH_HINT}.")
    lines.extend(f"warning: {warning}" for warning in result["warnings"])
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"

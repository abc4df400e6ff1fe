"""What the command line adds around capture and recall: stdin drafts, the draft
template, warnings for discarded draft fields, one query from two spellings, a warning
when the corpus lives in a directory above the workspace, and the progress of a vector
build on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, Any

from dsh_common.cli import one_query
from dsh_common.jsonio import loads
from dsh_compound.draft import DRAFT_FIELDS, VERIFICATION_FIELDS, strip_bom
from dsh_compound.errors import DraftTooLargeError, InvalidDraftError, InvalidLimitError
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS

DRAFT_TEMPLATE: dict[str, Any] = {
    "id": "kebab-case-id",
    "title": "One line: what went wrong",
    "tags": ["area"],
    "problem": "What was observed.",
    "rootCause": "Why it happened.",
    "resolution": "What fixed it.",
    "whenToUse": "When an agent should recall this lesson.",
    "verification": {"command": "the command that showed the fix", "result": "what it printed"},
    "files": ["path/relative/to/the/workspace.py"],
}


def read_draft_stdin(stream: IO[bytes]) -> Any:
    """Parse a draft from ``stream`` (``--input -``) under the same 32 KiB limit as a file."""
    data = stream.read(LIMITS.draft_bytes + 1)
    if len(data) > LIMITS.draft_bytes:
        raise DraftTooLargeError(f"the draft on stdin is larger than {LIMITS.draft_bytes} bytes")
    try:
        text = strip_bom(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidDraftError("the draft on stdin is not UTF-8") from exc
    try:
        return loads(text, what="the draft on stdin")
    except InvalidDraftError:
        raise
    except Exception as exc:
        raise InvalidDraftError(getattr(exc, "message", str(exc))) from exc


def unknown_field_warnings(draft: Any) -> list[str]:
    """One warning naming the draft fields that were discarded, or none."""
    if not isinstance(draft, dict):
        return []
    unknown = [str(key) for key in draft if key not in DRAFT_FIELDS]
    verification = draft.get("verification")
    if isinstance(verification, dict):
        unknown += [f"verification.{k}" for k in verification if k not in VERIFICATION_FIELDS]
    if not unknown:
        return []
    names = ", ".join(repr(name[:64]) for name in unknown[:16])
    more = f" and {len(unknown) - 16} more" if len(unknown) > 16 else ""
    return [f"draft fields not in schema 1 were discarded: {names}{more}"]


def corpus_higher_up_warning(workspace: str, result: dict[str, Any]) -> str | None:
    """A warning when nothing was scanned here but a directory above holds a corpus."""
    from dsh_common.locate import ancestor_with  # noqa: PLC0415 - only on this path

    if result.get("results") or os.path.isdir(os.path.join(workspace, CORPUS_DIRECTORY)):
        return None
    higher = ancestor_with(workspace, CORPUS_DIRECTORY)
    if higher is None:
        return None
    return (
        f"no {CORPUS_DIRECTORY} in the workspace {os.path.realpath(workspace)}, but {higher} "
        f"has one: pass --workspace {higher}"
    )


def stderr_progress(what: str) -> Callable[[int, int], None]:
    """``progress(done, total)`` drawing one updating line on stderr when it is a terminal.

    Nothing is printed to a pipe or a file: whoever reads the JSON on stdout also reads
    stderr for errors, and a progress line is not one.
    """

    def progress(done: int, total: int) -> None:
        stream = sys.stderr
        if not stream.isatty():
            return
        width = 30
        filled = width * done // total if total else width
        stream.write(
            f"\rdsh-compound: {what} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        )
        if done >= total:
            stream.write("\n")
        stream.flush()

    return progress


def recall_result(
    workspace: str, text: str | None, query: str | None, limit: str, ranking: str | None = None
) -> Any:
    """What ``dsh-compound recall`` prints (shared by the parser and the fast path).

    Hybrid ranking from the command line encodes every lesson vector it lacks, with a
    progress bar on a terminal: a person who asked for it can wait once.
    """
    from dsh_compound.retrieval import recall, resolve_ranking, validate_limit  # noqa: PLC0415

    try:
        count = validate_limit(limit)
    except InvalidLimitError as exc:
        # The library (and the MCP tool) call it limit; here it is an option.
        raise InvalidLimitError(f"--{exc.message}") from None
    if ranking is not None:
        ranking = resolve_ranking(ranking, source="--ranking")
    required = "a query is required: dsh-compound recall QUERY (or --query QUERY)"
    result = recall(
        workspace,
        one_query(text, query, required=required),
        count,
        ranking=ranking,
        encode_limit=None,
        progress=stderr_progress("encoding lesson vectors"),
    )
    higher = corpus_higher_up_warning(workspace, result)
    if higher is not None:
        result["warnings"] = [*result.get("warnings", []), higher]
    return result

"""dsh-compound: lessons as fingerprinted Markdown records, with CJK-aware recall.

Records live in the workspace at ``docs/solutions/dsh-compound/<id>.md``. Each holds a
one-line JSON front matter (the source of truth) and a Markdown rendering of it, plus
SHA-256 fingerprints of the source files the lesson is about.

The public functions are imported lazily so ``import dsh_compound`` stays cheap.
"""

from __future__ import annotations

from dsh_common.lazy import lazy_exports
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from dsh_compound.draft import read_draft_input, validate_draft, validate_id
    from dsh_compound.indexing import build_index
    from dsh_compound.record import sha256
    from dsh_compound.retrieval import recall
    from dsh_compound.review import check, inspect
    from dsh_compound.writing import capture

__version__ = "0.1.0"

__all__ = [
    "CORPUS_DIRECTORY",
    "LIMITS",
    "__version__",
    "build_index",
    "capture",
    "check",
    "inspect",
    "read_draft_input",
    "recall",
    "sha256",
    "validate_draft",
    "validate_id",
]

_LAZY = {
    "build_index": "dsh_compound.indexing",
    "capture": "dsh_compound.writing",
    "check": "dsh_compound.review",
    "inspect": "dsh_compound.review",
    "read_draft_input": "dsh_compound.draft",
    "recall": "dsh_compound.retrieval",
    "sha256": "dsh_compound.record",
    "validate_draft": "dsh_compound.draft",
    "validate_id": "dsh_compound.draft",
}

__getattr__ = lazy_exports(__name__, _LAZY)

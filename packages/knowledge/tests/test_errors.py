from __future__ import annotations

import inspect
import re

import dsh_knowledge.errors as errors_module
from dsh_common.errors import DshError
from dsh_knowledge.errors import KnowledgeError

# The codes this package promises (docs/knowledge/reference.md, "Error codes"); a new leaf
# must be added here too.
EXPECTED_CODES = {
    "knowledge-error",
    "not-found",
    "invalid-input",
    "invalid-transition",
    "invalid-supersede",
    "scope-change-forbidden",
    "schema-too-new",
    "storage-error",
    "database-corrupt",
    "migration-failed",
    "database-busy",
    "storage-unavailable",
    "postgres-unavailable",
    "invalid-git-provenance",
    "invalid-health-batch",
    "invalid-health-guidance-input",
}


def _error_classes() -> list[type[KnowledgeError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors_module, inspect.isclass)
        if issubclass(cls, KnowledgeError)
    ]


def test_every_error_is_a_dsh_error_with_a_unique_kebab_case_code() -> None:
    codes = [cls.code for cls in _error_classes()]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", code) for code in codes)
    assert all(issubclass(cls, DshError) for cls in _error_classes())


def test_codes_match_the_documented_table() -> None:
    assert {cls.code for cls in _error_classes()} == EXPECTED_CODES


def test_not_found_is_also_a_lookup_error() -> None:
    assert issubclass(errors_module.NotFoundError, LookupError)
    assert errors_module.NotFoundError("x").to_json() == {"code": "not-found", "message": "x"}

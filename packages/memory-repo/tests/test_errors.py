from __future__ import annotations

import inspect
import re
from pathlib import Path

from dsh_common.errors import DshError
from dsh_memory import errors

#: The contract page that lists every code (the reference the error classes cite).
CONTRACT = Path(__file__).resolve().parents[3] / "docs" / "compatibility" / "memory.md"

SPEC_CODES = {
    "settings-unavailable",
    "settings-invalid-request",
    "settings-write-failed",
    "repo-unavailable",
    "unsafe-layout",
    "checkpoint-failed",
    "clear-failed",
    "commit-failed",
    "operation-in-progress",
    "interrupted-run",
    "migration-invalid-request",
    "rollback-invalid-confirmation",
    "rollback-run-not-found",
    "rollback-not-applicable",
    "rollback-conflict",
    "rollback-failed",
    "search-invalid-request",
    "search-failed",
    "context-invalid-request",
    "usage-invalid",
    "context-failed",
    "preview-invalid-request",
    "preview-not-found",
    "preview-expired",
    "live-memory-changed",
    "preview-apply-failed",
}
#: The earlier tool's codes its host API does not name, and our own additions (all listed in
#: docs/compatibility/memory.md, Error codes).
EXTRA_CODES = {
    "memory-repo-error",
    "migration-failed",
    "usage-busy",
    "runs-invalid-request",
    "init-failed",
    "invalid-path",
    "invalid-metadata",
    "invalid-schema-version",
    "invalid-id",
    "flow-style-metadata",
    "staging-invalid",
    "file-too-large",
    "too-many-files",
    "change-too-large",
    "binary-file",
    "secret-in-content",
    "duplicate-id",
    "sync-failed",
    "sync-unavailable",
    "sync-invalid-request",
    "agent-failed",
    "agent-timeout",
    "zstd-unavailable",
    "preview-exists",
    "edit-invalid-request",
    "edit-not-found",
    "recover-invalid-confirmation",
    "recover-failed",
    "bundle-invalid-request",
    "bundle-failed",
    "finalize-failed",
    "remote-invalid",
    "remote-not-configured",
    "remote-unavailable",
    "unsafe-config",
    "remote-content-refused",
    "push-rejected",
    "push-unjournaled-deletion",
    "remote-failed",
    "semantic-unavailable",
    "vectors-failed",
}

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "memory" / "reference.md"


def _leaves() -> list[type[errors.MemoryRepoError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.MemoryRepoError)
    ]


def test_every_error_is_a_dsh_error_with_kebab_code() -> None:
    for cls in _leaves():
        assert issubclass(cls, DshError)
        assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", cls.code), cls


def test_codes_are_unique() -> None:
    codes = [cls.code for cls in _leaves()]
    assert len(codes) == len(set(codes))


def test_every_spec_code_has_a_class() -> None:
    assert {cls.code for cls in _leaves()} >= SPEC_CODES


def test_no_code_outside_spec_and_documented_extras() -> None:
    assert {cls.code for cls in _leaves()} <= SPEC_CODES | EXTRA_CODES


def test_every_code_is_in_the_contract_table() -> None:
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", CONTRACT.read_text(encoding="utf-8"), re.M))
    assert {cls.code for cls in _leaves()} <= rows
    assert rows >= SPEC_CODES | EXTRA_CODES


def test_migration_errno_code() -> None:
    error = errors.MigrationFailedError.from_os_error(PermissionError(13, "denied"), "m")
    assert error.code == "migration-eacces"


def test_every_code_is_in_the_reference_error_table() -> None:
    """The reference's "Error codes" table (docs/memory/reference.md) names every code a
    class carries."""
    text = REFERENCE.read_text(encoding="utf-8")
    table = text.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([a-z]+(?:-[a-z0-9<>]+)*)`", table))
    missing = {
        cls.code for cls in _leaves() if cls.code not in listed and cls.code != "memory-repo-error"
    }
    assert missing == set(), f"add to the reference's error table: {sorted(missing)}"


def test_every_failed_envelope_is_rendered_by_render_error() -> None:
    # One door: a front end that built the failed envelope by hand (with its own choice of
    # message) has drifted from the others before. Only render_error spells it, and only the
    # service's code-only envelope (its message is last_error_message) is built elsewhere.
    source = Path(errors.__file__).parent
    hand_built = re.compile(r"""["']ok["']\s*:\s*False""")
    found = sorted(
        path.relative_to(source).as_posix()
        for path in source.rglob("*.py")
        if hand_built.search(path.read_text(encoding="utf-8"))
    )
    assert found == ["errors.py", "service.py"]


def test_failed_envelope_prefers_the_message_for_people() -> None:
    envelope = {"ok": False, "error": {"code": "commit-failed"}}
    assert errors.failed_envelope(envelope, "disk full") == errors.render_error(
        "commit-failed", "disk full"
    )
    assert errors.failed_envelope(envelope, None)["error"]["message"] == "commit-failed"
    assert errors.failed_envelope(envelope, "", "tool failed")["error"]["message"] == "tool failed"
    own = {"ok": False, "error": {"code": "x", "message": "its own"}}
    assert errors.failed_envelope(own, None)["error"] == {"code": "x", "message": "its own"}

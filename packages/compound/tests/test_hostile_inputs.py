"""Regression tests for issue #8, points 9, 11 and 12: one hostile input never takes the
corpus down, never slips a newline into a name, and never crashes the error printer.

Each test plants the attack as it was reported - real files, real names that are not
UTF-8, a real unreadable directory - and runs the real command in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_compound import capture, check, inspect, read_draft_input, recall
from dsh_compound.errors import CompoundError
from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import build_metadata, render_record, sha256

STAMP = "2026-01-02T03:04:05.006Z"


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def error(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    document = json.loads(result.stderr)
    assert set(document) == {"error"}
    return dict(document["error"])


def run(*args: str | bytes, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "dsh_compound.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def without_permission_bypass() -> tuple[str, ...]:
    """A command prefix under which file permissions bind, even for root.

    Root ignores ``chmod 000`` through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. Dropping
    both from the bounding and inheritable sets (setpriv, util-linux) makes the child an
    ordinary owner: it still owns every file in tmp_path, but mode 000 now stops it.
    """
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: chmod cannot bind")
    caps = "-dac_override,-dac_read_search"
    prefix = (setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", "--")
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"root cannot drop its permission bypass here: {probe.stderr.strip()}")
    return prefix


def plant_record(root: Path, record_id: str, files: list[tuple[str, str]], **fields: Any) -> Path:
    """Write a consistent record naming ``files`` as ``(path, sha256)`` pairs."""
    draft: dict[str, Any] = {
        "id": record_id,
        "title": f"Lesson {record_id}",
        "tags": ["login"],
        "problem": "Login times out.",
        "rootCause": "Pool exhausted.",
        "resolution": "Raise the pool size.",
        "whenToUse": "When login times out.",
        "verification": {"command": "make test", "result": "passed"},
        "files": [path for path, _ in files],
        **fields,
    }
    metadata = build_metadata(
        draft, [digest for _, digest in files], created_at=STAMP, updated_at=STAMP
    )
    corpus = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    corpus.mkdir(parents=True, exist_ok=True)
    location = corpus / f"{record_id}.md"
    location.write_bytes(render_record(metadata))
    return location


def source(root: Path, relative: str, text: str = "x = 1\n") -> tuple[str, str]:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return relative, sha256(path.read_bytes())


# --- point 9: one bad evidence path or corpus name -----------------------------------


@pytest.fixture
def locked_directory(workspace: Path) -> Iterator[Path]:
    """``src/secret/`` holding a recorded source, then ``chmod 000``."""
    secret = workspace / "src" / "secret"
    secret.mkdir()
    yield secret
    secret.chmod(0o755)


def test_evidence_in_an_unreadable_directory_is_unknown_for_that_record_only(
    workspace: Path, locked_directory: Path
) -> None:
    hidden = source(workspace, "src/secret/key.js")
    plain = source(workspace, "src/login.js", "export const timeoutMs = 30000;\n")
    plant_record(workspace, "hidden-source", [hidden, plain])
    plant_record(workspace, "plain-source", [plain])
    locked_directory.chmod(0o000)
    prefix = without_permission_bypass()
    ws = str(workspace)

    checked = ok(run("check", "--workspace", ws, prefix=prefix))
    assert checked["unchangedConsistent"]["ids"] == ["plain-source"]
    (review,) = checked["needsReview"]
    assert review["id"] == "hidden-source"
    assert review["evidenceStatus"] == "unknown"
    assert review["evidenceFiles"][0] == {
        "path": "src/secret/key.js",
        "status": "unknown",
        "reason": "cannot be read safely: Permission denied",
    }
    assert review["evidenceFiles"][1] == {"path": "src/login.js", "status": "unchanged"}

    recalled = ok(run("recall", "--workspace", ws, "--query", "login", prefix=prefix))
    statuses = {item["id"]: item["evidenceStatus"] for item in recalled["results"]}
    assert statuses == {"hidden-source": "unknown", "plain-source": "unchanged"}

    inspected = ok(run("inspect", "--workspace", ws, "--id", "hidden-source", prefix=prefix))
    assert inspected["evidenceStatus"] == "unknown"
    assert inspected["changedFiles"] == ["src/secret/key.js"]


def test_capture_of_a_source_in_an_unreadable_directory_is_invalid_path(
    workspace: Path, locked_directory: Path, write_json: Any, make_draft: Any
) -> None:
    source(workspace, "src/secret/key.js")
    draft_path = write_json(workspace / "draft.json", make_draft(files=["src/secret/key.js"]))
    locked_directory.chmod(0o000)
    prefix = without_permission_bypass()
    result = run(
        "capture", "--workspace", str(workspace), "--input", str(draft_path), prefix=prefix
    )
    failure = error(result)
    assert failure["code"] == "invalid-path"
    assert "Permission denied" in failure["message"]
    assert not (workspace / "docs").exists()


def test_evidence_path_with_a_component_over_255_bytes_is_unknown(workspace: Path) -> None:
    long_path = "src/" + "a" * 300 + ".js"
    plain = source(workspace, "src/login.js")
    plant_record(workspace, "long-name", [(long_path, "0" * 64), plain])
    plant_record(workspace, "plain-source", [plain])
    ws = str(workspace)

    checked = ok(run("check", "--workspace", ws))
    assert checked["unchangedConsistent"]["ids"] == ["plain-source"]
    (review,) = checked["needsReview"]
    assert review["evidenceFiles"][0] == {
        "path": long_path,
        "status": "unknown",
        "reason": "cannot be read safely: File name too long",
    }
    recalled = ok(run("recall", "--workspace", ws, "--query", "login"))
    assert {item["id"] for item in recalled["results"]} == {"long-name", "plain-source"}
    inspected = ok(run("inspect", "--workspace", ws, "--id", "long-name"))
    assert inspected["evidenceStatus"] == "unknown"


def test_capture_of_a_source_with_a_component_over_255_bytes_is_invalid_path(
    workspace: Path, make_draft: Any
) -> None:
    with pytest.raises(CompoundError) as caught:
        capture(workspace, make_draft(files=["src/" + "b" * 300]))
    assert caught.value.code == "invalid-path"
    assert "File name too long" in caught.value.message
    assert not (workspace / "docs").exists()


def test_corpus_file_whose_name_is_not_utf8_is_skipped_with_a_warning(workspace: Path) -> None:
    plain = source(workspace, "src/login.js")
    record = plant_record(workspace, "plain-source", [plain])
    corpus = os.fsencode(record.parent)
    for raw in (b"caf\xe9.md", b"\xff\xfe.md"):
        with open(corpus + b"/" + raw, "wb") as handle:
            handle.write(record.read_bytes())
    ws = str(workspace)
    expected = [
        "skipped caf\\xe9.md: the name is not UTF-8",
        "skipped \\xff\\xfe.md: the name is not UTF-8",
    ]

    checked = ok(run("check", "--workspace", ws))
    assert checked["unchangedConsistent"]["ids"] == ["plain-source"]
    assert checked["warnings"] == expected
    assert checked["scanned"] == 3
    recalled = ok(run("recall", "--workspace", ws, "--query", "login"))
    assert [item["id"] for item in recalled["results"]] == ["plain-source"]
    assert recalled["warnings"] == expected
    assert ok(run("inspect", "--workspace", ws, "--id", "plain-source"))["id"] == "plain-source"
    # The library result is plain JSON-safe text too (tool servers serialise it as is).
    json.dumps(recall(workspace, "login"), ensure_ascii=False).encode("utf-8")


# --- point 11: a trailing newline must not pass a full-match rule ----------------------


def test_capture_refuses_an_id_with_a_trailing_newline(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft(id="evil\n"))
    result = run("capture", "--workspace", str(workspace), "--input", str(draft_path))
    assert error(result)["code"] == "invalid-id"
    assert not (workspace / "docs").exists()


def test_inspect_refuses_an_id_with_a_trailing_newline(workspace: Path) -> None:
    result = run("inspect", "--workspace", str(workspace), "--id", "evil\n")
    assert error(result)["code"] == "invalid-id"


def test_replace_refuses_a_digest_with_a_trailing_newline(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft())
    args = ["capture", "--workspace", str(workspace), "--input", str(draft_path)]
    digest = ok(run(*args))["digest"]
    assert error(run(*args, "--replace", digest + "\n"))["code"] == "invalid-digest"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", STAMP + "\n"),
        ("updatedAt", STAMP + "\n"),
        ("createdAt", "２０２６-01-02T03:04:05.006Z"),  # fullwidth digits are not ISO 8601
        ("sha256", "0" * 64 + "\n"),
    ],
)
def test_record_with_a_trailing_newline_in_a_stamp_or_digest_is_malformed(
    workspace: Path, field: str, value: str
) -> None:
    plain = source(workspace, "src/login.js")
    location = plant_record(workspace, "stamped", [plain])
    text = location.read_text()
    if field == "sha256":
        text = text.replace(json.dumps(plain[1]), json.dumps(value), 1)
    else:
        text = text.replace(f'"{field}":"{STAMP}"', f'"{field}":{json.dumps(value)}', 1)
    location.write_text(text)
    checked = check(workspace)
    assert checked["scanned"] == 1
    assert checked["unchangedConsistent"]["count"] == 0
    assert checked["needsReview"] == []
    assert checked["warnings"][0].startswith("skipped stamped.md: malformed record")
    with pytest.raises(CompoundError) as caught:
        inspect(workspace, "stamped")
    assert caught.value.code == "malformed-record"


# --- point 12: arguments and paths that are not UTF-8 -----------------------------------


def test_non_utf8_workspace_argument_is_invalid_arguments_and_escaped(tmp_path: Path) -> None:
    target = os.fsencode(tmp_path) + b"/\xffnope"
    result = run("capture", "--workspace", target, "--input", "x")
    failure = error(result)
    assert failure == {
        "code": "invalid-arguments",
        "message": f"the value of --workspace is not valid UTF-8: '{tmp_path}/\\xffnope'",
    }
    assert not os.path.lexists(target)


@pytest.mark.parametrize("command", ["recall", "inspect", "check"])
def test_every_command_refuses_non_utf8_arguments(workspace: Path, command: str) -> None:
    extra = {"recall": ["--query", b"caf\xe9"], "inspect": ["--id", b"\xff"], "check": []}
    bad_workspace = os.fsencode(workspace) + b"\xff"
    arguments: list[str | bytes] = ["--workspace", str(workspace), *extra[command]]
    if command == "check":
        arguments[1] = bad_workspace
    assert error(run(command, *arguments))["code"] == "invalid-arguments"


def test_non_utf8_workspace_in_the_library_is_invalid_path(tmp_path: Path, draft: Any) -> None:
    raw = os.fsencode(tmp_path) + b"/ws\xff"
    os.mkdir(raw)  # it really exists: the refusal is about the name, not a missing folder
    workspace = os.fsdecode(raw)
    for call in (
        lambda: capture(workspace, draft),
        lambda: recall(workspace, "login"),
        lambda: inspect(workspace, "login-timeout"),
        lambda: check(workspace),
        lambda: read_draft_input(workspace, workspace + "/draft.json"),
    ):
        with pytest.raises(CompoundError) as caught:
            call()
        assert caught.value.code == "invalid-path"
        assert caught.value.message == (
            f"the workspace path is not valid UTF-8: '{tmp_path}/ws\\xff'"
        )
    assert os.listdir(raw) == []


def test_non_utf8_draft_input_path_is_invalid_path(workspace: Path) -> None:
    with pytest.raises(CompoundError) as caught:
        read_draft_input(workspace, os.fsdecode(os.fsencode(workspace) + b"/d\xff.json"))
    assert caught.value.code == "invalid-path"
    assert "d\\xff.json" in caught.value.message


def test_non_utf8_source_path_in_a_draft_is_invalid_path(workspace: Path, make_draft: Any) -> None:
    raw = os.fsencode(workspace) + b"/src/caf\xe9.js"
    with open(raw, "wb") as handle:
        handle.write(b"x")
    with pytest.raises(CompoundError) as caught:
        capture(workspace, make_draft(files=[os.fsdecode(b"src/caf\xe9.js")]))
    assert caught.value.code == "invalid-path"
    assert "caf\\xe9.js" in caught.value.message
    assert not (workspace / "docs").exists()


def test_non_utf8_draft_text_is_invalid_draft(workspace: Path, make_draft: Any) -> None:
    bad = os.fsdecode(b"caf\xe9")
    for overrides in ({"title": bad}, {"tags": [bad]}, {"verification": {"command": bad}}):
        with pytest.raises(CompoundError) as caught:
            capture(workspace, make_draft(**overrides))
        assert caught.value.code == "invalid-draft"
        assert "not valid UTF-8" in caught.value.message
    assert not (workspace / "docs").exists()


def test_non_utf8_query_in_the_library_is_invalid_query(workspace: Path) -> None:
    with pytest.raises(CompoundError) as caught:
        recall(workspace, os.fsdecode(b"caf\xe9"))
    assert caught.value.code == "invalid-query"


# --- point 19: fields nobody captured are shown, not silently trusted --------------------


def forge(location: Path, old: str, new: str) -> None:
    """Edit the JSON front matter by hand, as an attacker with write access would."""
    text = location.read_text(encoding="utf-8")
    assert old in text
    location.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_forged_verification_attestation_is_reported_on_every_read(workspace: Path) -> None:
    plain = source(workspace, "src/login.js")
    location = plant_record(workspace, "forged", [plain])
    plant_record(workspace, "honest", [plain])
    forge(location, '"executedByHelper":false}', '"executedByHelper":false,"helperVerified":true}')
    ws = str(workspace)
    warning = (
        "record 'forged': metadata holds fields this helper never writes "
        "('verification.helperVerified'); they were added by hand, are not evidence and "
        "prove nothing - ignore them, or re-capture with --replace to drop them"
    )

    inspected = ok(run("inspect", "--workspace", ws, "--id", "forged"))
    assert inspected["metadata"]["verification"]["helperVerified"] is True
    # consistent: the body is the rendering (docs/compatibility/compound.md)
    assert inspected["contentStatus"] == "consistent"
    assert inspected["warnings"] == [warning]
    assert "helperVerified" not in inspected["evidence"]  # never part of the evidence

    recalled = ok(run("recall", "--workspace", ws, "--query", "login"))
    results = {item["id"]: item for item in recalled["results"]}
    assert results["forged"]["contentStatus"] == "consistent"
    assert results["forged"]["warnings"] == [warning]
    assert results["honest"]["warnings"] == []
    assert recalled["warnings"] == [warning]

    checked = ok(run("check", "--workspace", ws))
    assert checked["unchangedConsistent"] == {"count": 1, "ids": ["honest"]}
    (review,) = checked["needsReview"]
    assert (review["id"], review["evidenceStatus"]) == ("forged", "unchanged")
    assert review["warnings"] == [warning]
    assert checked["warnings"] == [warning]
    assert checked["counts"]["contentStatus"] == {"consistent": 2, "modified": 0}


def test_unknown_keys_at_every_level_are_named(workspace: Path) -> None:
    plain = source(workspace, "src/login.js")
    location = plant_record(workspace, "forged", [plain])
    forge(location, '{"schemaVersion":1,', '{"schemaVersion":1,"reviewedBy":"security team",')
    forge(location, '"path":"src/login.js",', '"path":"src/login.js","signed":true,')
    (warning,) = inspect(workspace, "forged")["warnings"]
    assert "('reviewedBy', 'files[0].signed')" in warning


def test_replace_drops_the_forged_fields(workspace: Path) -> None:
    plain = source(workspace, "src/login.js")
    location = plant_record(workspace, "forged", [plain])
    forge(location, '"executedByHelper":false}', '"executedByHelper":false,"helperVerified":true}')
    inspected = inspect(workspace, "forged")
    metadata = inspected["metadata"]
    draft = {
        key: metadata[key]
        for key in ("id", "title", "tags", "problem", "rootCause", "resolution", "whenToUse")
    }
    draft["verification"] = {key: metadata["verification"][key] for key in ("command", "result")}
    draft["files"] = [entry["path"] for entry in metadata["files"]]
    capture(workspace, draft, replace=inspected["digest"])
    again = inspect(workspace, "forged")
    assert "helperVerified" not in again["metadata"]["verification"]
    assert again["warnings"] == []


def test_workspace_whose_canonical_path_is_not_utf8_is_invalid_path(
    tmp_path: Path, draft: Any
) -> None:
    real = os.fsencode(tmp_path) + b"/real\xff"
    os.mkdir(real)
    os.symlink(real, tmp_path / "alias")  # a symlinked ancestor is allowed, its target not
    (tmp_path / "alias" / "ws").mkdir()
    with pytest.raises(CompoundError) as caught:
        check(tmp_path / "alias" / "ws")
    assert caught.value.code == "invalid-path"
    assert "real\\xff/ws" in caught.value.message

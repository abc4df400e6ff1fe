"""One bad evidence path or corpus file affects its own record only, through every read.

A source in a directory nobody may read, a path component over 255 bytes, a corpus file
whose name is not UTF-8: each record naming one is reported (evidence ``unknown`` with the
reason, or a warning naming the skipped file), and every other record reads as usual.
Capture refuses such a source as ``invalid-path``. The files and names are real; the
permission tests run the console script with root's permission bypass dropped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process
from dsh_test_support.commands import error, ok

from dsh_compound import capture, recall
from dsh_compound.errors import CompoundError

from .conftest import plant_record, source

run = in_process.runner("dsh-compound")
run_script = commands.runner("dsh-compound")  # the console script, as a process


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

    checked = ok(run_script("check", "--workspace", ws, prefix=prefix))
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

    recalled = ok(run_script("recall", "--workspace", ws, "--query", "login", prefix=prefix))
    statuses = {item["id"]: item["evidenceStatus"] for item in recalled["results"]}
    assert statuses == {"hidden-source": "unknown", "plain-source": "unchanged"}

    inspected = ok(run_script("inspect", "--workspace", ws, "--id", "hidden-source", prefix=prefix))
    assert inspected["evidenceStatus"] == "unknown"
    assert inspected["changedFiles"] == ["src/secret/key.js"]


def test_capture_of_a_source_in_an_unreadable_directory_is_invalid_path(
    workspace: Path, locked_directory: Path, write_json: Any, make_draft: Any
) -> None:
    source(workspace, "src/secret/key.js")
    draft_path = write_json(workspace / "draft.json", make_draft(files=["src/secret/key.js"]))
    locked_directory.chmod(0o000)
    prefix = without_permission_bypass()
    result = run_script(
        "capture",
        "--workspace",
        str(workspace),
        "--input",
        str(draft_path),
        prefix=prefix,
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

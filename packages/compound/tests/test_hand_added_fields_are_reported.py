"""Fields nobody captured are shown, not silently trusted: a field added to a record's
front matter by hand is named in a warning on every read (inspect, recall, check), is
never part of the evidence, and a re-capture drops it."""

from __future__ import annotations

from pathlib import Path

from dsh_test_support import in_process
from dsh_test_support.commands import ok

from dsh_compound import capture, inspect

from .conftest import plant_record, source

run = in_process.runner("dsh-compound")


def forge(location: Path, old: str, new: str) -> None:
    """Edit the JSON front matter by hand, as anyone with write access to the corpus can."""
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

"""Concurrent captures with real processes: exclusive create and compare-and-swap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dsh_compound import capture, sha256
from dsh_compound.record import parse_record

PROCESSES = 8

# Each worker waits at a start line (a file appearing) so all eight race for the same
# moment, then runs the real library call and prints the outcome as JSON.
WORKER = r"""
import json, os, sys, time
from dsh_compound import capture
from dsh_common.errors import DshError
workspace, draft_path, replace, start = sys.argv[1:5]
draft = json.load(open(draft_path, encoding="utf-8"))
while not os.path.exists(start):
    time.sleep(0.001)
try:
    result = capture(workspace, draft, replace=replace or None)
    print(json.dumps({"ok": True, "digest": result["digest"]}))
except DshError as exc:
    print(json.dumps({"ok": False, "code": exc.code}))
"""


def race(workspace: Path, tmp_path: Path, drafts: list[dict[str, Any]], replace: str) -> list[Any]:
    start = tmp_path / "start"
    processes = []
    for index, draft in enumerate(drafts):
        draft_path = tmp_path / f"draft-{index}.json"
        draft_path.write_text(json.dumps(draft))
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WORKER,
                    str(workspace),
                    str(draft_path),
                    replace,
                    str(start),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    start.touch()
    outcomes = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert err == ""
        outcomes.append(json.loads(out))
    return outcomes


def test_eight_processes_capturing_one_new_id_create_exactly_one(
    workspace: Path, tmp_path: Path, make_draft: Any, corpus_of: Any
) -> None:
    drafts = [make_draft(title=f"Writer {index}") for index in range(PROCESSES)]
    outcomes = race(workspace, tmp_path, drafts, "")
    winners = [o for o in outcomes if o["ok"]]
    assert len(winners) == 1
    assert {o["code"] for o in outcomes if not o["ok"]} <= {"lock-held", "record-exists"}
    assert os.listdir(corpus_of(workspace)) == ["login-timeout.md"]
    data = (corpus_of(workspace) / "login-timeout.md").read_bytes()
    assert sha256(data) == winners[0]["digest"]
    assert parse_record(data).content_status == "consistent"


def test_eight_processes_replacing_with_one_digest_replace_exactly_once(
    workspace: Path, tmp_path: Path, make_draft: Any, corpus_of: Any
) -> None:
    original = capture(workspace, make_draft())
    drafts = [make_draft(title=f"Replacement {index}") for index in range(PROCESSES)]
    outcomes = race(workspace, tmp_path, drafts, original["digest"])
    winners = [o for o in outcomes if o["ok"]]
    assert len(winners) == 1
    assert {o["code"] for o in outcomes if not o["ok"]} <= {"lock-held", "digest-mismatch"}
    assert os.listdir(corpus_of(workspace)) == ["login-timeout.md"]
    data = (corpus_of(workspace) / "login-timeout.md").read_bytes()
    assert sha256(data) == winners[0]["digest"]
    parsed = parse_record(data)
    assert parsed.content_status == "consistent"
    assert parsed.metadata["title"].startswith("Replacement ")
    assert parsed.metadata["createdAt"] == original["metadata"]["createdAt"]

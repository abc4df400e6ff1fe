"""The merge rules of a pull, each proven by two real machines and a bare remote on disk.

Machine A and machine B start from one shared history, change their memories apart, A
pushes, B pulls: the assertions are about what B's memory then holds, and that nothing
either side wrote is lost, overwritten in silence or left with a conflict marker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support.gitcmd import git

from dsh_memory.remote.remote_merge import merge_commits, sibling_path, with_id_suffix
from dsh_memory.store.root import inspect_layout
from dsh_memory.write.transactions import GitTransactions

from .conftest import RECORD, Machine

MARKERS = ("<<<<<<<", ">>>>>>>", "=======\n")


@pytest.fixture
def pair(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    """A and B sharing one history: A's first records, pushed and pulled by B."""
    a, b = machines("a"), machines("b")
    a.record("handbook/shared.md", "project/shared", "Shared line one.\nShared line two.")
    a.record("handbook/other.md", "project/other", "Other record.")
    a.push()
    b.pull()
    assert b.files() == a.files()
    return a, b


def no_markers(machine: Machine) -> None:
    for path, text in machine.files().items():
        assert not any(marker in text for marker in MARKERS), path


def ids(machine: Machine) -> list[str]:
    found = []
    for path, text in machine.files().items():
        if path != "summary.md" and text.startswith("---\n"):
            found += [
                ln[4:].strip() for ln in text.split("---\n")[1].splitlines() if ln.startswith("id:")
            ]
    return found


def exchange(a: Machine, b: Machine) -> Any:
    """A pushes, B pulls: B's pull result."""
    a.push()
    return b.pull()


def test_records_added_on_both_sides_are_both_kept(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    a.record("handbook/from-a.md", "project/from-a", "A's fact.")
    b.record("handbook/from-b.md", "project/from-b", "B's fact.")
    result = exchange(a, b)
    assert result["status"] == "merged" and result["conflicts"] == []
    files = b.files()
    assert "A's fact." in files["handbook/from-a.md"]
    assert "B's fact." in files["handbook/from-b.md"]
    assert b.committed() == files


def test_a_record_changed_on_one_side_takes_that_change(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    a.record("handbook/shared.md", "project/shared", "Shared line one.\nA rewrote line two.")
    b.record("handbook/from-b.md", "project/from-b", "B's fact.")
    exchange(a, b)
    assert "A rewrote line two." in b.files()["handbook/shared.md"]


def test_both_sides_changing_different_lines_merge_cleanly(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    base = "---\nschema_version: 1\nid: project/long\ntype: fact\n---\n" + "".join(
        f"line {n}\n" for n in range(10)
    )
    a.write("handbook/long.md", base)
    exchange(a, b)
    a.write("handbook/long.md", base.replace("line 1\n", "line 1 by A\n"))
    b.write("handbook/long.md", base.replace("line 8\n", "line 8 by B\n"))
    result = exchange(a, b)
    assert result["status"] == "merged", result
    text = b.files()["handbook/long.md"]
    assert "line 1 by A" in text and "line 8 by B" in text
    no_markers(b)


def test_both_sides_changing_one_line_keep_ours_and_theirs_beside_it(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    a.record("handbook/shared.md", "project/shared", "Shared line one.\nA's version.")
    b.record("handbook/shared.md", "project/shared", "Shared line one.\nB's version.")
    result = exchange(a, b)
    assert result["status"] == "merged-with-conflicts"
    (conflict,) = result["conflicts"]
    tag = git(a.root, "rev-parse", "HEAD").strip()[:8]
    assert conflict == {
        "path": "handbook/shared.md",
        "keptAs": f"handbook/shared.conflict-{tag}.md",
    }
    files = b.files()
    assert "B's version." in files["handbook/shared.md"]
    assert "A's version." in files[conflict["keptAs"]]
    assert f"id: project/shared-conflict-{tag}\n" in files[conflict["keptAs"]]
    assert sorted(ids(b)) == sorted(set(ids(b))), "ids stay unique"
    no_markers(b)
    # The run lists it: in the journal record and among the changed paths.
    record = next(r for r in b.runs() if r["run_id"] == result["runId"])
    assert record["operation"] == "pull" and record["conflicts"] == [conflict]
    assert conflict["keptAs"] in record["changed_paths"]
    # The search index and every reader see both as valid records.
    status = b.ok(b.service.status())
    assert status["invalidMetadataCount"] == 0


def test_one_path_added_on_both_sides_keeps_ours_there_and_theirs_beside_it(
    pair: tuple[Machine, Machine],
) -> None:
    """Both agents wrote a new record at the same path (same topic, same id): no common
    ancestor to merge from, so git's add/add; an identical addition is one record."""
    a, b = pair
    a.record("handbook/release.md", "project/release", "A: release on Fridays.")
    a.record("handbook/same.md", "project/same", "Written alike on both.")
    b.record("handbook/release.md", "project/release", "B: release on Mondays.")
    b.record("handbook/same.md", "project/same", "Written alike on both.")
    result = exchange(a, b)
    assert result["status"] == "merged-with-conflicts"
    (conflict,) = result["conflicts"]
    assert conflict["path"] == "handbook/release.md"
    files = b.files()
    assert files["handbook/release.md"].endswith("B: release on Mondays.\n")
    assert files[conflict["keptAs"]].endswith("A: release on Fridays.\n")
    assert "id: project/release-conflict-" in files[conflict["keptAs"]]
    assert files["handbook/same.md"].endswith("Written alike on both.\n")
    assert not any(".conflict-" in p and "same" in p for p in files)
    assert sorted(ids(b)) == sorted(set(ids(b))), "ids stay unique"
    no_markers(b)
    assert b.committed() == files
    b.push()
    a.pull()
    assert a.files() == files


def test_changed_on_one_side_deleted_on_the_other_keeps_the_change(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    a.record("handbook/shared.md", "project/shared", "A improved it.")
    b.remove("handbook/shared.md")
    b.remove("handbook/other.md")
    a.remove("handbook/other.md")  # deleted on both: stays deleted
    exchange(a, b)
    assert "A improved it." in b.files()["handbook/shared.md"]
    assert "handbook/other.md" not in b.files()
    # And the other way round: ours changed, theirs deleted.
    b.record("handbook/shared.md", "project/shared", "B improved it again.")
    a.pull()
    a.remove("handbook/shared.md")
    b.push()
    assert a.error(a.service.push()) == "push-rejected"  # B pushed first: pull, then push
    a.pull()
    assert "B improved it again." in a.files()["handbook/shared.md"]


def test_summary_changed_on_both_sides_keeps_theirs_in_the_archive(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    a.write("summary.md", "# Memory\n\n- A's summary\n")
    b.write("summary.md", "# Memory\n\n- B's summary\n")
    result = exchange(a, b)
    (conflict,) = result["conflicts"]
    assert conflict["path"] == "summary.md"
    assert conflict["keptAs"].startswith("archive/summary.conflict-")
    assert b.files()["summary.md"] == "# Memory\n\n- B's summary\n"
    assert b.files()[conflict["keptAs"]] == "# Memory\n\n- A's summary\n"


def test_two_records_added_with_one_id_are_told_apart(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    a.record("handbook/uv-a.md", "project/uv", "A: use uv.")
    b.record("handbook/uv-b.md", "project/uv", "B: use uv too.")
    exchange(a, b)
    files = b.files()
    assert "id: project/uv\n" in files["handbook/uv-b.md"], "ours keeps its id"
    assert "id: project/uv-conflict-" in files["handbook/uv-a.md"]
    assert "A: use uv." in files["handbook/uv-a.md"]
    assert len(ids(b)) == len(set(ids(b)))


def test_a_similar_new_record_never_receives_another_records_edit(
    pair: tuple[Machine, Machine],
) -> None:
    """Git's rename detection pairs a deleted record with a similar added one (front matter
    makes short records similar); a path-by-path merge must not carry A's edit of
    ``old.md`` into B's unrelated new ``new.md``."""
    a, b = pair
    head = "---\nschema_version: 1\nid: project/{}\ntype: fact\ntags:\n  - a\n  - b\n---\n"
    body = "".join(f"shared boilerplate line {n}\n" for n in range(12))
    a.write("handbook/old.md", head.format("old") + body + "old detail\n")
    exchange(a, b)
    b.remove("handbook/old.md")
    b.write("handbook/new.md", head.format("new") + body + "new detail\n")
    a.write(
        "handbook/old.md",
        head.format("old") + body.replace("line 3", "line 3 (A)") + "old detail\n",
    )
    exchange(a, b)
    files = b.files()
    assert "line 3 (A)" not in files["handbook/new.md"], "an unrelated record was edited"
    assert "line 3 (A)" in files["handbook/old.md"], "A's change is kept at its own path"


def test_the_watermark_and_the_readme_stay_ours(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    ours = (b.root / ".last-sync").read_bytes()
    (a.root / ".last-sync").write_text("4102444800.000000000\n")
    git(a.root, "commit", "-qam", "a watermark of A's")
    a.record("handbook/from-a.md", "project/from-a", "A.")
    b.record("handbook/from-b.md", "project/from-b", "B.")
    exchange(a, b)
    assert (b.root / ".last-sync").read_bytes() == ours
    assert git(b.root, "show", "HEAD:.last-sync").encode() == ours
    # A fast-forward brings A's committed watermark into history, never into B's file.
    a.pull()
    a.record("handbook/again.md", "project/again", "Again.")
    exchange(a, b)
    assert (b.root / ".last-sync").read_bytes() == ours


def test_the_journal_is_the_union_of_both_sides(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    a_run = a.record("handbook/from-a.md", "project/from-a", "A.")["runId"]
    b_run = b.record("handbook/from-b.md", "project/from-b", "B.")["runId"]
    pulled = exchange(a, b)["runId"]
    listed = {r["run_id"] for r in b.runs()}
    assert {a_run, b_run, pulled} <= listed
    last = json.loads((b.root / ".sync" / "last-run.json").read_text())
    assert last["run_id"] == pulled, "last-run.json is recomputed, not merged"


def test_one_run_id_on_both_machines_keeps_both_records(machines: Callable[..., Machine]) -> None:
    a, b = machines("a"), machines("b")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b.pull()
    # Two machines whose processes had the same pid in the same second: one id, two runs.
    clash = "20261201T000000Z-edit-4242"
    for machine, body in ((a, "A"), (b, "B")):
        # The same second, operation and start: only the apply commits tell the runs apart.
        record = {
            "schema_version": 1,
            "run_id": clash,
            "operation": "edit",
            "status": "applied",
            "started_at": "2026-12-01T00:00:00Z",
            "apply_commit": machine.head(),
            "finished_at": f"2026-12-01T00:00:0{3 if body == 'A' else 2}Z",
            "changed_paths": [body],
        }
        path = machine.root / ".sync" / "runs" / f"{clash}.json"
        path.write_text(json.dumps(record) + "\n")
        git(machine.root, "add", "-f", str(path))
        git(machine.root, "commit", "-qm", f"DPSK memory journal: {clash}")
    result = exchange(a, b)
    kept = f".sync/runs/{clash}-conflict-{a.head()[:8]}.json"
    assert result["renamedRuns"] == [{"runId": clash, "keptAs": Path(kept).stem}]
    assert result["conflicts"] == []
    assert json.loads((b.root / ".sync/runs" / f"{clash}.json").read_text())["changed_paths"] == [
        "B"
    ]
    moved = json.loads((b.root / kept).read_text())
    assert moved["changed_paths"] == ["A"] and moved["run_id"] == Path(kept).stem


def test_one_runs_record_journaled_again_keeps_the_later_version(
    machines: Callable[..., Machine],
) -> None:
    """An interrupted run finished by recover on one machine: its record changed; the other
    machine still has the first version. The later one is the run's record."""
    a, b = machines("a"), machines("b")
    run = "20261201T000000Z-sync-1234abcd"
    base = {
        "schema_version": 1,
        "run_id": run,
        "operation": "sync",
        "status": "interrupted",
        "started_at": "2026-12-01T00:00:00Z",
        "finished_at": "2026-12-01T00:00:01Z",
        "apply_commit": None,
        "changed_paths": [],
    }
    path = a.root / ".sync" / "runs" / f"{run}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(base) + "\n")
    git(a.root, "add", "-f", str(path))
    git(a.root, "commit", "-qm", f"DPSK memory journal: {run}")
    a.push()
    b.pull()
    b.push()
    a.pull()
    finished = {
        **base,
        "status": "applied",
        "finished_at": "2026-12-01T01:00:00Z",
        "apply_commit": a.head(),
    }
    path.write_text(json.dumps(finished) + "\n")
    git(a.root, "commit", "-qam", f"DPSK memory journal: {run}")
    earlier = {**base, "finished_at": "2026-12-01T00:30:00Z"}  # B journaled it too, earlier
    (b.root / ".sync" / "runs" / f"{run}.json").write_text(json.dumps(earlier) + "\n")
    git(b.root, "commit", "-qam", f"DPSK memory journal: {run}")
    result = exchange(a, b)
    assert result["conflicts"] == []
    assert json.loads((b.root / ".sync/runs" / f"{run}.json").read_text())["status"] == "applied"


def test_unrelated_histories_with_records_on_both_sides_are_merged(
    machines: Callable[..., Machine],
) -> None:
    """A second machine that already has memory of its own (it is not adopted)."""
    a, b = machines("a"), machines("b")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b.record("handbook/b.md", "project/b", "B.")
    result = b.pull()
    assert result["status"] == "merged" and not result["adopted"]
    assert set(b.files()) == {"summary.md", "handbook/a.md", "handbook/b.md"}
    assert len(git(b.root, "rev-list", "--max-parents=0", "HEAD").split()) == 2


def test_a_file_on_one_side_and_a_folder_on_the_other_is_refused(
    pair: tuple[Machine, Machine],
) -> None:
    a, b = pair
    a.record("handbook/topic.md", "project/topic", "A file.")
    b.record("handbook/topic.md/inner.md", "project/inner", "A folder.")
    a.push()
    before = b.committed()
    assert b.error(b.service.pull()) == "commit-failed"
    assert "file on one machine and a folder" in str(b.service.last_error_message)
    assert b.committed() == before == b.files(), "nothing of the memory changed"
    assert b.runs()[0]["operation"] == "pull" and b.runs()[0]["status"] == "failed"
    git(b.root, "fsck", "--strict")


# -- the helpers, directly ---------------------------------------------------------------------


def test_with_id_suffix_changes_only_the_id_line() -> None:
    text = RECORD.format(id="project/x", body="id: not front matter")
    assert with_id_suffix(text, "-conflict-abc") == text.replace(
        "id: project/x\n", "id: project/x-conflict-abc\n", 1
    )
    quoted = "---\nschema_version: 1\nid: 'project/x'\n---\nbody\n"
    assert "id: 'project/x-s'" in (with_id_suffix(quoted, "-s") or "")
    assert with_id_suffix("no front matter\n", "-s") is None


def test_sibling_names_stay_short_and_free() -> None:
    taken = {"handbook/a.conflict-12345678.md"}
    assert sibling_path("handbook/a.md", "12345678", taken) == "handbook/a.conflict-12345678-2.md"
    long = "handbook/" + "记" * 70 + ".md"
    assert len(sibling_path(long, "12345678", set()).rsplit("/", 1)[1].encode()) <= 200


def test_merge_commits_writes_nothing_to_head(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    a.record("handbook/shared.md", "project/shared", "A.")
    b.record("handbook/shared.md", "project/shared", "B.")
    a.push()
    git(
        b.root,
        "fetch",
        "-q",
        str(Path(git(a.root, "config", "remote.origin.url").strip())),
        "main:refs/remotes/origin/main",
    )
    head = b.head()
    tx = GitTransactions(inspect_layout(b.root))
    result = merge_commits(tx, head, git(b.root, "rev-parse", "refs/remotes/origin/main").strip())
    assert b.head() == head and len(result.conflicts) == 1
    assert git(b.root, "status", "--porcelain") == ""

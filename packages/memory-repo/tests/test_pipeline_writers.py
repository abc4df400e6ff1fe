"""Every memory writer, killed or out of disk at every step of the commit pipeline.

The nine writers of ``dsh_memory.write.pipeline`` run as the installed ``dsh-memory`` and
``dsh-memory-sync`` commands (``pull`` twice: merging another machine's record, a commit it
builds itself, and fast-forwarding to the fetched commit). Each is stopped at each
pipeline crash point (``dsh_memory.write.crashpoints``) two ways:

- **killed**: ``DSH_MEMORY_TEST_KILL_AT`` makes the process SIGKILL itself there (no
  ``finally``, no lock release);
- **out of disk**: the memory's folder is a small tmpfs in a private mount namespace, and
  ``DSH_MEMORY_TEST_FULL_AT`` fills it to the last byte at that point; the writer carries on
  into real ``ENOSPC`` errors. The namespace's files are copied back out afterwards (the
  disk is "freed"), so the rest of the test looks at exactly what the writer left.

After either: ``git fsck --strict`` passes; HEAD holds the old payload (stopped before the
compare-and-swap) or the new one (after it), never anything else; a writer that moved HEAD
but could not finish leaves the active-run record that names its commits (and answers
``journaled: false`` or an error, never ``commit-failed``), so no later writer can commit the
stale work tree; and ``dsh-memory recover`` then finishes the run: work tree equal to HEAD,
the run journaled, health clean.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService
from dsh_memory.write.crashpoints import AFTER_CAS, AFTER_JOURNAL, BEFORE_JOURNAL, PIPELINE_POINTS

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"
OLD = {
    "handbook/existing.md": RECORD.format(id="project/existing", body="Old."),
    "handbook/old.md": RECORD.format(id="project/old", body="Gone soon."),
}
#: What the fake agent's "multi" scenario makes of OLD.
SYNCED = {
    "handbook/existing.md": RECORD.format(id="project/existing", body="Changed."),
    "handbook/new-fact.md": RECORD.format(id="project/new-fact", body="Use uv."),
}
LEGACY = "an old note without front matter\n"
PREVIEW_ID = "20261201T120000Z-0a1b2c3d"
#: The points after which HEAD holds the run's commit.
MOVED = frozenset(PIPELINE_POINTS[PIPELINE_POINTS.index(AFTER_CAS) :])
Payload = dict[str, str]


def worktree_payload(root: Path) -> Payload:
    files = [root / "summary.md"] if (root / "summary.md").is_file() else []
    for folder in ("handbook", "rollouts", "archive"):
        files += sorted(p for p in (root / folder).rglob("*") if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in files}


def head_payload(root: Path) -> Payload:
    names = git(
        root,
        "ls-tree",
        "-r",
        "--name-only",
        "HEAD",
        "--",
        "summary.md",
        "handbook",
        "rollouts",
        "archive",
    ).split()
    return {name: git(root, "show", f"HEAD:{name}") for name in names}


@dataclass
class Scenario:
    """One writer ready to run: its command, and the payload before and after it."""

    argv: list[str]
    old: Payload
    is_new: Callable[[Payload], bool]
    #: The work tree before the run, where it is not HEAD's (adopt: the hand edit).
    live_before: Payload | None = None
    env: dict[str, str] = field(default_factory=dict)


def _seed(root: Path, files: Payload) -> Payload:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "seed")
    return head_payload(root)


def _equals(expected: Payload) -> Callable[[Payload], bool]:
    return lambda payload: payload == expected


def _memory(root: Path, *args: str) -> list[str]:
    """The installed ``dsh-memory`` console script's argv (run as is, or under unshare)."""
    return [str(commands.program("dsh-memory")), "--root", str(root), *args]


def _sync_command(root: Path, agent: str, *args: str) -> list[str]:
    return [
        str(commands.program("dsh-memory-sync")),
        "--root",
        str(root),
        "--json",
        "--agent",
        "command",
        "--agent-command",
        agent,
        *args,
    ]


def scenario_sync(root: Path, tools: Any) -> Scenario:
    old = _seed(root, OLD)
    tools.session_logs.dsh("d1", "we use uv")
    return Scenario(_sync_command(root, tools.agent("multi")), old, _equals(_synced(old)))


def _synced(old: Payload) -> Payload:
    new = {**old, **SYNCED}
    del new["handbook/old.md"]
    return new


def scenario_preview(root: Path, tools: Any) -> Scenario:
    from dsh_memory.sync.sessions import SessionSources
    from dsh_memory.sync.syncrun import SyncOptions, run_sync

    old = _seed(root, OLD)
    tools.session_logs.dsh("d1", "we use uv")
    env = dict(os.environ)
    stored = run_sync(
        SyncOptions(
            root=root,
            sources=SessionSources.defaults(env),
            env=env,
            agent="command",
            agent_command=tools.agent("multi"),
            mode="preview",
            preview_id=PREVIEW_ID,
        )
    )
    assert stored["status"] == "pending", stored
    return Scenario(
        _memory(root, "apply-preview", "--preview-id", PREVIEW_ID), old, _equals(_synced(old))
    )


def scenario_write(root: Path, tools: Any) -> Scenario:
    old = _seed(root, OLD)
    source = tools.tmp / "record.md"
    source.write_text(SYNCED["handbook/new-fact.md"], encoding="utf-8")
    return Scenario(
        _memory(root, "write", "handbook/new-fact.md", "--file", str(source)),
        old,
        _equals({**old, "handbook/new-fact.md": SYNCED["handbook/new-fact.md"]}),
    )


def scenario_remove(root: Path, _tools: Any) -> Scenario:
    old = _seed(root, OLD)
    new = dict(old)
    del new["handbook/old.md"]
    return Scenario(_memory(root, "remove", "handbook/old.md"), old, _equals(new))


def scenario_adopt(root: Path, _tools: Any) -> Scenario:
    old = _seed(root, OLD)
    edited = {**old, "handbook/existing.md": SYNCED["handbook/existing.md"]}
    (root / "handbook" / "existing.md").write_text(SYNCED["handbook/existing.md"])
    return Scenario(_memory(root, "adopt"), old, _equals(edited), live_before=edited)


def scenario_clear(root: Path, _tools: Any) -> Scenario:
    old = _seed(root, OLD)
    return Scenario(
        _memory(root, "clear", "--confirmation", "DELETE_MEMORY"), old, _equals({"summary.md": ""})
    )


def scenario_migrate(root: Path, _tools: Any) -> Scenario:
    old = _seed(root, {**OLD, "handbook/legacy.md": LEGACY})

    def migrated(payload: Payload) -> bool:
        legacy = payload.get("handbook/legacy.md", "")
        rest = {p: t for p, t in payload.items() if p != "handbook/legacy.md"}
        return (
            rest == {p: t for p, t in old.items() if p != "handbook/legacy.md"}
            and legacy.startswith("---\nschema_version: 1\nid: legacy-")
            and legacy.endswith(LEGACY)
        )

    return Scenario(_memory(root, "migrate-legacy", "--dry-run", "false"), old, migrated)


def scenario_rollback(root: Path, _tools: Any) -> Scenario:
    before = _seed(root, OLD)
    written = MemoryService().write("handbook/new-fact.md", SYNCED["handbook/new-fact.md"])
    assert written["ok"], written
    run_id = written["value"]["runId"]
    return Scenario(
        _memory(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY"),
        head_payload(root),
        _equals(before),
    )


def _ok(envelope: dict[str, Any]) -> Any:
    assert envelope["ok"], envelope
    return envelope["value"]


def _another_machine_pushed(root: Path, tools: Any) -> None:
    """This memory, seeded and pushed to a shared remote (a bare repository in tmp_path);
    then a second machine's memory takes the remote's history, writes a record and pushes."""
    from dsh_memory.store.initialize import initialize_repository

    _seed(root, OLD)
    remote = tools.tmp / "remote.git"
    git(tools.tmp, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    here = MemoryService(root)
    _ok(here.set_remote(str(remote)))
    _ok(here.push())
    other = tools.tmp / "other"
    other.mkdir()
    git(other, "init", "-q", "--initial-branch=main")
    initialize_repository(other)
    there = MemoryService(other)
    _ok(there.set_remote(str(remote)))
    _ok(there.pull())
    _ok(there.write("handbook/new-fact.md", SYNCED["handbook/new-fact.md"]))
    _ok(there.push())


def scenario_pull(root: Path, tools: Any) -> Scenario:
    """Another machine pushed a record while this one changed a record of its own: the pull
    merges both, in a merge commit the writer builds itself."""
    _another_machine_pushed(root, tools)
    old = _seed(root, {"handbook/existing.md": SYNCED["handbook/existing.md"]})
    return Scenario(
        _memory(root, "pull"),
        old,
        _equals({**old, "handbook/new-fact.md": SYNCED["handbook/new-fact.md"]}),
    )


def scenario_pull_fast_forward(root: Path, tools: Any) -> Scenario:
    """Another machine pushed a record and this one changed nothing: HEAD moves to the
    fetched commit itself (the other machine's journal commit)."""
    _another_machine_pushed(root, tools)
    old = head_payload(root)
    return Scenario(
        _memory(root, "pull"),
        old,
        _equals({**old, "handbook/new-fact.md": SYNCED["handbook/new-fact.md"]}),
    )


WRITERS: dict[str, Callable[[Path, Any], Scenario]] = {
    "sync": scenario_sync,
    "preview": scenario_preview,
    "write": scenario_write,
    "remove": scenario_remove,
    "adopt": scenario_adopt,
    "clear": scenario_clear,
    "migrate": scenario_migrate,
    "rollback": scenario_rollback,
    "pull": scenario_pull,
}
#: Each writer's scenarios: its own, and another for a writer whose commit is made two ways.
CASES: dict[str, tuple[str, Callable[[Path, Any], Scenario]]] = {
    **{name: (name, scenario) for name, scenario in WRITERS.items()},
    "pull-fast-forward": ("pull", scenario_pull_fast_forward),
}
#: The journal operation of each writer.
OPERATIONS = {
    "sync": "sync",
    "preview": "preview",
    "write": "edit",
    "remove": "edit",
    "adopt": "edit",
    "clear": "clear",
    "migrate": "migrate",
    "rollback": "rollback",
    "pull": "pull",
}
#: The code each writer answers when it stops before HEAD moved (nothing changed).
BEFORE_CAS_CODES = {"preview": "preview-apply-failed", "rollback": "rollback-failed"}
#: The codes a writer answers when HEAD moved but the work tree could not follow.
AFTER_CAS_CODES = {"migrate": {"migration-enospc"}, "rollback": {"rollback-failed"}}


@dataclass
class Tools:
    tmp: Path
    session_logs: Any
    agent: Callable[[str], str]


@pytest.fixture
def tools(tmp_path: Path, session_logs: Any, agent_command: Callable[[str], str]) -> Tools:
    return Tools(tmp_path, session_logs, agent_command)


def run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run(argv, capture_output=True, text=True, env=full, timeout=120, check=False)


def answer(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON a writer printed: the value (dsh-memory) or the document (dsh-memory-sync)."""
    if result.returncode != 0:
        error: dict[str, Any] = json.loads(result.stderr)["error"]
        return error
    document = json.loads(result.stdout)
    value: dict[str, Any] = document.get("value", document)
    return value


def active_run(root: Path) -> dict[str, Any] | None:
    path = root / ".sync" / "active-run.json"
    return json.loads(path.read_text()) if path.exists() else None


def check_the_writer_runs_again(root: Path, scenario: Scenario, writer: str) -> None:
    """Stopped before the CAS, nothing was lost: the same writer now does the whole job -
    except a preview, which any commit since it was made (here the journal's) makes stale,
    as the contract rules (docs/compatibility/memory.md, Previews): ``live-memory-changed``."""
    journaled = git(root, "log", "-1", "--format=%s").startswith("DPSK memory journal")
    again = run(scenario.argv)
    if writer == "preview" and journaled:
        assert answer(again)["code"] == "live-memory-changed", again.stderr
        return
    assert again.returncode == 0, again.stderr
    assert scenario.is_new(head_payload(root))
    assert worktree_payload(root) == head_payload(root)


def holds_the_apply_commit(root: Path, active: dict[str, Any]) -> None:
    """The active run names the commit HEAD moved to: HEAD itself, or its parent when the
    journal commit was made. (A fast-forward pull's apply commit is the fetched commit,
    which may itself be the other machine's journal commit: it is named, not searched.)"""
    heads = git(root, "rev-list", "-2", "--first-parent", "HEAD").split()
    journaled = (
        git(root, "log", "-1", "--format=%s") == f"DPSK memory journal: {active['run_id']}\n"
    )
    assert active["apply_commit"] == heads[1 if journaled else 0], (active, heads)


def refuses_every_writer(root: Path) -> None:
    """Until recover, writers stop with interrupted-run; above all none commits the stale
    work tree as if it were a person's edit (``adopt`` would, given the chance)."""
    assert MemoryService().migrate_legacy(False)["error"]["code"] == "interrupted-run"
    head = git(root, "rev-parse", "HEAD")
    adopted = MemoryService().adopt()
    assert not adopted["ok"] or adopted["value"]["status"] == "no_change", adopted
    assert adopted["ok"] or adopted["error"]["code"] == "interrupted-run", adopted
    assert git(root, "rev-parse", "HEAD") == head or not adopted["ok"]


def check_finished_by_recover(root: Path, scenario: Scenario, run_id: str, writer: str) -> None:
    """``recover``, then: consistent, journaled, healthy. (In process: the installed
    ``dsh-memory recover`` is the same method behind its argument parser, replayed through
    the command in test_sync_killed_then_recovered.py; the writers here all run as commands.)"""
    recovered = MemoryService().recover("RECOVER_MEMORY")
    assert recovered["ok"], (recovered, MemoryService().last_error_message)
    git(root, "fsck", "--strict")
    health = MemoryService().health()["value"]
    assert health["activeRun"] is None and health["operationLock"] is None, health
    moved = scenario.is_new(head_payload(root))
    assert moved or head_payload(root) == scenario.old
    if moved or scenario.live_before is None:
        assert worktree_payload(root) == head_payload(root)
        assert health["needsManualRecovery"] is False, health
    else:  # adopt stopped before the CAS: the person's edit is still theirs to adopt
        assert worktree_payload(root) == scenario.live_before
    records = {r["run_id"]: r for r in MemoryService().runs(limit=1000)["value"]["runs"]}
    record = records[run_id]
    if moved:
        assert record["status"] == ("rolled_back" if writer == "rollback" else "applied")
        assert record["apply_commit"] is not None
        assert record["operation"] == OPERATIONS[writer]
    else:
        assert record["status"] in ("interrupted", "failed"), record


@pytest.mark.parametrize("point", PIPELINE_POINTS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_writer_killed_at_each_crash_point_is_finished_by_recover(
    case: str, point: str, sync_root: Path, tools: Tools
) -> None:
    root = sync_root
    writer, build = CASES[case]
    scenario = build(root, tools)
    killed = run(scenario.argv, {"DSH_MEMORY_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    git(root, "fsck", "--strict")
    moved = point in MOVED
    assert scenario.is_new(head_payload(root)) if moved else head_payload(root) == scenario.old
    active = active_run(root)
    assert active is not None, "a killed writer leaves its active-run record"
    if point != AFTER_JOURNAL:
        refuses_every_writer(root)
        assert MemoryService().health()["value"]["needsManualRecovery"] is True
    if moved:
        holds_the_apply_commit(root, active)
    check_finished_by_recover(root, scenario, str(active["run_id"]), writer)
    if not moved:
        check_the_writer_runs_again(root, scenario, writer)


# -- a full disk ---------------------------------------------------------------------------


@functools.cache
def _namespace_problem() -> str | None:
    """Why a private mount namespace with a tmpfs cannot be had here, or None if it can."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) is missing"
    probe = subprocess.run(
        [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs /mnt",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        return f"no private mount namespace with mounts here: {probe.stderr.strip()}"
    return None


def run_on_full_disk(
    folder: Path, argv: list[str], point: str, scratch: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``folder`` on its own tmpfs that fills up at ``point``; then copy
    what the writer left back to ``folder`` (in a private mount namespace: nothing outside
    this command's process tree sees the tmpfs)."""
    problem = _namespace_problem()
    if problem is not None:
        pytest.skip(problem)
    used_kib = int(
        subprocess.run(
            ["du", "-sk", str(folder)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )
    stash, out, filler = scratch / "stash", scratch / "out", folder / "filler"
    q = shlex.quote
    script = " && ".join(
        [
            f"cp -a {q(str(folder))} {q(str(stash))}",
            f"mount -t tmpfs -o size={used_kib * 2 + 2048}k tmpfs {q(str(folder))}",
            f"cp -a {q(str(stash))}/. {q(str(folder))}/",
            f"{{ {shlex.join(argv)} > {q(str(scratch / 'stdout'))}"
            f" 2> {q(str(scratch / 'stderr'))}; echo $? > {q(str(scratch / 'rc'))}; }}",
            f"rm -f {q(str(filler))}",
            f"cp -a {q(str(folder))} {q(str(out))}",
            f"umount {q(str(folder))}",
        ]
    )
    env = {**os.environ, "DSH_MEMORY_TEST_FULL_AT": point, "DSH_MEMORY_TEST_FILLER": str(filler)}
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shutil.rmtree(folder)
    os.rename(out, folder)
    return subprocess.CompletedProcess(
        argv,
        int((scratch / "rc").read_text()),
        (scratch / "stdout").read_text(),
        (scratch / "stderr").read_text(),
    )


@pytest.mark.parametrize("point", PIPELINE_POINTS)
@pytest.mark.parametrize("case", list(CASES))
def test_a_writer_meeting_a_full_disk_at_each_step_is_finished_by_recover(
    case: str, point: str, sync_root: Path, tools: Tools, tmp_path: Path
) -> None:
    root = sync_root
    writer, build = CASES[case]
    scenario = build(root, tools)
    scratch = tmp_path / "full-disk"
    scratch.mkdir()
    result = run_on_full_disk(root.parent, scenario.argv, point, scratch)
    git(root, "fsck", "--strict")
    moved = point in MOVED
    assert scenario.is_new(head_payload(root)) if moved else head_payload(root) == scenario.old
    active = active_run(root)
    if not moved:
        # Refused before HEAD moved: an error naming the failed commit, nothing to finish.
        assert result.returncode == 1, result.stdout
        assert answer(result)["code"] == BEFORE_CAS_CODES.get(writer, "commit-failed"), (
            result.stderr
        )
        assert active is None
        check_the_writer_runs_again(root, scenario, writer)
        return
    if point == AFTER_JOURNAL:
        assert result.returncode == 0, result.stderr
        assert answer(result).get("journaled", True) is True
        assert active is None
        assert worktree_payload(root) == head_payload(root)
        return
    # HEAD holds the run, which could not finish: applied but unjournaled, or an error of
    # the work-tree step - never "commit-failed" - and the record recover needs is kept.
    if result.returncode == 0:
        assert answer(result)["journaled"] is False
    else:
        assert point != BEFORE_JOURNAL, result.stderr
        assert answer(result)["code"] in AFTER_CAS_CODES.get(writer, {"finalize-failed"}), (
            result.stderr
        )
    assert active is not None, "the active-run record naming the commits must stay"
    holds_the_apply_commit(root, active)
    refuses_every_writer(root)
    check_finished_by_recover(root, scenario, str(active["run_id"]), writer)


def test_every_writer_is_listed_in_the_pipeline_docstring() -> None:
    from dsh_memory.write import pipeline

    doc = pipeline.__doc__ or ""
    for name in (
        "sync",
        "preview apply",
        "write",
        "remove",
        "adopt",
        "clear",
        "migrate-legacy",
        "rollback",
        "pull",
        "recover",
    ):
        assert f"**{name}**" in doc, name
    assert len(WRITERS) == 9


@pytest.mark.parametrize("point", [BEFORE_JOURNAL, AFTER_JOURNAL])
def test_a_recover_killed_at_its_journal_step_is_simply_run_again(
    point: str, sync_root: Path, tools: Tools
) -> None:
    """recover is the ninth writer of the pipeline's journal step: killed there, it leaves
    a dead lock of its own and the run still to finish; the next recover finishes it."""
    root = sync_root
    scenario = WRITERS["write"](root, tools)
    assert run(scenario.argv, {"DSH_MEMORY_TEST_KILL_AT": AFTER_CAS}).returncode == -signal.SIGKILL
    run_id = str((active_run(root) or {})["run_id"])
    recover = _memory(root, "recover", "--confirmation", "RECOVER_MEMORY")
    killed = run(recover, {"DSH_MEMORY_TEST_KILL_AT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    git(root, "fsck", "--strict")
    assert scenario.is_new(head_payload(root))
    check_finished_by_recover(root, scenario, run_id, "write")

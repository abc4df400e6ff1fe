"""Several machines, one memory: pull and push through real remotes, nothing ever lost.

Remotes are bare repositories on disk and a real smart-HTTP server on 127.0.0.1
(``git http-backend``, tests/support). Each command runs at least once as the installed
``dsh-memory``; the rest goes through ``MemoryService``, the same method behind it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.git_http import git_http_server
from dsh_test_support.gitcmd import git

from .conftest import Machine


def cli(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    """The installed ``dsh-memory``: (exit code, the JSON it printed on stdout or stderr)."""
    done = commands.run("dsh-memory", *args, cwd=cwd)
    text = done.stdout if done.returncode == 0 else done.stderr
    return done.returncode, json.loads(text)


def marker_script(path: Path, marker: Path) -> Path:
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def shared(machines: Callable[..., Machine]) -> tuple[Machine, Machine]:
    a, b = machines("a"), machines("b")
    a.record("handbook/first.md", "project/first", "First.")
    a.push()
    b.pull()
    b.push()  # B's pull run is journaled: A takes that journal commit (no run of its own)
    assert a.pull()["runId"] is None
    assert a.head() == b.head()
    return a, b


# -- remote, remote set, remote remove ---------------------------------------------------


def test_remote_commands_through_the_installed_command(
    machines: Callable[..., Machine], remote_repo: Path, tmp_path: Path
) -> None:
    a = machines("a", remote=False)
    root = str(a.root)
    assert cli("--root", root, "remote") == (0, {"ok": True, "value": {"remote": None}})
    assert "remote" not in a.ok(a.service.status()), "no remote: status as before"
    # A relative path is the remote seen from where the command runs.
    code, shown = cli("--root", root, "remote", "set", remote_repo.name, cwd=tmp_path)
    assert code == 0, shown
    remote = shown["value"]["remote"]
    assert remote["url"] == str(remote_repo) and remote["valid"] and remote["branch"] == "main"
    assert git(a.root, "config", "remote.origin.url").strip() == str(remote_repo)
    assert git(a.root, "config", "remote.origin.fetch").strip() == (
        "+refs/heads/main:refs/remotes/origin/main"
    )
    code, pushed = cli("--root", root, "push")
    assert code == 0 and pushed["value"]["status"] == "pushed", pushed
    code, pulled = cli("pull", "--root", root)
    assert code == 0 and pulled["value"]["status"] == "up-to-date", pulled
    for method in (a.service.status, a.service.health):
        described = a.ok(method())["remote"]
        assert described["ahead"] == 0 and described["behind"] == 0
        assert described["lastPush"]["status"] == "pushed"
        assert described["lastPull"]["status"] == "up-to-date"
    code, removed = cli("--root", root, "remote", "remove")
    assert (code, removed["value"]) == (0, {"removed": True, "remote": None})
    assert git(a.root, "config", "--get", "remote.origin.url", check=False) == ""
    assert git(a.root, "for-each-ref", "refs/remotes") == ""
    code, error = cli("--root", root, "pull")
    assert (code, error["error"]["code"]) == (1, "remote-not-configured")
    code, error = cli("--root", root, "remote", "rename", "x")
    assert (code, error["error"]["code"]) == (1, "invalid-arguments")


def test_remote_commands_on_a_repository_that_is_no_memory_change_nothing(
    tmp_path: Path, remote_repo: Path
) -> None:
    """``--root`` pointed at a project by mistake: its own ``origin`` is not the memory's."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "--initial-branch=main")
    git(project, "commit", "-q", "--allow-empty", "-m", "project")
    git(project, "remote", "add", "origin", str(remote_repo))
    git(project, "update-ref", "refs/remotes/origin/main", "HEAD")
    config = (project / ".git" / "config").read_bytes()
    for args in (("remote", "remove"), ("remote",), ("remote", "set", str(remote_repo))):
        code, error = cli("--root", str(project), *args)
        assert (code, error["error"]["code"]) == (1, "repo-unavailable"), (args, error)
        assert "not a dsh memory repository" in error["error"]["message"]
    assert (project / ".git" / "config").read_bytes() == config
    assert git(project, "for-each-ref", "--format=%(refname)", "refs/remotes").split() == [
        "refs/remotes/origin/main"
    ]
    assert not (project / ".git" / "dsh-memory").exists()


@pytest.mark.parametrize(
    "url",
    [
        "ext::sh -c touch% {marker}",
        "fd::3",
        "evil::{marker}",
        "http://example.com/m.git",
        "git://example.com/m.git",
        "ssh://-oProxyCommand=touch%20{marker}/x",
    ],
)
def test_a_refused_url_changes_nothing(
    url: str, machines: Callable[..., Machine], tmp_path: Path
) -> None:
    a = machines("a", remote=False)
    marker = tmp_path / "ran"
    code, error = cli("--root", str(a.root), "remote", "set", "--", url.format(marker=marker))
    assert (code, error["error"]["code"]) == (1, "remote-invalid"), error
    assert git(a.root, "config", "--get", "remote.origin.url", check=False) == ""
    assert not marker.exists()


@pytest.mark.parametrize(
    ("url", "transport"),
    [
        ("ext::sh -c touch% {marker}", "ext"),
        ("fd::3", "fd"),
        ("evil::https://host.invalid/memory.git", "evil"),  # git-remote-evil, on PATH
        ("::{marker}", ""),  # the helper named "" (git-remote-)
    ],
)
def test_a_helper_url_written_into_the_config_by_hand_is_refused_at_pull_and_push(
    url: str,
    transport: str,
    machines: Callable[..., Machine],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = machines("a", remote=False)
    marker = tmp_path / "ran"
    (tmp_path / "bin").mkdir()
    helper = marker_script(tmp_path / "bin" / "git-remote-evil", marker)
    monkeypatch.setenv("PATH", f"{helper.parent}:{os.environ['PATH']}")
    git(a.root, "config", "remote.origin.url", url.format(marker=marker))
    git(a.root, "config", f"protocol.{transport or 'x'}.allow", "always")
    head = a.head()
    for command in ("pull", "push"):
        code, error = cli("--root", str(a.root), command)
        assert (code, error["error"]["code"]) == (1, "remote-invalid"), error
        assert "remote helper program" in error["error"]["message"]
    assert not marker.exists() and a.head() == head
    shown = a.ok(a.service.status())["remote"]
    assert shown["valid"] is False and shown["url"] == url.format(marker=marker)


def test_a_refused_url_in_the_config_is_shown_without_its_password(
    machines: Callable[..., Machine],
) -> None:
    a = machines("a", remote=False)
    git(a.root, "config", "remote.origin.url", "alice:s3cret@host.invalid:memory.git")
    for method in (a.service.status, a.service.health, a.service.remote):
        shown = json.dumps(a.ok(method()))
        assert "s3cret" not in shown and "alice:***@host.invalid:memory.git" in shown
    assert a.error(a.service.pull()) == "remote-invalid"
    assert "s3cret" not in str(a.service.last_error_message)


def test_credentials_in_a_url_reach_git_and_nothing_else(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    git(served, "init", "-q", "--bare", "--initial-branch=main", "memory.git")
    secret = "s3cr3t-t0k3n"  # noqa: S105 - the test server's password
    with git_http_server(served, credentials=("me", secret)) as server:
        url = server.url("memory.git", with_credentials=True)
        a, b = machines("a", remote=False), machines("b", remote=False)
        outputs = []
        for machine in (a, b):
            code, shown = cli("--root", str(machine.root), "remote", "set", url)
            assert code == 0, shown
            outputs.append(json.dumps(shown))
        a.record("handbook/first.md", "project/first", "First.")
        outputs.append(json.dumps(cli("--root", str(a.root), "push")))
        outputs.append(json.dumps(cli("--root", str(b.root), "pull")))
        wrong = url.replace(secret, "wrong-password")
        b.ok(b.service.set_remote(wrong))
        code, error = cli("--root", str(b.root), "pull")
        assert error["error"]["code"] == "remote-unavailable"
        outputs.append(json.dumps(error))
        for method in ("status", "health", "remote", "runs"):
            outputs.append(json.dumps(cli("--root", str(b.root), method)))
    assert b.files()["handbook/first.md"].endswith("First.\n")
    assert all(secret not in text and "wrong-password" not in text for text in outputs)
    assert "***@127.0.0.1" in outputs[0]
    for machine in (a, b):
        for path in machine.root.rglob("*"):
            if path.is_file() and path.name != "config" and path.stat().st_size < 1 << 20:
                assert secret.encode() not in path.read_bytes(), path
        # Git's own config is where the URL lives, and only there.
        assert secret in (machine.root / ".git" / "config").read_text() or machine is b


# -- pull ----------------------------------------------------------------------------------


def test_an_empty_remote_is_up_to_date_and_nothing_is_written(
    machines: Callable[..., Machine],
) -> None:
    a = machines("a")
    head = a.head()
    result = a.pull()
    assert result["status"] == "up-to-date" and result["runId"] is None
    assert a.head() == head and a.runs() == []


def test_a_fast_forward_pull_is_a_run_that_rolls_back(machines: Callable[..., Machine]) -> None:
    a, b = shared(machines)
    edit = a.record("handbook/second.md", "project/second", "Second.")
    a.push()
    head = b.head()
    result = b.pull()
    assert result["status"] == "fast-forward" and result["recoveryCommit"] == head
    assert result["applyCommit"] == a.head() == result["remoteHead"]
    record = next(r for r in b.runs() if r["run_id"] == result["runId"])
    assert (record["operation"], record["status"]) == ("pull", "applied")
    assert record["changed_paths"] == ["handbook/second.md"]
    # The pulled run is A's own edit: it rolls back on B like any run of B's.
    assert edit["runId"] in {r["run_id"] for r in b.runs()}
    undone = b.ok(b.service.rollback(edit["runId"], "ROLLBACK_MEMORY"))
    assert undone["changedPaths"] == ["handbook/second.md"]
    assert "handbook/second.md" not in b.files()
    # ... and so does a pull run itself: the merge of A's next record is undone whole.
    a.record("handbook/third.md", "project/third", "Third.")
    a.push()
    merged = b.pull()
    assert merged["status"] == "merged"  # B's rollback was not pushed: the histories diverged
    assert "handbook/third.md" in b.files()
    b.ok(b.service.rollback(merged["runId"], "ROLLBACK_MEMORY"))
    assert "handbook/third.md" not in b.files() and "handbook/first.md" in b.files()


def test_a_new_machine_adopts_the_remote_history(machines: Callable[..., Machine]) -> None:
    a = machines("a")
    a.record("handbook/first.md", "project/first", "First.")
    a.record("handbook/second.md", "project/second", "Second.")
    a.push()
    b = machines("b")
    old_head = b.head()
    result = b.pull()
    assert result["status"] == "fast-forward" and result["adopted"] is True
    assert b.files() == a.files()
    assert git(b.root, "merge-base", "--is-ancestor", a.head(), "HEAD", check=False) == ""
    assert len(git(b.root, "rev-list", "--max-parents=0", "HEAD").split()) == 1, "no merge"
    backups = git(b.root, "for-each-ref", "--format=%(objectname)", "refs/dsh-memory/pre-pull")
    assert old_head in backups.split(), "the commit B had is kept"
    assert {r["run_id"] for r in a.runs()} <= {r["run_id"] for r in b.runs()}
    assert b.push()["status"] == "pushed"  # a fast-forward of the remote: nothing deleted
    assert a.pull()["status"] == "fast-forward"
    assert a.files() == b.files()


def test_an_empty_new_machine_never_deletes_the_remotes_records(
    machines: Callable[..., Machine],
) -> None:
    a = machines("a")
    a.record("handbook/first.md", "project/first", "First.")
    a.push()
    remote_head = git(a.root, "rev-parse", "refs/remotes/origin/main").strip()
    b = machines("b")
    assert b.error(b.service.push()) == "push-rejected"  # it must pull first
    assert git(a.root, "ls-remote", str(b.root / ".." / ".." / "remote.git")).split()[0] == (
        remote_head
    )
    b.pull()
    # A hand-made deletion (no journaled run) is never pushed.
    git(b.root, "rm", "-q", "handbook/first.md")
    git(b.root, "commit", "-qm", "tidy up")
    assert b.error(b.service.push()) == "push-unjournaled-deletion"
    assert "handbook/first.md" in str(b.service.last_error_message)
    # A journaled removal is.
    git(b.root, "revert", "--no-edit", "HEAD")
    b.remove("handbook/first.md")
    assert b.push()["status"] == "pushed"


def test_the_advice_for_an_unjournaled_deletion_works_as_written(
    machines: Callable[..., Machine], remote_repo: Path
) -> None:
    """The records are gone from HEAD already (``dsh-memory remove`` alone would answer
    ``edit-not-found``): the commands the message gives are run as they are, in a shell."""
    a, b = shared(machines)
    a.record("handbook/second one.md", "project/second", "Second.")
    a.push()
    b.pull()

    def refused() -> list[str]:
        git(b.root, "rm", "-q", "handbook/first.md", "handbook/second one.md")
        git(b.root, "commit", "-qm", "tidy up by hand")
        code, error = cli("--root", str(b.root), "push")
        assert (code, error["error"]["code"]) == (1, "push-unjournaled-deletion"), error
        return re.findall(r"`([^`]+)`", error["error"]["message"])

    def follow(command: str) -> None:
        subprocess.run(command, shell=True, check=True, capture_output=True, timeout=120)  # noqa: S602

    restore, adopt, remove = refused()
    assert "edit-not-found" in json.dumps(cli("--root", str(b.root), "remove", "handbook/first.md"))
    follow(restore)
    follow(adopt)
    assert b.push()["status"] == "pushed"
    on_remote = git(remote_repo, "ls-tree", "-r", "--name-only", "main", "handbook").split("\n")
    assert {"handbook/first.md", "handbook/second one.md"} <= set(on_remote)
    # And to delete them for every machine: the same two steps, then remove each.
    restore, adopt, remove = refused()
    follow(restore)
    follow(adopt)
    for path in ("handbook/first.md", "'handbook/second one.md'"):
        follow(remove.replace("<path>", path))
    assert b.push()["status"] == "pushed"
    a.pull()
    assert not {"handbook/first.md", "handbook/second one.md"} & set(a.files())


def test_push_refuses_when_the_remote_moved_and_changes_nothing(
    machines: Callable[..., Machine], remote_repo: Path
) -> None:
    a, b = shared(machines)
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b.record("handbook/b.md", "project/b", "B.")
    before = git(remote_repo, "rev-parse", "main").strip()
    head = b.head()
    code, error = cli("--root", str(b.root), "push")
    assert (code, error["error"]["code"]) == (1, "push-rejected")
    assert "pull" in error["error"]["message"]
    assert git(remote_repo, "rev-parse", "main").strip() == before and b.head() == head
    assert b.ok(b.service.status())["remote"]["lastPush"]["code"] == "push-rejected"


def test_concurrent_pushes_from_two_machines_one_wins_the_other_pulls_and_pushes(
    machines: Callable[..., Machine], remote_repo: Path
) -> None:
    a, b = shared(machines)
    a.record("handbook/a.md", "project/a", "A.")
    b.record("handbook/b.md", "project/b", "B.")
    answers: dict[str, tuple[int, dict[str, Any]]] = {}
    barrier = threading.Barrier(2)

    def push(machine: Machine, name: str) -> None:
        barrier.wait()
        answers[name] = cli("--root", str(machine.root), "push")

    threads = [threading.Thread(target=push, args=(m, n)) for m, n in ((a, "a"), (b, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    codes = sorted(code for code, _ in answers.values())
    assert codes == [0, 1], answers
    loser = a if answers["a"][0] == 1 else b
    assert answers["a" if loser is a else "b"][1]["error"]["code"] == "push-rejected"
    assert loser.pull()["status"] == "merged"
    assert loser.push()["status"] == "pushed"
    winner = b if loser is a else a
    winner.pull()
    assert winner.files() == loser.files()
    assert {"handbook/a.md", "handbook/b.md"} <= set(winner.files())
    git(remote_repo, "fsck", "--strict")


def test_machines_pulling_and_pushing_in_turn_converge(machines: Callable[..., Machine]) -> None:
    a, b = shared(machines)
    a.record("handbook/a.md", "project/a", "A.")
    b.record("handbook/b.md", "project/b", "B.")
    a.push()
    for _ in range(3):
        for machine in (b, a):
            machine.pull()
            machine.push()
    heads = {a.head(), b.head()}
    assert len(heads) == 1, "the same history on both"
    assert a.pull()["status"] == "up-to-date" and b.pull()["status"] == "up-to-date"
    assert a.push()["status"] == "up-to-date"
    # A journal-only fast-forward made no journal commit of its own.
    pulls = [r for r in a.runs() if r["operation"] == "pull"]
    assert all(r["changed_paths"] for r in pulls), pulls


def test_three_machines_share_one_memory(machines: Callable[..., Machine]) -> None:
    a = machines("a")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b, c = machines("b"), machines("c")
    b.pull()
    c.pull()
    for machine, name in ((a, "a2"), (b, "b"), (c, "c")):
        machine.record(f"handbook/{name}.md", f"project/{name}", name.upper())
    for machine in (a, b, c):
        machine.pull()
        machine.push()
    for machine in (a, b, c):
        machine.pull()
    assert a.files() == b.files() == c.files()
    assert {"handbook/a.md", "handbook/a2.md", "handbook/b.md", "handbook/c.md"} <= set(a.files())


def test_a_dirty_payload_is_checkpointed_and_merged_not_lost(
    machines: Callable[..., Machine],
) -> None:
    a, b = shared(machines)
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    (b.root / "handbook" / "hand.md").write_text("---\nschema_version: 1\nid: hand\n---\nMine.\n")
    (b.root / "handbook" / "first.md").write_text("edited by hand\n")
    result = b.pull()
    assert result["status"] == "merged" and result["recoveryCommit"] != result["headBefore"]
    files = b.files()
    assert files["handbook/hand.md"].endswith("Mine.\n")
    assert files["handbook/first.md"] == "edited by hand\n"
    assert "handbook/a.md" in files
    assert b.ok(b.service.health())["payloadDirty"] is False


def test_a_file_git_ignores_where_the_pull_adds_a_record_is_kept(
    machines: Callable[..., Machine],
) -> None:
    """The user's own excludes hide a file from git: a pull must not overwrite it unseen."""
    a, b = shared(machines)
    a.record("handbook/notes.md", "project/notes", "A's notes.")
    a.push()
    (b.root / ".git" / "info" / "exclude").write_text("handbook/notes.md\n")
    (b.root / "handbook" / "notes.md").write_text("B's own notes, never committed.\n")
    result = b.pull()
    assert result["status"] == "merged-with-conflicts", result
    files = b.files()
    assert files["handbook/notes.md"] == "B's own notes, never committed.\n"
    assert files[result["conflicts"][0]["keptAs"]].endswith("A's notes.\n")


def test_an_unreachable_remote_is_remote_unavailable(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    a = machines("a", remote=False)
    a.ok(a.service.set_remote(str(tmp_path / "nowhere.git")))
    head = a.head()
    assert a.error(a.service.pull()) == "remote-unavailable"
    assert a.head() == head and a.runs() == []
    shown = a.ok(a.service.status())["remote"]
    assert shown["lastPull"]["code"] == "remote-unavailable"


def test_pull_waits_for_no_writer_and_takes_over_nothing(
    memory_root: Path,
    remote_repo: Path,
    machines: Callable[..., Machine],
    cli_run_holding_the_lock: Callable[[], Any],
) -> None:
    a = machines("a")
    a.record("handbook/a.md", "project/a", "A.")
    a.push()
    b = Machine(memory_root)
    b.ok(b.service.set_remote(str(remote_repo)))
    head = b.head()
    with cli_run_holding_the_lock():
        assert b.error(b.service.pull()) == "operation-in-progress"
        assert b.error(b.service.push()) == "operation-in-progress"
    assert b.head() == head
    # The holder was killed: its dead run is recovered first, then the pull adopts.
    assert b.error(b.service.pull()) == "interrupted-run"
    b.ok(b.service.recover("RECOVER_MEMORY"))
    assert b.pull()["status"] == "merged"  # recover journaled: no longer a new memory
    assert "handbook/a.md" in b.files()


# -- nothing the remote or the repository names ever runs -------------------------------------


def test_a_remote_whose_config_and_hooks_name_programs_runs_none(
    machines: Callable[..., Machine], remote_repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    for hook in (
        "pre-receive",
        "update",
        "post-receive",
        "post-update",
        "reference-transaction",
        "pre-push",
        "post-merge",
        "post-checkout",
    ):
        marker_script(remote_repo / "hooks" / hook, marker)
    git(remote_repo, "config", "core.fsmonitor", str(marker_script(tmp_path / "fsm", marker)))
    git(
        remote_repo,
        "config",
        "uploadpack.packObjectsHook",
        str(marker_script(tmp_path / "p", marker)),
    )
    git(remote_repo, "config", "receive.autogc", "true")
    git(remote_repo, "config", "gc.auto", "1")
    a, b = shared(machines)
    for machine in (a, b):  # our side's hooks too
        for hook in ("pre-push", "post-merge", "post-checkout", "reference-transaction"):
            marker_script(machine.root / ".git" / "hooks" / hook, marker)
    a.record("handbook/a.md", "project/a", "A.")
    assert cli("--root", str(a.root), "push")[0] == 0
    assert cli("--root", str(b.root), "pull")[0] == 0
    assert "handbook/a.md" in b.files()
    assert not marker.exists()


def test_a_merge_driver_named_by_the_repository_config_is_refused(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    a, b = shared(machines)
    a.record("handbook/first.md", "project/first", "A's.")
    a.push()
    b.record("handbook/first.md", "project/first", "B's.")
    git(b.root, "config", "merge.evil.driver", f"{marker_script(tmp_path / 'm', marker)} %A")
    git(b.root, "config", "merge.default", "evil")
    head = b.head()
    code, error = cli("--root", str(b.root), "pull")
    assert (code, error["error"]["code"]) == (1, "unsafe-config")
    assert not marker.exists() and b.head() == head


def test_a_url_rewrite_in_the_repository_config_is_refused(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    _, b = shared(machines)
    git(b.root, "config", f"url.{tmp_path / 'elsewhere.git'}.insteadOf", str(tmp_path))
    assert b.error(b.service.pull()) == "unsafe-config"
    assert b.error(b.service.push()) == "unsafe-config"


@pytest.mark.parametrize(
    "plant",
    [
        ".gitattributes",
        "handbook/link.md",
        ".sync/operation.lock",
        "notes.txt",
        "handbook/.gitattributes",
        ".sync/runs/not-a-run.json",
    ],
)
def test_a_path_no_memory_holds_refuses_the_pull(
    plant: str, machines: Callable[..., Machine]
) -> None:
    a, b = shared(machines)
    target = a.root / plant
    if plant.endswith("link.md"):
        target.symlink_to("/etc/passwd")
    else:
        target.write_text("* filter=evil\n")
    git(a.root, "add", "-f", plant)
    git(a.root, "commit", "-qm", "planted by hand")
    git(
        a.root,
        "push",
        "-q",
        str(Path(git(a.root, "config", "remote.origin.url").strip())),
        "HEAD:main",
    )
    head = b.head()
    code, error = cli("--root", str(b.root), "pull")
    assert (code, error["error"]["code"]) == (1, "remote-content-refused"), error
    assert plant in error["error"]["message"]
    assert b.head() == head and not (b.root / plant).exists() and not (b.root / plant).is_symlink()


def test_a_remote_that_is_no_memory_is_refused(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    """A project repository given as the remote by mistake is never merged in."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "--initial-branch=main")
    (project / "handbook").mkdir()
    (project / "handbook" / "x.md").write_text("a project's own handbook\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "project")
    a = machines("a", remote=False)
    a.ok(a.service.set_remote(str(project)))
    head = a.head()
    assert a.error(a.service.pull()) == "remote-content-refused"
    assert "not a dsh memory repository" in str(a.service.last_error_message)
    assert a.head() == head and "handbook/x.md" not in a.files()


def test_a_second_machine_with_runs_of_its_own_takes_the_remote_summary(
    machines: Callable[..., Machine],
) -> None:
    """Its init's empty summary.md conflicts with nothing: the remote's summary is taken."""
    a = machines("a")
    a.write("summary.md", "# Memory\n\n- the shared summary\n")
    a.push()
    b = machines("b")
    b.record("handbook/b.md", "project/b", "B's own.")
    result = b.pull()
    assert result["status"] == "merged" and result["conflicts"] == []
    assert b.files()["summary.md"] == "# Memory\n\n- the shared summary\n"


# -- rollback after another machine's changes ------------------------------------------------


def test_an_older_run_rolls_back_after_a_pull_when_paths_do_not_overlap(
    machines: Callable[..., Machine],
) -> None:
    a, b = shared(machines)
    older = b.record("handbook/mine.md", "project/mine", "B's.")
    a.record("handbook/theirs.md", "project/theirs", "A's.")
    a.push()
    b.pull()
    undone = b.ok(b.service.rollback(older["runId"], "ROLLBACK_MEMORY"))
    assert undone["changedPaths"] == ["handbook/mine.md"]
    assert "handbook/mine.md" not in b.files() and "handbook/theirs.md" in b.files()


def test_an_older_run_whose_paths_changed_since_is_a_rollback_conflict(
    machines: Callable[..., Machine],
) -> None:
    a, b = shared(machines)
    older = b.record("handbook/first.md", "project/first", "B changed it.")
    b.push()
    a.pull()
    a.record("handbook/first.md", "project/first", "A changed it after.")
    a.push()
    b.pull()
    assert b.error(b.service.rollback(older["runId"], "ROLLBACK_MEMORY")) == "rollback-conflict"
    assert "handbook/first.md" in str(b.service.last_error_message)
    assert b.files()["handbook/first.md"].endswith("A changed it after.\n")


def test_without_a_pull_the_rollback_rule_is_unchanged(machines: Callable[..., Machine]) -> None:
    a = machines("a")
    older = a.record("handbook/one.md", "project/one", "One.")
    a.record("handbook/two.md", "project/two", "Two.")
    assert a.error(a.service.rollback(older["runId"], "ROLLBACK_MEMORY")) == "rollback-conflict"
    assert a.service.last_error_message == (
        f"memory changed after run {older['runId']}; cannot roll it back"
    )


# -- a real smart-HTTP remote ------------------------------------------------------------------


def test_two_machines_through_a_smart_http_server(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    git(served, "init", "-q", "--bare", "--initial-branch=main", "memory.git")
    with git_http_server(served) as server:
        a, b = machines("a", remote=False), machines("b", remote=False)
        for machine in (a, b):
            machine.ok(machine.service.set_remote(server.url("memory.git")))
        a.record("handbook/a.md", "project/a", "A.")
        a.push()
        assert b.pull()["adopted"] is True
        b.record("handbook/b.md", "project/b", "B.")
        a.record("handbook/a2.md", "project/a2", "A2.")
        b.push()
        assert a.error(a.service.push()) == "push-rejected"
        assert a.pull()["status"] == "merged"
        a.push()
        before = len(server.requests)
        assert b.pull()["status"] == "fast-forward"
        assert b.pull()["status"] == "up-to-date"
        assert any(r.method == "POST" for r in server.requests[before:])
    assert a.files() == b.files()
    assert os.path.exists(served / "memory.git" / "refs" / "heads" / "main") or git(
        served / "memory.git", "rev-parse", "main"
    )


def _served(tmp_path: Path) -> Path:
    served = tmp_path / "served"
    served.mkdir()
    git(served, "init", "-q", "--bare", "--initial-branch=main", "memory.git")
    return served


def test_https_with_a_url_scoped_credential_helper_of_the_user(
    machines: Callable[..., Machine], tmp_path: Path, isolated_env: Path
) -> None:
    """What ``gh auth setup-git`` writes into the user's global config: an empty helper and
    the helper, scoped to the host. The URL holds no credentials; the server requires them."""
    served = _served(tmp_path)
    log = tmp_path / "helper.log"
    helper = tmp_path / "helper"
    helper.write_text(
        f"#!/bin/sh\ncat >/dev/null\necho \"$1\" >> '{log}'\n"
        'if [ "$1" = get ]; then echo username=me; echo password=s3cr3t-t0k3n; fi\n'
    )
    helper.chmod(0o755)
    with git_http_server(served, credentials=("me", "s3cr3t-t0k3n")) as server:
        with (isolated_env / ".gitconfig").open("a") as config:
            config.write(
                f'[credential "http://127.0.0.1:{server.port}"]\n\thelper =\n\thelper = !{helper}\n'
            )
        a, b = machines("a", remote=False), machines("b", remote=False)
        for machine in (a, b):
            assert (
                cli("--root", str(machine.root), "remote", "set", server.url("memory.git"))[0] == 0
            )
        a.record("handbook/a.md", "project/a", "A.")
        code, pushed = cli("--root", str(a.root), "push")
        assert (code, pushed["value"]["status"]) == (0, "pushed"), pushed
        code, pulled = cli("--root", str(b.root), "pull")
        assert (code, pulled["value"]["status"]) == (0, "fast-forward"), pulled
        assert {r.user for r in server.requests if r.status == 200} == {"me"}
    assert "handbook/a.md" in b.files()
    assert "get" in log.read_text().split()


def test_a_hostile_repository_config_with_an_http_remote_changes_nothing(
    machines: Callable[..., Machine], tmp_path: Path, isolated_env: Path
) -> None:
    """Everything the memory repository's own config could say about a transfer - where to
    push, which program uploads, a proxy, extra headers, a cookie file, TLS off, helpers,
    ssh, hooks - is ignored: the exchange goes to the configured URL, plainly."""
    served = _served(tmp_path)
    elsewhere = tmp_path / "elsewhere.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(elsewhere))
    marker = tmp_path / "ran"
    program = marker_script(tmp_path / "program", marker)
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\trepo-cookie\n")
    with git_http_server(served) as server:
        url = server.url("memory.git")
        a, b = machines("a", remote=False), machines("b", remote=False)
        for machine in (a, b):
            machine.ok(machine.service.set_remote(url))
            for key, value in (
                ("remote.origin.pushurl", str(elsewhere)),
                ("remote.origin.uploadpack", str(program)),
                ("remote.origin.receivepack", str(program)),
                ("remote.origin.proxy", "http://127.0.0.1:9"),
                ("remote.origin.vcs", "evil"),
                ("http.proxy", "http://127.0.0.1:9"),  # nothing listens there
                ("http.extraHeader", "X-Repo: plain"),
                (f"http.{url}.extraHeader", "X-Repo: scoped"),
                ("http.cookieFile", str(cookies)),
                ("http.sslVerify", "false"),
                ("credential.helper", f"!{program}"),
                (f"credential.{url}.helper", f"!{program}"),
                ("core.sshCommand", str(program)),
                ("core.askPass", str(program)),
                ("push.followTags", "true"),
            ):
                git(machine.root, "config", key, value)
            for hook in ("pre-push", "reference-transaction", "post-merge", "post-checkout"):
                marker_script(machine.root / ".git" / "hooks" / hook, marker)
        with (isolated_env / ".gitconfig").open("a") as config:
            config.write("[http]\n\textraHeader = X-User: mine\n")  # the user's own: kept
        a.record("handbook/a.md", "project/a", "A.")
        assert cli("--root", str(a.root), "push")[1]["value"]["status"] == "pushed"
        assert cli("--root", str(b.root), "pull")[1]["value"]["status"] == "fast-forward"
        b.record("handbook/b.md", "project/b", "B.")
        assert cli("--root", str(b.root), "push")[1]["value"]["status"] == "pushed"
        assert cli("--root", str(a.root), "pull")[1]["value"]["status"] == "fast-forward"
        requests = list(server.requests)
    assert requests and all(r.status == 200 for r in requests)
    for request in requests:
        assert "x-repo" not in request.headers and "cookie" not in request.headers, request
        assert request.headers.get("x-user") == "mine"
    assert a.files() == b.files() and "handbook/b.md" in a.files()
    assert git(elsewhere, "for-each-ref") == "", "nothing went to the pushurl"
    assert not marker.exists()


def test_three_machines_push_at_once_over_a_smart_http_server(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    """One push wins, the others are refused (``push-rejected``) and change nothing; each
    then pulls and pushes in turn, and all three end with one memory."""
    served = _served(tmp_path)
    with git_http_server(served) as server:
        trio = [machines(name, remote=False) for name in ("a", "b", "c")]
        for machine in trio:
            machine.ok(machine.service.set_remote(server.url("memory.git")))
        first = trio[0]
        first.record("handbook/shared.md", "project/shared", "Shared.")
        first.push()
        for machine in trio[1:]:
            machine.pull()
        for machine in trio:
            machine.record(
                f"handbook/{machine.root.name}.md",
                f"project/{machine.root.name}",
                machine.root.name.upper(),
            )
        answers: dict[str, tuple[int, dict[str, Any]]] = {}
        barrier = threading.Barrier(3)

        def push(machine: Machine) -> None:
            barrier.wait()
            answers[machine.root.name] = cli("--root", str(machine.root), "push")

        threads = [threading.Thread(target=push, args=(m,)) for m in trio]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        codes = sorted(code for code, _ in answers.values())
        assert codes == [0, 1, 1], answers
        losers = [m for m in trio if answers[m.root.name][0] == 1]
        for loser in losers:
            assert answers[loser.root.name][1]["error"]["code"] == "push-rejected"
        for loser in losers:
            assert loser.pull()["status"] == "merged"
            assert loser.push()["status"] == "pushed"
        for machine in trio:
            machine.pull()
    assert trio[0].files() == trio[1].files() == trio[2].files()
    assert {"handbook/a.md", "handbook/b.md", "handbook/c.md"} <= set(trio[0].files())
    git(served / "memory.git", "fsck", "--strict")


def test_the_users_git_ssh_command_carries_an_ssh_remote(
    machines: Callable[..., Machine],
    remote_repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``$GIT_SSH_COMMAND`` (stripped with every ``GIT_*`` from git's environment) is the
    user's ssh: here one that runs the remote command on this machine, as sshd would."""
    log = tmp_path / "ssh.log"
    fake = tmp_path / "fake-ssh"
    fake.write_text(
        f'#!/bin/sh\necho "$@" >> \'{log}\'\nfor last; do :; done\nexec sh -c "$last"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", f"{fake} -o User=me")
    a, b = machines("a", remote=False), machines("b", remote=False)
    for machine in (a, b):
        machine.ok(machine.service.set_remote(f"ssh://memory-host{remote_repo}"))
    a.record("handbook/a.md", "project/a", "A.")
    assert cli("--root", str(a.root), "push")[1]["value"]["status"] == "pushed"
    assert cli("--root", str(b.root), "pull")[1]["value"]["status"] == "fast-forward"
    assert "handbook/a.md" in b.files()
    calls = log.read_text()
    assert "-o User=me" in calls and "memory-host" in calls and "git-receive-pack" in calls

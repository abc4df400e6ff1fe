"""Capture never writes a record it could not read back (over 64 KiB), and a read-only
corpus or a full disk gets its own code, never internal-error, leaving nothing behind.

Capture runs in process where only its output matters, as the console script where a
file-system failure must be real: a read-only bind mount and a full tmpfs, each in a private
mount namespace (``unshare --mount``) that dies with the command, and a real RLIMIT_FSIZE
set on the child process. Nothing outside the test's process tree changes.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process
from dsh_test_support.commands import error

from dsh_compound import capture, inspect
from dsh_compound.errors import CompoundError
from dsh_compound.limits import LIMITS

HAN = "连接池耗尽导致登录超时"
run = in_process.runner("dsh-compound")
run_script = commands.runner("dsh-compound")  # the console script, as a process
SETUP_AND_EXEC = 'eval "$1"; shift; exec "$@"'


def oversized_draft(root: Path) -> dict[str, Any]:
    """A valid draft of at most 32 KiB whose record renders to more than 64 KiB.

    Every text is stored twice in a record (JSON and Markdown) and each of the 32 files
    adds a 64-character digest to both: this one is 32,465 bytes and renders to 70,214.
    """
    files = [f"src/module-{i:02d}/handler-{i:02d}.js" for i in range(LIMITS.files_max)]
    for relative in files:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(f"export const n = {relative!r};\n")
    return {
        "id": "oversized-lesson",
        "title": (HAN * 20)[:160],
        "tags": [(HAN * 8)[:62] + f"{i:02d}" for i in range(LIMITS.tags_max)],
        "problem": (HAN * 400)[:4000],
        "rootCause": (HAN * 400)[:4000],
        "resolution": (HAN * 400)[:1300],
        "whenToUse": (HAN * 200)[:200],
        "verification": {"command": "make test", "result": "passed"},
        "files": files,
    }


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


# --- a record over 64 KiB is never written ----------------------------------------------


def test_capture_refuses_a_draft_that_renders_over_64_kib_and_writes_nothing(
    workspace: Path, write_json: Any
) -> None:
    draft = oversized_draft(workspace)
    draft_path = write_json(workspace / "draft.json", draft)
    assert draft_path.stat().st_size <= LIMITS.draft_bytes  # a valid draft, by the contract
    result = run("capture", "--workspace", str(workspace), "--input", str(draft_path))
    failure = error(result)
    assert failure["code"] == "record-too-large"
    assert "would be 70214 bytes, over the 65536-byte record limit" in failure["message"]
    assert not (workspace / "docs").exists()  # not even the corpus directory


def test_replace_refuses_a_draft_that_renders_over_64_kib_and_keeps_the_record(
    workspace: Path, write_json: Any, corpus_of: Any
) -> None:
    draft = oversized_draft(workspace)
    small = capture(workspace, {**draft, "problem": "short", "rootCause": "short"})
    before = snapshot(corpus_of(workspace))
    draft_path = write_json(workspace / "draft.json", draft)
    args = ["--workspace", str(workspace), "--input", str(draft_path)]
    failure = error(run("capture", *args, "--replace", small["digest"]))
    assert failure["code"] == "record-too-large"
    assert snapshot(corpus_of(workspace)) == before  # no lock, no temporary file, same bytes
    assert inspect(workspace, "oversized-lesson")["digest"] == small["digest"]


def test_a_record_of_exactly_64_kib_is_written_and_read_back(workspace: Path) -> None:
    draft = oversized_draft(workspace)
    draft["resolution"] = "r"
    probe = capture(workspace, {**draft, "id": "pa"})
    room = LIMITS.record_bytes - len(Path(probe["path"]).read_bytes())
    assert room > 0
    # An extra ASCII character of whenToUse costs two bytes (JSON and Markdown), one of
    # the id one byte (JSON only): together they can fill the record to the last byte.
    draft["whenToUse"] = (HAN * 200)[:200] + "w" * (room // 2)
    result = capture(workspace, {**draft, "id": "pb" + "c" * (room % 2)})
    assert len(Path(result["path"]).read_bytes()) == LIMITS.record_bytes
    assert inspect(workspace, result["id"])["contentStatus"] == "consistent"
    with pytest.raises(CompoundError) as caught:
        capture(workspace, {**draft, "id": result["id"] + "d"})  # one byte more
    assert caught.value.code == "record-too-large"


# --- read-only corpus, full disk ----------------------------------------------------------


@functools.cache
def _namespace_problem() -> str | None:
    """Why a private mount namespace with mounts cannot be had here, or None if it can."""
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
            "mount -t tmpfs -o size=4k tmpfs /mnt",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        return f"no private mount namespace with mounts here: {probe.stderr.strip()}"
    return None


def in_mount_namespace(setup: str) -> tuple[str, ...]:
    """A prefix running the command in a private mount namespace after ``setup`` (sh)."""
    problem = _namespace_problem()
    if problem is not None:
        pytest.skip(problem)
    return (
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        SETUP_AND_EXEC,
        "sh",
        setup,
    )


def test_capture_into_a_read_only_corpus_is_read_only(
    workspace: Path, write_json: Any, make_draft: Any, corpus_of: Any
) -> None:
    first = capture(workspace, make_draft(id="existing"))
    corpus = corpus_of(workspace)
    before = snapshot(corpus)
    draft_path = write_json(workspace / "draft.json", make_draft())
    prefix = in_mount_namespace(f"mount --bind -o ro '{corpus}' '{corpus}'")
    args = ["--workspace", str(workspace), "--input", str(draft_path)]

    failure = error(run_script("capture", *args, prefix=prefix))
    assert failure["code"] == "read-only"
    assert "Read-only file system" in failure["message"]
    write_json(draft_path, make_draft(id="existing", title="Updated"))
    failure = error(run_script("capture", *args, "--replace", first["digest"], prefix=prefix))
    assert failure["code"] == "read-only"
    assert snapshot(corpus) == before
    # Reading needs no write access: the read-only corpus answers as usual.
    ws = ["--workspace", str(workspace)]
    for command in (["recall", *ws, "--query", "login"], ["inspect", *ws, "--id", "existing"]):
        done = run_script(*command, prefix=prefix)
        assert done.returncode == 0, done.stderr
        assert first["digest"] in done.stdout
    done = run_script("check", *ws, prefix=prefix)
    assert json.loads(done.stdout)["unchangedConsistent"]["ids"] == ["existing"]


def test_capture_under_a_read_only_workspace_cannot_create_the_corpus(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft())
    prefix = in_mount_namespace(f"mount --bind -o ro '{workspace}' '{workspace}'")
    result = run_script(
        "capture", "--workspace", str(workspace), "--input", str(draft_path), prefix=prefix
    )
    failure = error(result)
    assert failure["code"] == "read-only"
    assert "create docs/solutions/dsh-compound" in failure["message"]
    assert not (workspace / "docs").exists()


def test_capture_on_a_full_file_system_is_disk_full(
    workspace: Path, write_json: Any, make_draft: Any, corpus_of: Any
) -> None:
    corpus = corpus_of(workspace)
    corpus.mkdir(parents=True)
    draft_path = write_json(workspace / "draft.json", make_draft())
    # A 16 KiB tmpfs over the corpus, filled to the last byte before capture starts.
    setup = (
        f"mount -t tmpfs -o size=16k tmpfs '{corpus}' && "
        f"(dd if=/dev/zero of='{corpus}/filler' bs=1024 count=64 2>/dev/null; true)"
    )
    prefix = in_mount_namespace(setup)
    result = run_script(
        "capture", "--workspace", str(workspace), "--input", str(draft_path), prefix=prefix
    )
    failure = error(result)
    assert failure["code"] == "disk-full"
    assert failure["message"].startswith("disk full: ")
    assert "No space left on device" in failure["message"]
    assert os.listdir(corpus) == []  # the tmpfs vanished with its namespace; nothing leaked


def _file_size_limit(limit: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_capture_past_the_file_size_limit_is_disk_full_and_leaves_nothing(
    workspace: Path, write_json: Any, make_draft: Any, corpus_of: Any
) -> None:
    first = capture(workspace, make_draft(id="existing"))
    before = snapshot(corpus_of(workspace))
    draft_path = write_json(workspace / "draft.json", make_draft())
    args = ["--workspace", str(workspace), "--input", str(draft_path)]
    # Room for the ~100-byte lock file, not for the ~1.5 KiB record: the record write fails.
    limited = {"preexec_fn": _file_size_limit(512)}

    failure = error(run_script("capture", *args, **limited))
    assert failure["code"] == "disk-full"
    assert "File too large" in failure["message"]
    write_json(draft_path, make_draft(id="existing", title="Updated"))
    failure = error(run_script("capture", *args, "--replace", first["digest"], **limited))
    assert failure["code"] == "disk-full"
    # No partial record, no lock, no temporary file; the existing record is untouched.
    assert snapshot(corpus_of(workspace)) == before

"""What git calls a change, freshness must call a change.

Each case is checked against git itself: ``git diff HEAD -- <path>`` (content through the
path's conversions, modes and types; ``git status`` can say "modified" for a mere size change
without looking at the content) and, for line endings, ``git hash-object <path>`` are the
oracles; freshness and provenance capture must agree with them, while never running git's
conversions themselves.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dsh_knowledge.freshness import check_freshness
from dsh_knowledge.provenance import capture_file_provenance

if TYPE_CHECKING:
    from .conftest import Repo

MakeItem = Callable[..., dict[str, Any]]
MakeEvidence = Callable[..., dict[str, Any]]


def status_of(
    repo: Repo, commit: str, path: str, make_item: MakeItem, make_ev: MakeEvidence
) -> str:
    report = check_freshness(make_item([make_ev(commit, path)]), repo.path)
    status: str = report["evidence"][0]["status"]
    return status


def git_says_changed(repo: Repo, path: str) -> bool:
    # Plain git is fine here: the test builds its own repository, with no filter in it.
    return bool(repo.git("diff", "--raw", "HEAD", "--", path))


@pytest.mark.parametrize("attributes", ["* -text\n", "* binary\n", "*.py -crlf\n"])
def test_crlf_only_change_on_a_no_conversion_path_is_stale_under_autocrlf(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence, attributes: str
) -> None:
    repo.write(".gitattributes", attributes)
    commit = repo.commit("attributes")
    repo.git("config", "core.autocrlf", "true")
    (repo.path / "src/app.py").write_bytes(b"print('hello')\r\n")
    assert git_says_changed(repo, "src/app.py")
    assert status_of(repo, commit, "src/app.py", make_item, make_evidence) == "potentially_stale"
    assert capture_file_provenance(repo.path, "src/app.py") == {
        "status": "skipped",
        "reason": "working_tree_changed",
    }


def test_crlf_only_change_under_autocrlf_without_attributes_stays_current(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    # The counterpart: with no attribute in the way, autocrlf converts, so git says clean.
    commit = repo.head()
    repo.git("config", "core.autocrlf", "true")
    (repo.path / "src/app.py").write_bytes(b"print('hello')\r\n")
    assert not git_says_changed(repo, "src/app.py")
    assert status_of(repo, commit, "src/app.py", make_item, make_evidence) == "current"
    assert capture_file_provenance(repo.path, "src/app.py")["status"] == "captured"


# Work-tree contents, each the recorded LF content with CRLF line endings and a twist that
# git's conversion rules look at (NUL, lone CR, control bytes, CR before CRLF, DOS EOF).
CONTENTS: dict[str, bytes] = {
    "plain": b"one\r\ntwo\r\n",
    "nul": b"one\r\n\0two\r\n",
    "lone-cr": b"one\r\ntwo\rthree\r\n",
    "controls": b"a\r\n" + bytes(range(1, 8)) * 3 + b"\r\n",
    "cr-crlf": b"one\r\r\ntwo\r\n",
    "dos-eof": b"one\r\ntwo\r\n\x1a",
}


@pytest.mark.parametrize(
    "attributes",
    [
        "",
        "* -text\n",
        "* binary\n",
        "* text\n",
        "* text=auto\n",
        "* text=input\n",
        "* eol=crlf\n",
        "* eol=lf\n",
        "* text=auto eol=lf\n",
        "* -text eol=crlf\n",
        "* crlf\n",
        "* -crlf\n",
        "* crlf=input\n",
    ],
)
def test_line_ending_answers_agree_with_what_git_would_store(
    new_repo: Callable[..., Repo],
    make_item: MakeItem,
    make_evidence: MakeEvidence,
    attributes: str,
) -> None:
    repo = new_repo("eol")
    repo.git("config", "core.autocrlf", "false")
    repo.write(".gitattributes", attributes)
    for name, content in CONTENTS.items():
        (repo.path / f"{name}.txt").write_bytes(content.replace(b"\r\n", b"\n"))
    repo.git("add", "-A")
    for name in CONTENTS:
        # Record exactly the LF form, whatever the attributes would make of it.
        lf_blob = repo.git("hash-object", "-w", "--no-filters", f"{name}.txt")
        repo.git("update-index", "--cacheinfo", f"100644,{lf_blob},{name}.txt")
    repo.git("commit", "-q", "-m", "lf")
    commit = repo.head()
    for name, content in CONTENTS.items():
        (repo.path / f"{name}.txt").write_bytes(content)
    for autocrlf in ("false", "true", "input"):
        repo.git("config", "core.autocrlf", autocrlf)
        evidence = [make_evidence(commit, f"{name}.txt") for name in CONTENTS]
        report = check_freshness(make_item(evidence), repo.path)
        for name, entry in zip(CONTENTS, report["evidence"], strict=True):
            stored = repo.git("hash-object", f"{name}.txt")
            recorded = repo.git("rev-parse", f"{commit}:{name}.txt")
            expected = "current" if stored == recorded else "potentially_stale"
            assert entry["status"] == expected, (attributes, autocrlf, name)


def test_committed_symlink_replaced_by_its_target_text_is_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    os.symlink("src/app.py", repo.path / "link")
    commit = repo.commit("link")
    (repo.path / "link").unlink()
    (repo.path / "link").write_bytes(b"src/app.py")  # the blob git stored for the link
    assert repo.git("hash-object", "--no-filters", "link") == repo.git("rev-parse", "HEAD:link")
    assert git_says_changed(repo, "link")
    assert status_of(repo, commit, "link", make_item, make_evidence) == "potentially_stale"
    # Staged too (git add records a regular file with the same blob id).
    repo.git("add", "link")
    assert status_of(repo, commit, "link", make_item, make_evidence) == "potentially_stale"


def test_symlink_as_plain_file_is_current_when_core_symlinks_is_false(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    # How git checks out a symlink without symlink support: git calls that clean.
    os.symlink("src/app.py", repo.path / "link")
    commit = repo.commit("link")
    repo.git("config", "core.symlinks", "false")
    (repo.path / "link").unlink()
    (repo.path / "link").write_bytes(b"src/app.py")
    assert not git_says_changed(repo, "link")
    assert status_of(repo, commit, "link", make_item, make_evidence) == "current"


def test_mode_only_change_is_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    target = repo.path / "src/app.py"
    target.chmod(0o755)
    assert git_says_changed(repo, "src/app.py")
    assert status_of(repo, commit, "src/app.py", make_item, make_evidence) == "potentially_stale"
    assert capture_file_provenance(repo.path, "src/app.py")["status"] == "skipped"
    # An executable file recorded as executable, then made non-executable, is a change too.
    repo.git("add", "src/app.py")
    executable_commit = repo.commit("mode")
    assert status_of(repo, executable_commit, "src/app.py", make_item, make_evidence) == "current"
    target.chmod(0o644)
    assert status_of(repo, executable_commit, "src/app.py", make_item, make_evidence) == (
        "potentially_stale"
    )


def test_staged_mode_change_with_work_tree_restored_is_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("update-index", "--chmod=+x", "src/app.py")
    assert repo.git("diff", "--cached", "--name-only") == "src/app.py"
    assert status_of(repo, commit, "src/app.py", make_item, make_evidence) == "potentially_stale"


def test_mode_only_change_is_current_when_core_filemode_is_false(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("config", "core.fileMode", "false")
    (repo.path / "src/app.py").chmod(0o755)
    assert not git_says_changed(repo, "src/app.py")
    assert status_of(repo, commit, "src/app.py", make_item, make_evidence) == "current"


def test_unparseable_boolean_config_is_unverifiable_not_a_guess(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / "src/app.py").chmod(0o755)
    repo.git("config", "core.fileMode", "sometimes")  # git itself refuses to work
    report = check_freshness(make_item([make_evidence(commit, "src/app.py")]), repo.path)
    assert report["evidence"][0]["status"] == "unverifiable"


def test_sha256_repository_modes_are_read_too(
    new_repo: Callable[..., Repo], make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    repo = new_repo("sha256", "--object-format=sha256")
    repo.write("tool.sh", "echo hi\n")
    commit = repo.commit("tool")
    assert len(commit) == 64
    assert status_of(repo, commit, "tool.sh", make_item, make_evidence) == "current"
    (repo.path / "tool.sh").chmod(0o755)
    assert status_of(repo, commit, "tool.sh", make_item, make_evidence) == "potentially_stale"


@pytest.mark.parametrize("seed", [8, 9, 10])
@pytest.mark.parametrize("attributes", ["* text=auto\n", ""])
def test_git_binary_heuristic_is_reproduced_on_random_contents(
    new_repo: Callable[..., Repo],
    make_item: MakeItem,
    make_evidence: MakeEvidence,
    attributes: str,
    seed: int,
) -> None:
    # text=auto / autocrlf leave content git's heuristic calls binary alone: random mixes of
    # the bytes that heuristic counts (NUL, lone CR, controls, DOS EOF) against git's answer.
    rng = random.Random(seed)
    text = [b"a", b"bc", b"word ", b"\r\n", b"\n", b"\t"]
    rare = [b"\r", b"\0", b"\x01", b"\x1a", b"\x7f", b"\x1b"]

    def sample() -> bytes:
        # Mostly text, with a random number (often zero) of the bytes the heuristic counts.
        body = [rng.choice(text) for _ in range(rng.randint(1, 300))]
        for _ in range(rng.choice([0, 0, 1, 2, 5])):
            body.insert(rng.randrange(len(body) + 1), rng.choice(rare))
        return b"".join(body) + b"\r\n"

    contents = {f"f{n}.txt": sample() for n in range(16)}  # one report checks 16
    repo = new_repo("random")
    repo.git("config", "core.autocrlf", "false")
    repo.write(".gitattributes", attributes)
    for name, content in contents.items():
        (repo.path / name).write_bytes(content.replace(b"\r\n", b"\n"))
    repo.git("add", "-A")
    for name in contents:
        lf_blob = repo.git("hash-object", "-w", "--no-filters", name)
        repo.git("update-index", "--cacheinfo", f"100644,{lf_blob},{name}")
    repo.git("commit", "-q", "-m", "lf")
    commit = repo.head()
    repo.git("config", "core.autocrlf", "true")
    for name, content in contents.items():
        (repo.path / name).write_bytes(content)
    report = check_freshness(
        make_item([make_evidence(commit, name) for name in contents]), repo.path
    )
    for name, entry in zip(contents, report["evidence"], strict=True):
        stored = repo.git("hash-object", name)
        expected = (
            "current"
            if stored == repo.git("rev-parse", f"{commit}:{name}")
            else ("potentially_stale")
        )
        assert entry["status"] == expected, (entry, contents[name])
    # The sample exercises both sides of the heuristic.
    assert {e["status"] for e in report["evidence"]} == {"current", "potentially_stale"}


def test_repository_whose_path_is_not_utf8_is_compared_through_the_library(
    tmp_path: Path, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    # The CLI refuses such a --repo (invalid-path); the library compares the right directory.
    from .conftest import init_repo

    repo = init_repo(tmp_path / os.fsdecode(b"caf\xe9-repo"))
    repo.write("a.txt", "one\n")
    commit = repo.commit("a")
    assert status_of(repo, commit, "a.txt", make_item, make_evidence) == "current"
    repo.write("a.txt", "two\n")
    assert status_of(repo, commit, "a.txt", make_item, make_evidence) == "potentially_stale"

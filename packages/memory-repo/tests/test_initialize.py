from __future__ import annotations

import stat
from pathlib import Path

from dsh_test_support import home
from dsh_test_support.gitcmd import git

from dsh_memory.store.initialize import INITIAL_COMMIT_MESSAGE, initialize_repository


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_init_creates_scaffold_with_owner_only_modes(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    assert _mode(root) == 0o700
    assert _mode(root / "summary.md") == 0o600
    for name in ("handbook", "rollouts", "archive", ".sync"):
        assert (root / name).is_dir()
    assert (root / "README.md").read_text().startswith("# DPSK memory")
    assert (root / ".last-sync").is_file()


def test_init_gitignore_lists_private_state(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    lines = (root / ".sync" / ".gitignore").read_text().splitlines()
    assert lines[:6] == [
        "operation.lock",
        "active-run.json",
        "previews/",
        "usage.json",
        "usage.lock/",
        ".usage.*.tmp",
    ]


def test_init_first_commit_has_exact_message(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    assert git(root, "log", "--format=%s").strip() == INITIAL_COMMIT_MESSAGE
    assert git(root, "status", "--porcelain").strip() == ""


def test_init_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    first = initialize_repository(root)
    (root / "rollouts").rmdir()
    second = initialize_repository(root)
    assert first["created"] is True
    assert second == {"root": str(root), "created": False, "headCommit": first["headCommit"]}
    assert (root / "rollouts").is_dir()


def test_init_keeps_an_existing_summary(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    (root / "summary.md").write_text("kept\n")
    initialize_repository(root)
    assert git(root, "show", "HEAD:summary.md") == "kept\n"


def test_init_under_a_file_is_init_failed(tmp_path: Path) -> None:
    from dsh_memory.service import MemoryService

    (tmp_path / "file").write_text("x")
    result = MemoryService(tmp_path / "file" / "mem").init()
    assert result == {"ok": False, "error": {"code": "init-failed"}}


def test_init_on_symlinked_root_is_unsafe_layout(tmp_path: Path) -> None:
    from dsh_memory.service import MemoryService

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert MemoryService(tmp_path / "link").init()["error"] == {"code": "unsafe-layout"}
    assert not (tmp_path / "real" / ".git").exists()


def test_init_without_git_identity_sets_repository_local_identity(
    tmp_path: Path, isolated_env: Path
) -> None:
    # A fresh machine: git knows no author. The earlier tool's init sets a local identity.
    (isolated_env / ".gitconfig").write_text("[user]\n\tname =\n\temail =\n")
    root = tmp_path / "mem"
    result = initialize_repository(root)
    assert result["created"] is True
    assert git(root, "config", "--local", "user.name").strip() == "DPSK Memory"
    assert git(root, "config", "--local", "user.email").strip() == "dpsk-memory@localhost"
    assert git(root, "log", "--format=%an <%ae>").strip() == "DPSK Memory <dpsk-memory@localhost>"


def test_init_keeps_an_existing_identity(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    initialize_repository(root)
    assert git(root, "config", "--local", "user.name", check=False).strip() == ""
    assert git(root, "log", "--format=%an").strip() == home.IDENTITY[0]  # the test home's

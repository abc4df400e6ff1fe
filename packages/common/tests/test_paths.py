from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_common.errors import InvalidPathError, SymlinkRejectedError, WorkspaceError
from dsh_common.paths import (
    check_no_symlinks,
    is_windows_device_name,
    resolve_in_workspace,
    resolve_workspace,
    to_relative,
    validate_relative_path,
)

CORPUS = "docs/solutions/dsh-compound"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("src/login.js", "src/login.js"),
        ("src\\login.js", "src/login.js"),
        ("README", "README"),
        ("a/b/c.d.e", "a/b/c.d.e"),
        ("docs/solutions/other.md", "docs/solutions/other.md"),
        ("连接池/说明.md", "连接池/说明.md"),
        ("console.js", "console.js"),  # starts like CON but is not a device name
        ("com10.txt", "com10.txt"),
    ],
)
def test_validate_accepts_and_normalises(raw: str, expected: str) -> None:
    assert validate_relative_path(raw, forbidden_prefixes=[CORPUS]) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "/etc/passwd",
        "../outside",
        "a/../../b",
        "a/..",
        "C:/Windows",
        "c:relative",
        "\\\\server\\share\\x",
        "//server/share",
        "a\x00b",
        "a\nb",
        "CON",
        "nul.txt",
        "com1",
        "LPT9",
        "src/Aux.tar.gz",
        "COM\u00b9",
        ".git/config",
        "src/.GIT/hooks",
        ".ssh/id_rsa",
        ".codex/x",
        ".claude/settings.json",
        ".agents/x",
        ".dsh/x",
        "a/./b",
        "./a",
        "a//b",
        "a/",
        "trailing.",
        "trailing ",
        "stream:data",
        "pipe|name",
        "docs/solutions/dsh-compound/x.md",
        "DOCS/Solutions/DSH-compound",
    ],
)
def test_validate_rejects(raw: str) -> None:
    with pytest.raises(InvalidPathError) as caught:
        validate_relative_path(raw, forbidden_prefixes=[CORPUS])
    assert caught.value.code == "invalid-path"


def test_caller_chooses_forbidden_names() -> None:
    assert validate_relative_path(".git/x", forbidden_names=[]) == ".git/x"
    with pytest.raises(InvalidPathError):
        validate_relative_path("sync/x", forbidden_names=["SYNC"])


@pytest.mark.parametrize("name", ["CON", "con", "Nul.txt", "aux.", "COM9", "lpt1.log", "CONIN$"])
def test_device_names(name: str) -> None:
    assert is_windows_device_name(name)


@pytest.mark.parametrize("name", ["cons", "icon", "com", "lpt", "nullable.txt", "com10"])
def test_not_device_names(name: str) -> None:
    assert not is_windows_device_name(name)


def test_workspace_must_exist_and_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        resolve_workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError):
        resolve_workspace(tmp_path / "file")


def test_symlinked_workspace_root_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SymlinkRejectedError):
        resolve_workspace(tmp_path / "link")


def test_ancestor_symlink_maps_lexical_and_canonical_paths(tmp_path: Path) -> None:
    (tmp_path / "real" / "ws" / "src").mkdir(parents=True)
    (tmp_path / "real" / "ws" / "src" / "a.py").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    ws = resolve_workspace(tmp_path / "alias" / "ws")
    assert ws.canonical == (tmp_path / "real" / "ws").resolve()
    assert ws.lexical == tmp_path / "alias" / "ws"
    lexical = f"{tmp_path}/alias/ws/src/a.py"
    canonical = f"{ws.canonical}/src/a.py"
    for spelling in (lexical, canonical, "src/a.py", "src\\a.py"):
        relative, absolute = resolve_in_workspace(ws, spelling)
        assert relative == "src/a.py"
        assert absolute == ws.canonical / "src" / "a.py"


@pytest.mark.parametrize("raw", ["/etc/passwd", "{root}/../outside", "{root}", "{root}/.git/x"])
def test_absolute_paths_outside_or_odd_are_rejected(tmp_path: Path, raw: str) -> None:
    ws = resolve_workspace(tmp_path)
    with pytest.raises(InvalidPathError):
        to_relative(ws, raw.format(root=tmp_path))


def test_symlink_inside_pointing_inside_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "src")
    (tmp_path / "file-link.py").symlink_to(tmp_path / "src" / "a.py")
    ws = resolve_workspace(tmp_path)
    with pytest.raises(SymlinkRejectedError) as caught:
        resolve_in_workspace(ws, "alias/a.py")
    assert caught.value.details["link"] == "alias"
    with pytest.raises(SymlinkRejectedError):
        resolve_in_workspace(ws, "file-link.py")


def test_dangling_and_outward_symlinks_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "out").symlink_to(tmp_path)
    (tmp_path / "ws" / "dangling").symlink_to(tmp_path / "nowhere")
    ws = resolve_workspace(tmp_path / "ws")
    for raw in ("out/ws", "dangling", "dangling/x"):
        with pytest.raises(SymlinkRejectedError):
            resolve_in_workspace(ws, raw)


def test_missing_paths_are_accepted_but_reported(tmp_path: Path) -> None:
    ws = resolve_workspace(tmp_path)
    assert check_no_symlinks(ws, "new/dir/file.md") is False
    (tmp_path / "file.md").write_text("x")
    assert check_no_symlinks(ws, "file.md") is True


def test_component_through_a_file_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    ws = resolve_workspace(tmp_path)
    with pytest.raises(InvalidPathError):
        resolve_in_workspace(ws, "file/child")


# -- property: nothing accepted ever escapes the workspace or passes through a link ----------

_PIECES = st.sampled_from(
    [
        "a",
        "b",
        "src",
        "link",
        "out",
        "..",
        ".",
        "",
        "CON",
        "nul.txt",
        ".git",
        "C:",
        "x y",
        "é",
        "连接",
    ]
)
_SEPARATORS = st.sampled_from(["/", "\\", "//"])


@st.composite
def _raw_paths(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_PIECES, min_size=1, max_size=5))
    seps = [draw(_SEPARATORS) for _ in parts]
    text = "".join(p + s for p, s in zip(parts, seps, strict=True))[: -len(seps[-1])]
    prefix = draw(st.sampled_from(["", "/", "\\", "{root}/", "{canon}/", "{root}/../"]))
    return prefix + text


@pytest.fixture(scope="module")
def tricky_workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("prop")
    (base / "real" / "ws" / "a" / "b").mkdir(parents=True)
    (base / "real" / "ws" / "src").mkdir()
    (base / "real" / "ws" / "src" / "a").write_text("x")
    (base / "real" / "ws" / "link").symlink_to(base / "real" / "ws" / "a")
    (base / "real" / "ws" / "a" / "out").symlink_to(base)
    (base / "alias").symlink_to(base / "real")
    return base / "alias" / "ws", base


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_raw_paths())
def test_accepted_paths_stay_inside_and_never_cross_a_link(
    tricky_workspace: tuple[Path, Path], raw: str
) -> None:
    lexical_root, _ = tricky_workspace
    ws = resolve_workspace(lexical_root)
    raw = raw.format(root=lexical_root.as_posix(), canon=ws.canonical.as_posix())
    try:
        relative, absolute = resolve_in_workspace(ws, raw)
    except (InvalidPathError, SymlinkRejectedError):
        return
    root = str(ws.canonical)
    assert os.path.normpath(absolute).startswith(root + os.sep)
    current = ws.canonical
    for part in relative.split("/"):
        assert part not in ("", ".", "..")
        current = current / part
        if current.exists() or current.is_symlink():
            assert not current.is_symlink()
    if absolute.exists():
        assert os.path.realpath(absolute).startswith(root + os.sep)


def test_device_names_are_full_matches_not_prefix_matches_with_a_newline() -> None:
    # A name must match the device pattern in full: "$" would also accept "nul\n" as the
    # device NUL. The control character is what makes such a name invalid, and validation
    # still says so.
    from dsh_common.errors import InvalidPathError
    from dsh_common.paths import is_windows_device_name, validate_relative_path

    assert is_windows_device_name("nul")
    assert is_windows_device_name("COM1.txt")
    assert not is_windows_device_name("nul\n")
    with pytest.raises(InvalidPathError):
        validate_relative_path("docs/nul\n")

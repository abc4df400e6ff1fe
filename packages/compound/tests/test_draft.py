"""Draft validation, ID rules and reading the draft input file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common.paths import resolve_workspace
from dsh_compound import read_draft_input, validate_draft, validate_id
from dsh_compound.errors import (
    DraftTooLargeError,
    InputNotFoundError,
    InvalidDraftError,
    InvalidIdError,
    InvalidPathError,
    SymlinkRejectedError,
)
from dsh_compound.limits import LIMITS


@pytest.mark.parametrize("good", ["a", "login-timeout", "x1-2y", "a" * 100, "con-pool", "nul1"])
def test_validate_id_accepts_kebab_slugs(good: str) -> None:
    assert validate_id(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", "Login", "a--b", "-a", "a-", "a_b", "a.b", "a b", "a" * 101, "登录", "a/b", 7, None],
)
def test_validate_id_rejects_non_slugs(bad: Any) -> None:
    with pytest.raises(InvalidIdError):
        validate_id(bad)


@pytest.mark.parametrize("device", ["con", "prn", "aux", "nul", "com1", "lpt9", "com0"])
def test_validate_id_rejects_windows_device_names(device: str) -> None:
    with pytest.raises(InvalidIdError, match="device"):
        validate_id(device)


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failure
@given(st.from_regex(r"\A[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}\Z"))
def test_validate_id_accepts_every_generated_slug_that_is_not_a_device(slug: str) -> None:
    if slug in {"con", "prn", "aux", "nul"} or (slug[:3] in {"com", "lpt"} and len(slug) == 4):
        return
    assert validate_id(slug) == slug


def test_validate_draft_keeps_spec_fields_in_order_and_drops_unknown(
    make_draft: Any,
) -> None:
    clean = validate_draft(make_draft(extra="x", notes={"a": 1}))
    assert list(clean) == [
        "id",
        "title",
        "tags",
        "problem",
        "rootCause",
        "resolution",
        "whenToUse",
        "verification",
        "files",
    ]
    assert list(clean["verification"]) == ["command", "result"]


def test_validate_draft_drops_unknown_verification_fields(make_draft: Any) -> None:
    draft = make_draft(verification={"command": "c", "result": "r", "executedByHelper": True})
    assert validate_draft(draft)["verification"] == {"command": "c", "result": "r"}


@pytest.mark.parametrize(
    "field", ["title", "tags", "problem", "rootCause", "resolution", "whenToUse", "verification"]
)
def test_validate_draft_requires_every_field(make_draft: Any, field: str) -> None:
    draft = make_draft()
    del draft[field]
    with pytest.raises(InvalidDraftError, match=field):
        validate_draft(draft)


def test_validate_draft_requires_files(make_draft: Any) -> None:
    draft = make_draft()
    del draft["files"]
    with pytest.raises(InvalidDraftError, match="files"):
        validate_draft(draft)


def test_validate_draft_requires_id(make_draft: Any) -> None:
    draft = make_draft()
    del draft["id"]
    with pytest.raises(InvalidDraftError, match="id"):
        validate_draft(draft)


def test_validate_draft_reports_a_bad_id_with_its_own_code(make_draft: Any) -> None:
    with pytest.raises(InvalidIdError):
        validate_draft(make_draft(id="Bad Id"))


def test_validate_draft_rejects_non_objects() -> None:
    with pytest.raises(InvalidDraftError):
        validate_draft(["not", "an", "object"])


@pytest.mark.parametrize(
    ("field", "limit"),
    [
        ("title", 160),
        ("problem", 4000),
        ("rootCause", 4000),
        ("resolution", 4000),
        ("whenToUse", 2000),
    ],
)
def test_validate_draft_enforces_text_limits_exactly(
    make_draft: Any, field: str, limit: int
) -> None:
    assert validate_draft(make_draft(**{field: "x" * limit}))[field] == "x" * limit
    with pytest.raises(InvalidDraftError, match=field):
        validate_draft(make_draft(**{field: "x" * (limit + 1)}))


def test_validate_draft_counts_length_in_javascript_characters(make_draft: Any) -> None:
    # An astral emoji is two UTF-16 code units: 80 of them are 160 JavaScript characters.
    assert validate_draft(make_draft(title="😀" * 80))["title"] == "😀" * 80
    with pytest.raises(InvalidDraftError, match="title"):
        validate_draft(make_draft(title="😀" * 80 + "x"))
    # A CJK character is one unit.
    assert validate_draft(make_draft(title="超" * 160))["title"] == "超" * 160


def test_validate_draft_enforces_verification_field_limits(make_draft: Any) -> None:
    ok = {"command": "c" * 2000, "result": "r" * 2000}
    assert validate_draft(make_draft(verification=ok))["verification"] == ok
    with pytest.raises(InvalidDraftError, match="command"):
        validate_draft(make_draft(verification={"command": "c" * 2001, "result": "r"}))


@pytest.mark.parametrize("value", ["", "   ", "\n\t"])
def test_validate_draft_rejects_empty_text(make_draft: Any, value: str) -> None:
    with pytest.raises(InvalidDraftError, match="problem"):
        validate_draft(make_draft(problem=value))


def test_validate_draft_tag_count_is_one_to_twelve(make_draft: Any) -> None:
    assert len(validate_draft(make_draft(tags=[f"t{i}" for i in range(12)]))["tags"]) == 12
    with pytest.raises(InvalidDraftError, match="tags"):
        validate_draft(make_draft(tags=[]))
    with pytest.raises(InvalidDraftError, match="tags"):
        validate_draft(make_draft(tags=[f"t{i}" for i in range(13)]))


def test_validate_draft_tag_length_and_emptiness(make_draft: Any) -> None:
    assert validate_draft(make_draft(tags=["t" * 64]))["tags"] == ["t" * 64]
    with pytest.raises(InvalidDraftError, match=r"tags\[0\]"):
        validate_draft(make_draft(tags=["t" * 65]))
    with pytest.raises(InvalidDraftError, match=r"tags\[1\]"):
        validate_draft(make_draft(tags=["ok", " "]))


def test_validate_draft_file_count_is_one_to_thirty_two(make_draft: Any) -> None:
    files = [f"src/f{i}.js" for i in range(32)]
    assert validate_draft(make_draft(files=files))["files"] == files
    with pytest.raises(InvalidDraftError, match="files"):
        validate_draft(make_draft(files=[]))
    with pytest.raises(InvalidDraftError, match="files"):
        validate_draft(make_draft(files=[*files, "src/f32.js"]))


def test_validate_draft_lists_every_problem_at_once(make_draft: Any) -> None:
    with pytest.raises(InvalidDraftError) as caught:
        validate_draft(make_draft(title="", problem=3, tags=[]))
    assert {"title", "problem", "tags"} <= {p.split()[0] for p in caught.value.details["problems"]}


def test_validate_draft_normalizes_windows_backslashes(make_draft: Any) -> None:
    clean = validate_draft(make_draft(files=["src\\login.js", "tests\\login.test.js"]))
    assert clean["files"] == ["src/login.js", "tests/login.test.js"]


@pytest.mark.parametrize(
    "bad",
    [
        "../outside.js",
        "src/../../x",
        "/etc/passwd",
        "C:\\Windows\\x",
        "\\\\server\\share\\x",
        ".git/config",
        "src/.GIT/x",
        ".ssh/id_rsa",
        ".dsh/x",
        ".claude/settings.json",
        "docs/solutions/dsh-compound/other.md",
        "docs/solutions/dsh-compound",
        "DOCS/Solutions/dsh-compound/x.md",
        "src/CON",
        "src/nul.txt",
        "src/com1.log",
        "src/trailing.",
        "src/trailing ",
        "src/a:b",
        "src/a?b",
        "src/\x00x",
        "",
    ],
)
def test_validate_draft_rejects_unsafe_paths(make_draft: Any, bad: str) -> None:
    with pytest.raises((InvalidPathError, InvalidDraftError)):
        validate_draft(make_draft(files=[bad]))


def test_validate_draft_maps_absolute_path_inside_workspace(
    make_draft: Any, workspace: Path
) -> None:
    selected = resolve_workspace(workspace)
    clean = validate_draft(
        make_draft(files=[str(workspace / "src" / "login.js")]), workspace=selected
    )
    assert clean["files"] == ["src/login.js"]


def test_validate_draft_maps_paths_under_a_symlinked_ancestor(
    make_draft: Any, workspace: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tmp_path)  # an ancestor of the workspace may be a link
    lexical = alias / "ws"
    selected = resolve_workspace(lexical)
    draft = make_draft(
        files=[str(lexical / "src/login.js"), str(workspace / "tests/login.test.js")]
    )
    assert validate_draft(draft, workspace=selected)["files"] == [
        "src/login.js",
        "tests/login.test.js",
    ]


def test_validate_draft_rejects_absolute_path_outside_workspace(
    make_draft: Any, workspace: Path, tmp_path: Path
) -> None:
    with pytest.raises(InvalidPathError):
        validate_draft(
            make_draft(files=[str(tmp_path / "x.js")]), workspace=resolve_workspace(workspace)
        )


def test_validate_draft_rejects_duplicate_paths(make_draft: Any) -> None:
    with pytest.raises(InvalidDraftError, match="more than once"):
        validate_draft(make_draft(files=["src/login.js", "src\\login.js"]))


def test_read_draft_input_parses_a_file_inside_the_workspace(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    path = write_json(workspace / "draft.json", make_draft())
    assert read_draft_input(workspace, path)["id"] == "login-timeout"


def test_read_draft_input_accepts_a_leading_bom(workspace: Path) -> None:
    path = workspace / "draft.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "x"}')
    assert read_draft_input(workspace, path) == {"id": "x"}


def test_read_draft_input_resolves_relative_paths_from_the_current_directory(
    workspace: Path, write_json: Any, make_draft: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(workspace / "src" / "draft.json", make_draft())
    monkeypatch.chdir(workspace / "src")
    assert read_draft_input(workspace, "draft.json")["id"] == "login-timeout"


def test_read_draft_input_refuses_a_file_outside_the_workspace(
    workspace: Path, tmp_path: Path, write_json: Any, make_draft: Any
) -> None:
    path = write_json(tmp_path / "draft.json", make_draft())
    with pytest.raises(InvalidPathError):
        read_draft_input(workspace, path)


def test_read_draft_input_refuses_a_symlinked_input(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    target = write_json(workspace / "real.json", make_draft())
    (workspace / "link.json").symlink_to(target)
    with pytest.raises(SymlinkRejectedError):
        read_draft_input(workspace, workspace / "link.json")


def test_read_draft_input_refuses_an_input_in_an_internal_directory(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    (workspace / ".git").mkdir()
    path = write_json(workspace / ".git" / "draft.json", make_draft())
    with pytest.raises(InvalidPathError):
        read_draft_input(workspace, path)


def test_read_draft_input_enforces_the_32_kib_bound(workspace: Path) -> None:
    path = workspace / "draft.json"
    body = '{"id": "x", "pad": "'
    path.write_text(body + "p" * (LIMITS.draft_bytes - len(body) - 2) + '"}')
    assert os.path.getsize(path) == LIMITS.draft_bytes
    assert read_draft_input(workspace, path)["id"] == "x"
    path.write_text(body + "p" * (LIMITS.draft_bytes - len(body) - 1) + '"}')
    with pytest.raises(DraftTooLargeError):
        read_draft_input(workspace, path)


def test_read_draft_input_reports_a_missing_file(workspace: Path) -> None:
    with pytest.raises(InputNotFoundError):
        read_draft_input(workspace, workspace / "absent.json")


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe{}", b""])
def test_read_draft_input_rejects_malformed_json(workspace: Path, content: bytes) -> None:
    path = workspace / "draft.json"
    path.write_bytes(content)
    with pytest.raises(InvalidDraftError):
        read_draft_input(workspace, path)


@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "..", ".", "", "CON", ".git", "b c", "x.", "é", "\\"]),
        min_size=1,
        max_size=5,
    )
)
def test_accepted_paths_never_escape_or_name_internal_directories(parts: list[str]) -> None:
    raw = "/".join(parts)
    try:
        clean = validate_draft(
            {**DRAFT_BASE, "files": [raw]},
        )["files"][0]
    except (InvalidPathError, InvalidDraftError):
        return
    components = clean.split("/")
    assert ".." not in components and "" not in components and "." not in components
    assert not clean.startswith("/")
    assert all(c.casefold() != ".git" and c.upper() != "CON" for c in components)


DRAFT_BASE: dict[str, Any] = {
    "id": "x",
    "title": "t",
    "tags": ["t"],
    "problem": "p",
    "rootCause": "r",
    "resolution": "r",
    "whenToUse": "w",
    "verification": {"command": "c", "result": "r"},
}

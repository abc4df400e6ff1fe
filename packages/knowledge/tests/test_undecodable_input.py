"""Input that is not text: command-line arguments that are not UTF-8 (the installed command,
a real process, given the bytes a shell can pass), a database path with undecodable bytes
and text with lone surrogates through the library. Each is refused with its code and the
bytes escaped in the message; no database, directory or file is created or touched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .command_helpers import digest, fails, ok


def _tree(root: Path) -> list[tuple[str, str]]:
    return sorted(
        (os.fsdecode(p.relative_to(root)), digest(p) if p.is_file() else "dir")
        for p in root.rglob("*")
    )


@pytest.mark.parametrize(
    ("argv", "code", "shown"),
    [
        ([b"--db", b"@/\xffx", b"list"], "invalid-path", "--db '@/\\xffx'"),
        ([b"--db=@/\xffx", b"list"], "invalid-path", "--db '@/\\xffx'"),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/srv/\xffnope",
                b"--type",
                b"fact",
                b"--content",
                b"x",
            ],
            "invalid-path",
            "--workspace '/srv/\\xffnope'",
        ),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/w",
                b"--type",
                b"fact",
                b"--content",
                b"x",
                b"--repo",
                b"@/\xffrepo",
            ],
            "invalid-path",
            "--repo '@/\\xffrepo'",
        ),
        ([b"--db", b"@db", b"freshness", b"k", b"--repo", b"@/\xffr"], "invalid-path", "--repo"),
        ([b"--db", b"@db", b"health", b"k", b"--repo=@/\xffr"], "invalid-path", "--repo"),
        (
            [
                b"--db",
                b"@db",
                b"add",
                b"--workspace",
                b"/w",
                b"--type",
                b"fact",
                b"--content",
                b"caf\xe9",
            ],
            "invalid-arguments",
            "'caf\\xe9'",
        ),
        ([b"--db", b"@db", b"search", b"\xff\xfe"], "invalid-arguments", "'\\xff\\xfe'"),
        ([b"--db", b"@db", b"list", b"--workspace", b"\xff"], "invalid-path", "--workspace"),
        ([b"--db", b"@db", b"get", b"id-\x80"], "invalid-arguments", "'id-\\x80'"),
    ],
)
def test_undecodable_arguments_are_refused_with_bytes_escaped_and_nothing_changes(
    seeded_store: str, tmp_path: Path, argv: list[bytes], code: str, shown: str
) -> None:
    base = os.fsencode(tmp_path)
    # "@db" is the store (a path or a URL, which may hold "@" itself), any other "@" tmp_path.
    real = [
        os.fsencode(seeded_store).join(a.replace(b"@", base) for a in arg.split(b"@db"))
        for arg in argv
    ]
    before = _tree(tmp_path), ok("--db", seeded_store, "list")
    error = fails(*real, process=True)
    assert error["code"] == code
    assert shown.replace("@", str(tmp_path)) in error["message"]
    # No database, directory or file created or touched; the store holds what it held.
    assert (_tree(tmp_path), ok("--db", seeded_store, "list")) == before


def test_library_database_path_with_undecodable_bytes_is_invalid_input(tmp_path: Path) -> None:
    from dsh_knowledge.errors import ValidationError

    target = tmp_path / "new" / os.fsdecode(b"\xffx.sqlite")
    with pytest.raises(ValidationError, match=r"\\xff"):
        KnowledgeStore(target)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"scope": {"workspace": "/w\udcff"}},
        {"scope": {"workspace": "/w\ud800"}},
        {"content": "caf\udce9"},
        {
            "evidence": [
                {"type": "session", "source": "s\udcff", "timestamp": "2026-01-01T00:00:00Z"}
            ]
        },
    ],
)
def test_library_text_with_lone_surrogates_is_invalid_input_and_stores_nothing(
    seeded_store: str, change: dict[str, Any]
) -> None:
    from dsh_knowledge.errors import ValidationError

    spec: dict[str, Any] = {"type": "fact", "content": "x", "scope": {"workspace": "/w"}}
    spec.update(change)
    with KnowledgeStore(seeded_store) as store:
        repository = KnowledgeRepository(store)
        with pytest.raises(ValidationError, match="undecodable"):
            repository.create(**spec)
        with pytest.raises(ValidationError, match="undecodable"):
            repository.search("\udcff")
        assert [i["content"] for i in repository.list()] == ["The seed item."]

"""Shared fixtures: an isolated home, a workspace with real source files, draft builders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import build_metadata, render_record, sha256


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, DSH_HOME and git's global config into tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with two real source files."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
    (root / "tests" / "login.test.js").write_text("test('login', () => {});\n")
    return root


def make_draft(**overrides: Any) -> dict[str, Any]:
    """The example draft of the contract (docs/compatibility/compound.md), with fields replaced by
    ``overrides``."""
    draft: dict[str, Any] = {
        "id": "login-timeout",
        "title": "Login requests time out in the test environment",
        "tags": ["login", "timeout"],
        "problem": "Describe the observed failure.",
        "rootCause": "Describe the investigated cause and its limits.",
        "resolution": "Describe the verified resolution without overstating scope.",
        "whenToUse": "Describe the conditions in which this lesson applies.",
        "verification": {
            "command": "node --test tests/login.test.js",
            "result": "The author reports that the regression test passed.",
        },
        "files": ["src/login.js", "tests/login.test.js"],
    }
    draft.update(overrides)
    return draft


@pytest.fixture
def draft() -> dict[str, Any]:
    return make_draft()


def corpus_of(root: Path) -> Path:
    return root.joinpath(*CORPUS_DIRECTORY.split("/"))


def write_record(root: Path, **overrides: Any) -> Path:
    """Write a consistent record straight to the corpus (fast setup for scan tests).

    File digests are those of the current source bytes, so evidence starts unchanged.
    """
    draft = make_draft(**overrides)
    digests = [sha256((root / path).read_bytes()) for path in draft["files"]]
    metadata = build_metadata(
        draft, digests, created_at="2026-01-02T03:04:05.006Z", updated_at="2026-01-02T03:04:05.006Z"
    )
    corpus = corpus_of(root)
    corpus.mkdir(parents=True, exist_ok=True)
    location = corpus / f"{draft['id']}.md"
    location.write_bytes(render_record(metadata))
    return location


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``dsh-compound`` as a real process (the module entry point of this venv)."""
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-m", "dsh_compound.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.fixture(name="make_draft")
def make_draft_fixture() -> Callable[..., dict[str, Any]]:
    return make_draft


@pytest.fixture(name="write_record")
def write_record_fixture() -> Callable[..., Path]:
    return write_record


@pytest.fixture(name="corpus_of")
def corpus_of_fixture() -> Callable[[Path], Path]:
    return corpus_of


@pytest.fixture(name="write_json")
def write_json_fixture() -> Callable[[Path, Any], Path]:
    return write_json


@pytest.fixture(name="run_cli")
def run_cli_fixture() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_cli

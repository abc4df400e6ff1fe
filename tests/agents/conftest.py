"""The real Claude Code and Codex CLIs, installed once into ``.tools/agent-clis``, offline.

The session fixture :func:`agent_clis` runs ``npm install --prefix <repo>/.tools/agent-clis
@anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0`` when either CLI is missing (the
same folder and command the memory-sync end-to-end tests use, so one install serves both)
and skips, saying why, only where npm cannot run at all. Every test gets a fresh home:
``HOME``, ``CODEX_HOME`` and ``TMPDIR`` inside ``tmp_path`` (both CLIs write caches there),
git's identity there too, and the DSH data under ``$HOME/.dsh`` - the default, because Codex
starts MCP servers with a minimal environment. The model is a scripted server on 127.0.0.1
(``dsh_test_support.fake_model``); nothing leaves the machine.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dsh_test_support import home

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = REPO_ROOT / ".tools" / "agent-clis"
PACKAGES = ("@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0")
IDENTITY = ("Agent Test", "agent-test@example.com")


@dataclass(frozen=True)
class AgentClis:
    claude: Path
    codex: Path


def _works(binary: Path) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0


@pytest.fixture(scope="session")
def agent_clis() -> AgentClis:
    bin_dir = CLI_DIR / "node_modules" / ".bin"
    clis = AgentClis(bin_dir / "claude", bin_dir / "codex")
    CLI_DIR.mkdir(parents=True, exist_ok=True)
    # Parallel workers (and the memory-sync tests) share the folder: one installs at a time.
    with (CLI_DIR / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _works(clis.claude) and _works(clis.codex):
            return clis
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the real Claude Code and Codex CLIs cannot be")
        done = subprocess.run(
            [npm, "install", "--prefix", str(CLI_DIR), *PACKAGES],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"npm install of the agent CLIs failed:\n{done.stderr[-4000:]}")
    assert _works(clis.claude) and _works(clis.codex)
    return clis


@pytest.fixture
def agent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated home for one CLI run; the environment of this process points into it.

    The toolkit's hermetic home (dsh_test_support.home) at ``tmp_path/home`` with
    ``DSH_HOME`` unset, plus what both CLIs need to stay offline and quiet."""
    made = home.enter(monkeypatch, tmp_path / "home", dsh_home=None, identity=IDENTITY)
    (made.home / ".codex").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("CODEX_HOME", str(made.home / ".codex"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    monkeypatch.setenv("DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("DISABLE_ERROR_REPORTING", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("FAKE_API_KEY", "test")
    yield made.home

"""Shared fixtures: every test runs in the toolkit's hermetic home (dsh_test_support.home):
HOME, DSH_HOME (``$HOME/.dsh``) and git's global config in a fresh folder, git's fixed
identity, and no developer setting (``DSH_MEMORY_ROOT``, ``DSH_RANKING``, ``DSH_DEBUG`` ...).

Plain git for set-up and assertions is :mod:`dsh_test_support.gitcmd`; the code under test
never uses it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import gitcmd
from dsh_test_support.gitcmd import commit_all, git

from dsh_memory.search import index_key, index_listing


@pytest.fixture(autouse=True)
def isolated_env(hermetic_home: Path) -> Path:
    """The toolkit's hermetic home, for every test of this package; the home folder."""
    return hermetic_home


@pytest.fixture
def dsh_home(isolated_env: Path) -> Path:
    """``DSH_HOME`` of the test (not created: the commands create it)."""
    return Path(os.environ["DSH_HOME"])


@pytest.fixture
def memory_root(dsh_home: Path) -> Path:
    """An initialised memory repository at the default root ($DSH_HOME/storages/memory)."""
    from dsh_memory.store.initialize import initialize_repository

    root = dsh_home / "storages" / "memory"
    initialize_repository(root)
    return root


@pytest.fixture
def usage_root(tmp_path: Path) -> Path:
    """The bare layout the usage sidecar needs (``.sync/`` and ``.git/info/``), no repository."""
    memory = tmp_path / "usage-root"
    (memory / ".sync").mkdir(parents=True)
    (memory / ".git" / "info").mkdir(parents=True)
    return memory


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def write_file() -> Callable[[Path, str, str], Path]:
    return write


@pytest.fixture
def commit() -> Callable[..., str]:
    """Stage everything, commit; the new ``HEAD`` (:func:`dsh_test_support.gitcmd.commit_all`)."""
    return commit_all


@pytest.fixture
def cli_env() -> dict[str, str]:
    """The environment for a ``dsh-memory`` run: this test's hermetic one, as a dict."""
    return dict(os.environ)


# -- the write path: a scripted fake agent and real session logs ---------------------------

FAKE_AGENT = Path(__file__).parent / "agents" / "fake_agent.py"
TWO_HOURS_AGO = 2 * 3600


def fake_agent_command(scenario: str) -> str:
    """``--agent-command`` running the fake agent with ``scenario`` (a real process)."""
    import shlex
    import sys

    return f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGENT))} {scenario}"


@pytest.fixture
def agent_command() -> Callable[[str], str]:
    return fake_agent_command


class SessionLogs:
    """Writes real session logs where the three agents keep them, idle for two hours."""

    def __init__(self, home: Path, dsh_home: Path) -> None:
        self.home = home
        self.dsh_sessions = dsh_home / "sessions"
        self.claude_projects = home / ".claude" / "projects"
        self.codex_sessions = home / ".codex" / "sessions"

    @staticmethod
    def _age(path: Path, seconds_ago: float) -> Path:
        import time

        moment = time.time() - seconds_ago
        os.utime(path, (moment, moment))
        return path

    @staticmethod
    def _lines(events: list[dict[str, object]]) -> bytes:
        import json

        return "".join(json.dumps(e) + "\n" for e in events).encode("utf-8")

    def dsh(self, name: str, text: str, *, zstd: bool = True, age: float = TWO_HOURS_AGO) -> Path:
        events: list[dict[str, object]] = [
            {"type": "session", "id": name, "cwd": "/home/alice/project", "agentPreset": "x"},
            {"type": "turn/start", "data": {"turn": 1}},
            {"type": "user/message", "data": {"content": [{"type": "text", "text": text}]}},
            {
                "type": "tool/call",
                "data": {"name": "shell", "arguments": '{"cmd": "ls", "token": "t0ps3cret"}'},
            },
        ]
        raw = self._lines(events)
        folder = self.dsh_sessions / name
        folder.mkdir(parents=True, exist_ok=True)
        if zstd:
            import zstandard

            path = folder / "session.jsonl.zstd"
            path.write_bytes(zstandard.ZstdCompressor().compress(raw))
        else:
            path = folder / "session.jsonl"
            path.write_bytes(raw)
        return self._age(path, age)

    def claude(self, name: str, text: str, *, age: float = TWO_HOURS_AGO) -> Path:
        events: list[dict[str, object]] = [
            {
                "type": "user",
                "sessionId": name,
                "cwd": "/home/alice/p",
                "message": {"role": "user", "content": text},
            },
            {
                "type": "assistant",
                "sessionId": name,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "ok"},
                        {"type": "tool_use", "name": "Bash", "input": {"command": "echo hi"}},
                    ],
                },
            },
        ]
        path = self.claude_projects / "-home-alice-p" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._lines(events))
        return self._age(path, age)

    def codex(self, name: str, text: str, *, age: float = TWO_HOURS_AGO) -> Path:
        events: list[dict[str, object]] = [
            {"type": "session_meta", "payload": {"id": name, "cwd": "/home/alice/p"}},
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": '{"cmd": "ls"}',
                    "call_id": "c1",
                },
            },
        ]
        path = self.codex_sessions / "2026" / "12" / "01" / f"rollout-{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self._lines(events))
        return self._age(path, age)


@pytest.fixture
def session_logs(isolated_env: Path, dsh_home: Path) -> SessionLogs:
    return SessionLogs(isolated_env, dsh_home)


def age_watermark(root: Path, seconds_ago: float = 3 * 3600) -> None:
    """Move init's fresh ``.last-sync`` back so older test sessions count as new."""
    import time

    moment = time.time() - seconds_ago
    os.utime(root / ".last-sync", (moment, moment))


@pytest.fixture
def sync_root(memory_root: Path) -> Path:
    """An initialised memory repository whose watermark is three hours old."""
    age_watermark(memory_root)
    return memory_root


@pytest.fixture
def start_ui(memory_root: Path) -> Iterator[Callable[..., Any]]:
    """``start_ui(**options)``: the settings page's real server over ``memory_root``, on a free
    port of 127.0.0.1 in a thread, started and ready; every one started is stopped after."""
    from dsh_memory.store.settings import settings_path
    from dsh_memory.ui.server import UiServer

    started: list[tuple[UiServer, threading.Thread]] = []

    def start(**options: Any) -> UiServer:
        server = UiServer(memory_root, settings_path(), port=0, **options)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        started.append((server, thread))
        deadline = time.monotonic() + 20
        while not server.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return server

    yield start
    for server, thread in started:
        server.stop()
        thread.join(10)


@pytest.fixture
def legacy_records(memory_root: Path) -> Path:
    """``memory_root`` with one committed record without front matter and a summary."""
    write(memory_root, "handbook/old-note.md", "an old note without front matter\n")
    write(memory_root, "summary.md", "# Summary\nremember the codegen decision\n")
    commit_all(memory_root, "legacy records")
    return memory_root


_HOLD_LOCK = """
import sys, time
from pathlib import Path
from dsh_memory.store.oplock import operation_lock
with operation_lock(Path(sys.argv[1]), "sync", "20260820T100000Z-a1b2c3d4"):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def cli_run_holding_the_lock(memory_root: Path) -> Callable[[], Any]:
    """A context manager: a real process holds ``memory_root``'s operation lock (as a
    ``sync`` run) from entry, once it says so, until exit."""

    @contextlib.contextmanager
    def holding() -> Iterator[None]:
        with subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(memory_root)], stdout=subprocess.PIPE, text=True
        ) as holder:
            try:
                assert holder.stdout is not None
                assert holder.stdout.readline().strip() == "held"
                yield
            finally:
                holder.kill()

    return holding


# -- several machines sharing one memory through a Git remote ----------------------------------

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"


class Machine:
    """One machine's memory repository, driven through the library (``MemoryService``)."""

    def __init__(self, root: Path) -> None:
        from dsh_memory.service import MemoryService

        self.root = root
        self.service = MemoryService(root)

    def ok(self, envelope: dict[str, Any]) -> Any:
        assert envelope["ok"], (envelope, self.service.last_error_message)
        return envelope["value"]

    def error(self, envelope: dict[str, Any]) -> str:
        assert not envelope["ok"], envelope
        code: str = envelope["error"]["code"]
        return code

    def write(self, path: str, text: str) -> Any:
        return self.ok(self.service.write(path, text))

    def record(self, path: str, identifier: str, body: str) -> Any:
        return self.write(path, RECORD.format(id=identifier, body=body))

    def remove(self, path: str) -> Any:
        return self.ok(self.service.remove(path))

    def pull(self) -> Any:
        return self.ok(self.service.pull())

    def push(self) -> Any:
        return self.ok(self.service.push())

    def head(self) -> str:
        return git(self.root, "rev-parse", "HEAD").strip()

    def files(self) -> dict[str, str]:
        """The payload in the work tree."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            relative = path.relative_to(self.root).as_posix()
            top = relative.split("/", 1)[0]
            if path.is_file() and (
                relative == "summary.md" or top in ("handbook", "rollouts", "archive")
            ):
                found[relative] = path.read_text(encoding="utf-8")
        return found

    def committed(self, revision: str = "HEAD") -> dict[str, str]:
        """The payload ``revision`` holds."""
        names = git(
            self.root,
            "ls-tree",
            "-r",
            "--name-only",
            revision,
            "--",
            "summary.md",
            "handbook",
            "rollouts",
            "archive",
        ).split("\n")
        return {n: git(self.root, "show", f"{revision}:{n}") for n in names if n}

    def runs(self) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = self.ok(self.service.runs(limit=1000))["runs"]
        return runs


@pytest.fixture
def remote_repo(tmp_path: Path) -> Path:
    """An empty bare repository on disk: the machines' shared remote."""
    bare = tmp_path / "remote.git"
    return gitcmd.init(bare, bare=True)


@pytest.fixture
def machines(tmp_path: Path, remote_repo: Path) -> Callable[..., Machine]:
    """``machines(name, remote=True)``: a new machine's memory (``init`` with its own author,
    as two real machines' first commits differ), its remote set to ``remote_repo``."""
    from dsh_memory.store.initialize import initialize_repository

    def make(name: str, *, remote: bool = True) -> Machine:
        root = tmp_path / "machines" / name
        root.mkdir(parents=True)
        git(root, "init", "-q", "--initial-branch=main")
        git(root, "config", "user.name", f"Machine {name}")
        git(root, "config", "user.email", f"{name}@example.com")
        initialize_repository(root)
        machine = Machine(root)
        if remote:
            machine.ok(machine.service.set_remote(str(remote_repo)))
        return machine

    return make


# -- the search index's freshness keys -------------------------------------------------------
# Small payloads are keyed by a walk; this fixture moves the bound so that a search-index
# test of a few records runs each key.


@pytest.fixture(params=["walk", "listing", "stat"])
def key_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each freshness key on a small payload: the fast keys from the first record on."""
    if request.param != "walk":
        monkeypatch.setattr(index_key, "FAST_KEY_MIN_RECORDS", 0)
    if request.param == "stat":
        monkeypatch.setattr(index_listing, "_find_program", lambda _root: None)
    return str(request.param)


@pytest.fixture(scope="session")
def weight_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DSH_HOME whose model weight cache is built once, for the hybrid ranking tests that
    run ``dsh-memory`` as a process (each would otherwise build its own: ~1.5 s, 88 MB)."""
    home = tmp_path_factory.mktemp("weights") / "dsh"
    warm = "from dsh_common import embedding; print(embedding.warm())"
    environment = {**os.environ, "DSH_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", warm], env=environment, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() in {"built", "mapped"}, done.stdout + done.stderr
    return home

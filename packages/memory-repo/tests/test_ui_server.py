"""The settings page's server, over real HTTP against a real uvicorn server in a thread.

Every API call is compared with what :class:`MemoryService` answers directly, and every
refusal (token, Host, Origin, body) is checked to change nothing in the repository.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService
from dsh_memory.ui.security import CONTENT_SECURITY_POLICY
from dsh_memory.ui.server import METHODS, UiServer

TOKEN = "test-token-" + "a" * 32
Write = Callable[[Path, str, str], Path]


@pytest.fixture
def ui(start_ui: Callable[..., UiServer]) -> UiServer:
    return start_ui(token=TOKEN)


def call(
    server: UiServer,
    path: str,
    body: bytes | dict[str, Any] | None = None,
    *,
    token: str | None = TOKEN,
    verb: str = "POST",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One real HTTP request; the answer's status, lower-case headers and body."""
    sent = {"Host": f"127.0.0.1:{server.port}", "Content-Type": "application/json"}
    if token is not None:
        sent["X-DSH-Token"] = token
    sent.update(headers or {})
    payload = json.dumps(body).encode() if isinstance(body, dict) else body
    if payload is None and verb == "POST":
        payload = b"{}"
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request(verb, path, body=payload, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()
    is_json = answer_headers.get("content-type", "").startswith("application/json")
    return response.status, answer_headers, json.loads(raw) if is_json else raw


def api(server: UiServer, method: str, params: dict[str, Any] | None = None) -> Any:
    status, _, body = call(server, f"/api/memory/{method}", params or {})
    assert status == 200, body
    return body


def head(root: Path, revision: str = "HEAD") -> str:
    return git(root, "rev-parse", revision).strip()


# -- the page ------------------------------------------------------------------------------


def test_page_is_served_with_strict_security_headers(ui: UiServer) -> None:
    status, headers, body = call(ui, "/", verb="GET", token=None)
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    assert headers["x-frame-options"] == "DENY"
    assert headers["cache-control"] == "no-store"
    assert headers["x-content-type-options"] == "nosniff"
    html = body.decode()
    assert '<script src="/app.js" defer></script>' in html
    # No inline script and no inline handler: the CSP would block them anyway.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert not re.search(r"\son[a-z]+=", html)


@pytest.mark.parametrize(
    ("path", "media_type"),
    [("/app.js", "text/javascript"), ("/app.css", "text/css"), ("/favicon.svg", "image/svg+xml")],
)
def test_page_files_are_served(ui: UiServer, path: str, media_type: str) -> None:
    status, headers, body = call(ui, path, verb="GET", token=None)
    assert status == 200
    assert headers["content-type"].startswith(media_type)
    assert headers["cache-control"] == "no-store"
    assert body


@pytest.mark.parametrize("path", ["/etc/passwd", "/static/app.js", "/../app.js", "/app.js/x"])
def test_no_other_path_is_served(ui: UiServer, path: str) -> None:
    status, headers, _ = call(ui, path, verb="GET", token=None)
    assert status == 404
    assert headers["x-frame-options"] == "DENY"


# -- every method --------------------------------------------------------------------------


READ_METHODS = ["getSettings", "status", "health", "legacyRecords", "runs", "previews"]


@pytest.mark.parametrize("method", READ_METHODS)
def test_read_methods_answer_what_the_service_answers(
    ui: UiServer, memory_root: Path, legacy_records: Path, method: str
) -> None:
    answer = api(ui, method)
    direct = MemoryService(memory_root).call(method, {})
    if not direct["ok"]:
        direct["error"]["message"] = answer["error"]["message"]
    assert answer == direct


def test_api_responses_carry_the_security_headers(ui: UiServer) -> None:
    status, headers, _ = call(ui, "/api/memory/status", {})
    assert status == 200
    assert headers["cache-control"] == "no-store"
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert headers["x-frame-options"] == "DENY"


def test_set_enabled_changes_the_prompt_section(ui: UiServer, memory_root: Path) -> None:
    assert MemoryService(memory_root).prompt_section() != ""
    assert api(ui, "setEnabled", {"enabled": False}) == {"ok": True, "value": {"enabled": False}}
    assert api(ui, "getSettings") == {"ok": True, "value": {"enabled": False}}
    assert MemoryService(memory_root).prompt_section() == ""
    assert api(ui, "setEnabled", {"enabled": True})["value"] == {"enabled": True}
    assert MemoryService(memory_root).prompt_section() != ""


def test_set_enabled_refuses_a_non_boolean(ui: UiServer) -> None:
    answer = api(ui, "setEnabled", {"enabled": "no"})
    assert answer["ok"] is False
    assert answer["error"]["code"] == "settings-invalid-request"
    assert answer["error"]["message"]
    assert api(ui, "getSettings")["value"] == {"enabled": True}


def test_migrate_legacy_dry_run_then_apply(
    ui: UiServer, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    plan = api(ui, "migrateLegacy", {"dryRun": True})["value"]
    assert plan["changedPaths"] == ["handbook/old-note.md"]
    assert head(memory_root) == before
    done = api(ui, "migrateLegacy", {"dryRun": False})["value"]
    assert done["status"] == "applied"
    assert done["migratedCount"] == 1
    assert (memory_root / "handbook/old-note.md").read_text().startswith("---\nschema_version: 1")
    assert api(ui, "status")["value"]["pendingMigration"] is False
    assert api(ui, "migrateLegacy", {"dryRun": "yes"})["error"]["code"] == (
        "migration-invalid-request"
    )


def test_runs_and_rollback_of_an_applied_run(
    ui: UiServer, memory_root: Path, legacy_records: Path
) -> None:
    api(ui, "migrateLegacy", {"dryRun": False})
    (run,) = api(ui, "runs", {"limit": 5, "operation": "migrate"})["value"]["runs"]
    assert run["status"] == "applied"
    refused = api(ui, "rollback", {"runId": run["run_id"], "confirmation": "yes"})
    assert refused["error"]["code"] == "rollback-invalid-confirmation"
    done = api(ui, "rollback", {"runId": run["run_id"], "confirmation": "ROLLBACK_MEMORY"})
    assert done["value"]["status"] == "rolled_back"
    assert (memory_root / "handbook/old-note.md").read_text() == (
        "an old note without front matter\n"
    )


def test_rollback_conflict_comes_back_as_its_code(
    ui: UiServer, memory_root: Path, legacy_records: Path
) -> None:
    api(ui, "migrateLegacy", {"dryRun": False})
    (run,) = api(ui, "runs", {"operation": "migrate"})["value"]["runs"]
    assert api(ui, "clear", {"confirmation": "DELETE_MEMORY"})["ok"] is True
    answer = api(ui, "rollback", {"runId": run["run_id"], "confirmation": "ROLLBACK_MEMORY"})
    assert answer["error"]["code"] == "rollback-conflict"


def test_clear_needs_the_machine_confirmation(
    ui: UiServer, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    assert api(ui, "clear", {"confirmation": "delete"})["error"]["code"] == "clear-failed"
    assert head(memory_root) == before
    done = api(ui, "clear", {"confirmation": "DELETE_MEMORY"})["value"]
    assert done["alreadyEmpty"] is False
    assert done["recoveryCommit"] == before
    assert done["clearCommit"]
    assert not (memory_root / "handbook/old-note.md").exists()
    assert api(ui, "getSettings")["value"] == {"enabled": True}  # memory stays enabled


def test_search_and_context(
    ui: UiServer, memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    write_file(memory_root, "handbook/codegen.md", "We chose TypeScript for codegen.\n")
    commit(memory_root, "record")
    found = api(ui, "search", {"query": "codegen"})["value"]
    assert [r["path"] for r in found["results"]] == ["handbook/codegen.md"]
    records = api(ui, "context", {"query": "codegen", "limit": 1})["value"]["records"]
    assert records[0]["path"] == "handbook/codegen.md"
    assert api(ui, "search", {})["error"]["code"] == "search-invalid-request"


@pytest.mark.parametrize("method", ["previews", "applyPreview", "discardPreview"])
def test_preview_methods_pass_through_to_the_service(
    ui: UiServer, memory_root: Path, method: str
) -> None:
    params = {} if method == "previews" else {"previewId": "20260820T150000Z-a1b2c3d4"}
    answer = api(ui, method, params)
    direct = MemoryService(memory_root).call(method, params)
    assert answer["ok"] == direct["ok"]
    assert answer.get("error", {}).get("code") == direct.get("error", {}).get("code")
    assert answer.get("value") == direct.get("value")


FIRST_PREVIEW = "20261201T100000Z-0123abcd"
SECOND_PREVIEW = "20261201T100100Z-4567cdef"


def make_preview(
    root: Path, session_logs: Any, agent_command: Callable[[str], str], preview_id: str
) -> None:
    """A real preview: the real ``dsh-memory-sync --preview`` runs the fake agent process."""
    session_logs.dsh("d1", "remember to use uv")
    done = commands.run(
        "dsh-memory-sync",
        "--agent",
        "command",
        "--agent-command",
        agent_command("add"),
        "--preview",
        preview_id,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "pending"


def test_previews_are_listed_applied_and_discarded_over_http(
    ui: UiServer, sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    make_preview(sync_root, session_logs, agent_command, FIRST_PREVIEW)
    make_preview(sync_root, session_logs, agent_command, SECOND_PREVIEW)
    folders = [sync_root / ".sync" / "previews" / i for i in (FIRST_PREVIEW, SECOND_PREVIEW)]
    listed = api(ui, "previews")["value"]["previews"]
    assert listed == MemoryService(sync_root).previews()["value"]["previews"]
    assert [p["preview_id"] for p in listed] == [SECOND_PREVIEW, FIRST_PREVIEW]  # newest first
    assert all(p["changed_paths"] == ["handbook/new-fact.md"] for p in listed)
    assert all(p["expires_at"] > p["created_at"] for p in listed)

    before = head(sync_root)
    for method in ("applyPreview", "discardPreview"):
        for token in (None, "wrong"):
            status, _, body = call(
                ui, f"/api/memory/{method}", {"previewId": FIRST_PREVIEW}, token=token
            )
            assert status == 403 and body["error"]["code"] == "ui-forbidden-token"
    assert head(sync_root) == before
    assert all(folder.is_dir() for folder in folders)

    applied = api(ui, "applyPreview", {"previewId": FIRST_PREVIEW})["value"]
    assert applied["status"] == "applied"
    assert applied["changed_paths"] == ["handbook/new-fact.md"]
    # The apply commit, then the journal commit on top of it.
    assert head(sync_root, "HEAD~1") == applied["apply_commit"]
    assert "id: project/new-fact" in (sync_root / "handbook" / "new-fact.md").read_text()
    assert not folders[0].exists()
    (run,) = api(ui, "runs", {"operation": "preview"})["value"]["runs"]
    assert (run["status"], run["apply_commit"]) == ("applied", applied["apply_commit"])

    # The second preview was made against the old memory: it is refused, memory unchanged.
    after = head(sync_root)
    stale = api(ui, "applyPreview", {"previewId": SECOND_PREVIEW})
    assert stale["ok"] is False and stale["error"]["code"] == "live-memory-changed"
    assert head(sync_root) == after
    assert api(ui, "discardPreview", {"previewId": SECOND_PREVIEW})["value"] == {
        "removed": True,
        "previewId": SECOND_PREVIEW,
    }
    assert not folders[1].exists()
    assert api(ui, "previews")["value"]["previews"] == []
    again = api(ui, "discardPreview", {"previewId": SECOND_PREVIEW})
    assert again["error"]["code"] == "preview-not-found"
    for bad in ("../../etc", FIRST_PREVIEW + "/..", 7):
        answer = api(ui, "applyPreview", {"previewId": bad})
        assert answer["error"]["code"] == "preview-invalid-request"
    assert head(sync_root) == after


def test_every_spec_method_is_served_and_nothing_else(ui: UiServer) -> None:
    assert {
        "getSettings",
        "setEnabled",
        "status",
        "health",
        "clear",
        "legacyRecords",
        "migrateLegacy",
        "runs",
        "rollback",
        "previews",
        "applyPreview",
        "discardPreview",
        "search",
        "context",
    } == METHODS
    # Nothing that takes a path (write, remove, bundles), no repair action (adopt, recover),
    # and no Git remote action: the page shows the remote, it never sets one or exchanges.
    hidden = [
        "write",
        "remove",
        "adopt",
        "recover",
        "exportBundle",
        "importBundle",
        "remote",
        "setRemote",
        "removeRemote",
        "pull",
        "push",
    ]
    for name in [
        *hidden,
        "export_bundle",
        "import_bundle",
        "init",
        "prompt_section",
        "_layout",
        "root",
        "call",
        "__init__",
    ]:
        status, _, body = call(ui, f"/api/memory/{name}", {})
        assert status == 404, name
        assert body["error"]["code"] == "unknown-method"


def test_the_root_is_fixed_at_start(ui: UiServer, memory_root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    answer = api(ui, "health", {"root": str(elsewhere), "memoryRoot": str(elsewhere)})
    assert answer["value"]["memoryRoot"] == str(memory_root)


# -- token, Host, Origin -------------------------------------------------------------------


def _untouched(root: Path, before: str) -> None:
    assert head(root) == before
    assert (root / "handbook/old-note.md").exists()


@pytest.mark.parametrize("token", [None, "", "wrong", TOKEN[:-1], TOKEN + "x"])
def test_a_request_without_the_token_is_refused_and_changes_nothing(
    ui: UiServer,
    memory_root: Path,
    legacy_records: Path,
    token: str | None,
) -> None:
    before = head(memory_root)
    status, _, body = call(ui, "/api/memory/clear", {"confirmation": "DELETE_MEMORY"}, token=token)
    assert status == 403
    assert body["error"]["code"] == "ui-forbidden-token"
    _untouched(memory_root, before)


def test_unknown_methods_are_not_revealed_without_the_token(ui: UiServer) -> None:
    status, _, body = call(ui, "/api/memory/nothing", {}, token=None)
    assert status == 403
    assert body["error"]["code"] == "ui-forbidden-token"


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1.nip.io:{port}", "127.0.0.1:1", "127.0.0.1", ""]
)
def test_another_host_header_is_refused_and_changes_nothing(
    ui: UiServer, memory_root: Path, legacy_records: Path, host: str
) -> None:
    before = head(memory_root)
    forged = {"Host": host.format(port=ui.port)}
    status, _, body = call(
        ui, "/api/memory/clear", {"confirmation": "DELETE_MEMORY"}, headers=forged
    )
    assert status == 403
    assert body["error"]["code"] == "ui-forbidden-host"
    status, _, _ = call(ui, "/", verb="GET", headers=forged)
    assert status == 403
    _untouched(memory_root, before)


def test_localhost_is_an_accepted_host(ui: UiServer) -> None:
    status, _, body = call(ui, "/api/memory/status", {}, headers={"Host": f"localhost:{ui.port}"})
    assert status == 200
    assert body["ok"] is True


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "https://127.0.0.1:{port}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_another_origin_is_refused_and_changes_nothing(
    ui: UiServer,
    memory_root: Path,
    legacy_records: Path,
    headers: dict[str, str],
) -> None:
    before = head(memory_root)
    sent = {k: v.format(port=ui.port) for k, v in headers.items()}
    status, _, body = call(ui, "/api/memory/clear", {"confirmation": "DELETE_MEMORY"}, headers=sent)
    assert status == 403
    assert body["error"]["code"] == "ui-forbidden-origin"
    _untouched(memory_root, before)


def test_the_pages_own_origin_is_accepted(ui: UiServer) -> None:
    for origin in (f"http://127.0.0.1:{ui.port}", f"http://localhost:{ui.port}"):
        headers = {"Origin": origin, "Sec-Fetch-Site": "same-origin"}
        status, _, body = call(ui, "/api/memory/status", {}, headers=headers)
        assert status == 200
        assert body["ok"] is True


# -- malformed requests --------------------------------------------------------------------


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("verb", "body", "headers", "expected"),
    [
        ("GET", None, {}, 405),
        ("PUT", b"{}", {}, 405),
        ("POST", b"{}", {"Content-Type": "text/plain"}, 415),
        ("POST", b"confirmation=DELETE_MEMORY", {"Content-Type": FORM}, 415),
        ("POST", b"{not json", {}, 400),
        ("POST", b"[1, 2]", {}, 400),
        ("POST", b'{"confirmation": "DELETE_MEMORY", "pad": "' + b"x" * 70_000 + b'"}', {}, 413),
    ],
)
def test_malformed_requests_are_refused_and_change_nothing(  # noqa: PLR0917 - fixtures
    ui: UiServer,
    memory_root: Path,
    legacy_records: Path,
    verb: str,
    body: bytes | None,
    headers: dict[str, str],
    expected: int,
) -> None:
    before = head(memory_root)
    status, _, _ = call(ui, "/api/memory/clear", body, verb=verb, headers=headers)
    assert status == expected
    _untouched(memory_root, before)


def test_an_empty_body_is_an_empty_parameter_object(ui: UiServer) -> None:
    status, _, body = call(ui, "/api/memory/status", b"")
    assert status == 200
    assert body["ok"] is True


# -- concurrency ---------------------------------------------------------------------------


def test_two_tabs_deleting_at_once_end_in_one_clear(
    ui: UiServer, memory_root: Path, legacy_records: Path
) -> None:
    barrier = threading.Barrier(2)
    answers: list[Any] = []

    def tab() -> None:
        barrier.wait()
        answers.append(api(ui, "clear", {"confirmation": "DELETE_MEMORY"}))

    tabs = [threading.Thread(target=tab) for _ in range(2)]
    for thread in tabs:
        thread.start()
    for thread in tabs:
        thread.join(60)
    succeeded = [a for a in answers if a["ok"]]
    refused = [a for a in answers if not a["ok"]]
    assert len(succeeded) == 1
    assert succeeded[0]["value"]["alreadyEmpty"] is False
    assert [a["error"]["code"] for a in refused] == ["operation-in-progress"]
    log = git(memory_root, "log", "--format=%s").splitlines()
    assert log.count("DPSK memory cleared") == 1


def test_a_cli_run_holding_the_lock_makes_the_page_wait(
    ui: UiServer,
    memory_root: Path,
    legacy_records: Path,
    cli_run_holding_the_lock: Callable[[], Any],
) -> None:
    before = head(memory_root)
    with cli_run_holding_the_lock():
        answer = api(ui, "clear", {"confirmation": "DELETE_MEMORY"})
        assert answer["error"]["code"] == "operation-in-progress"
        health = api(ui, "health")["value"]
        assert health["activeRun"]["state"] == "running"
        assert health["operationLock"]["operation"] == "sync"
    _untouched(memory_root, before)


# -- the command ---------------------------------------------------------------------------


@contextlib.contextmanager
def _start_command(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """The installed ``dsh-memory`` in a subprocess; killed if the test leaves it running."""
    process = subprocess.Popen(
        [str(commands.program("dsh-memory")), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def test_ui_command_prints_the_url_serves_and_stops_on_ctrl_c(
    memory_root: Path, cli_env: dict[str, str]
) -> None:
    elsewhere = {**cli_env, "DSH_HOME": str(memory_root.parent / "unused")}
    command = ["ui", "--root", str(memory_root), "--no-browser"]
    with _start_command(command, elsewhere) as process:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        url = announced["value"]["url"]
        assert announced["value"]["root"] == str(memory_root)
        match = re.fullmatch(r"http://127\.0\.0\.1:([0-9]+)/#token=([A-Za-z0-9_-]{40,})", url)
        assert match, url
        port, token = int(match[1]), match[2]
        with contextlib.closing(http.client.HTTPConnection("127.0.0.1", port, timeout=30)) as c:
            c.request(
                "POST",
                "/api/memory/status",
                body=b"{}",
                headers={"X-DSH-Token": token, "Content-Type": "application/json"},
            )
            assert json.loads(c.getresponse().read())["value"]["empty"] is True
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()
    with socket.socket() as probe:  # the port is free again
        probe.bind(("127.0.0.1", port))


def test_each_launch_has_its_own_token(memory_root: Path, cli_env: dict[str, str]) -> None:
    tokens = []
    for _ in range(2):
        with _start_command(["ui", "--no-browser"], cli_env) as process:
            assert process.stdout is not None
            tokens.append(json.loads(process.stdout.readline())["value"]["url"].split("token=")[1])
            process.send_signal(signal.SIGINT)
            process.wait(30)
    assert tokens[0] != tokens[1]


def test_ui_command_on_a_busy_port_is_a_json_error(
    memory_root: Path, cli_env: dict[str, str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        # A process even for an error: a command that served instead would hang the test.
        result = commands.run("dsh-memory", "ui", "--no-browser", "--port", str(port), env=cli_env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "ui-port-unavailable"


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_ui_command_refuses_a_port_out_of_range(
    memory_root: Path, cli_env: dict[str, str], port: str
) -> None:
    result = commands.run("dsh-memory", "ui", "--no-browser", "--port", port, env=cli_env)
    assert result.returncode == 1
    assert json.loads(result.stderr)["error"]["code"] == "ui-invalid-request"


def test_the_server_module_is_only_imported_by_the_ui_command(cli_env: dict[str, str]) -> None:
    probe = (
        "import sys, dsh_memory.cli.memory\n"
        "print('uvicorn' in sys.modules, 'starlette' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env, check=True
    )
    assert result.stdout.split() == ["False", "False"]
    assert os.environ.get("DSH_MEMORY_ROOT") is None


def test_the_page_ships_inside_the_wheel(tmp_path: Path) -> None:
    import zipfile

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: the wheel cannot be built here")
    package = Path(__file__).resolve().parents[1]
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(tmp_path), str(package)],
        capture_output=True,
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("dsh_memory-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("index.html", "app.js", "app.css", "favicon.svg"):
        assert f"dsh_memory/ui/static/{name}" in names
    metadata = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        .decode()
    )
    assert "Provides-Extra: ui" in metadata
    assert "starlette" in metadata
    assert "uvicorn" in metadata


def test_the_browser_gets_a_private_redirect_file_not_the_token(
    memory_root: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    record = tmp_path / "browser-argv.txt"
    browser = tmp_path / "browser.sh"
    # A stand-in browser ($BROWSER is honoured by Python's webbrowser module): it records
    # its command line and the page it was asked to open.
    browser.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$1" > {record}.tmp\ncat "${{1#file://}}" >> {record}.tmp\n'
        f'stat -c %a "${{1#file://}}" >> {record}.tmp\nmv {record}.tmp {record}\n'
    )
    browser.chmod(0o700)
    env = {**cli_env, "BROWSER": f"{browser} %s"}
    with _start_command(["ui"], env) as process:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["value"]["url"]
        deadline = time.monotonic() + 30
        while not record.exists():
            assert time.monotonic() < deadline, "the browser was not started"
            time.sleep(0.05)
        argv, *page, mode = record.read_text().splitlines()
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    token = url.split("token=")[1]
    assert argv.startswith("file://")
    assert token not in argv
    assert mode == "600"
    assert f'content="0;url={url}"' in "\n".join(page)
    assert not Path(argv.removeprefix("file://")).exists()  # removed when the server stops

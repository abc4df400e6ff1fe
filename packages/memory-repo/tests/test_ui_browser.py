"""The settings page in a real headless Chromium (Debian's ``chromium``), driven by Playwright.

Playwright's Python package brings its own driver; the browser is the system's
``/usr/bin/chromium`` (``playwright install`` is never run). Each test gets a fresh
profile directory and a real server on 127.0.0.1 over a real memory repository; what the
page shows is checked against what the repository then holds.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, gitcmd
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService
from dsh_memory.ui.server import UiServer

CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None
)
try:
    from playwright.sync_api import Page, sync_playwright
except ImportError:  # pragma: no cover - playwright is in the dev group
    sync_playwright = None

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or sync_playwright is None,
    reason="no Chromium browser found (apt-get install chromium) or playwright missing: "
    "the settings page's browser tests need a real browser",
)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
Write = Callable[[Path, str, str], Path]
OpenPage = Callable[..., "Page"]


@pytest.fixture
def ui(start_ui: Callable[..., UiServer]) -> UiServer:
    return start_ui()


@pytest.fixture
def open_page(ui: UiServer, tmp_path: Path) -> Iterator[OpenPage]:
    """Open the page (its printed URL) in a fresh Chromium profile; fail on any page error."""
    assert sync_playwright is not None
    problems: list[str] = []
    with sync_playwright() as playwright:
        contexts: list[Any] = []

        def opener(locale: str = "en-US", *, url: str | None = None, clock: bool = False) -> Page:
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / f"profile-{len(contexts)}"),
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                locale=locale,
                viewport={"width": 900, "height": 1100},
            )
            contexts.append(context)
            page = context.pages[0] if context.pages else context.new_page()
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.on(
                "console",
                lambda message: (
                    problems.append(f"console: {message.text}") if message.type == "error" else None
                ),
            )
            if clock:
                page.clock.install()
            page.goto(url or ui.url)
            if url is None:
                settle(page)
            return page

        yield opener
        for context in contexts:
            context.close()
    # A CSP violation (an inline script or style) shows up here as a console error.
    assert problems == []


def settle(page: Page) -> None:
    page.wait_for_selector("body[data-ready=true][data-busy=false]")


def head(root: Path, revision: str = "HEAD") -> str:
    return git(root, "rev-parse", revision).strip()


def notice(page: Page, section: str) -> str:
    return page.text_content(f"[data-notice={section}]") or ""


# -- the switch ----------------------------------------------------------------------------


def test_toggling_memory_saves_at_once_and_changes_the_prompt_section(
    open_page: OpenPage, memory_root: Path
) -> None:
    page = open_page()
    assert page.is_checked("#memory-enabled")
    assert "includes the memory section" in (page.text_content("#prompt-state") or "")
    assert MemoryService(memory_root).prompt_section().startswith("# 记忆")

    held: list[Any] = []
    # A lambda, not held.append: playwright tags the handler with an attribute.
    page.route("**/api/memory/setEnabled", lambda route: held.append(route))  # noqa: PLW0108
    page.click("#memory-enabled")
    page.wait_for_selector("#saving-indicator")  # "saving…" while the request is out
    assert page.text_content("#saving-indicator") == "saving…"
    assert page.is_disabled("#memory-enabled")
    while not held:
        page.wait_for_timeout(20)
    held[0].continue_()
    page.wait_for_selector("#prompt-state[data-enabled=false]")
    settle(page)
    assert not page.is_checked("#memory-enabled")
    assert "no memory section" in (page.text_content("#prompt-state") or "")
    assert notice(page, "switch") == "Saved."
    assert MemoryService(memory_root).get_settings()["value"] == {"enabled": False}
    assert MemoryService(memory_root).prompt_section() == ""

    page.unroute("**/api/memory/setEnabled")
    page.click("#memory-enabled")
    page.wait_for_selector("#prompt-state[data-enabled=true]")
    assert MemoryService(memory_root).prompt_section() != ""


# -- repository state and migration --------------------------------------------------------


def test_migration_shows_the_dry_run_list_first(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    page = open_page()
    assert page.text_content("#legacy-count") == "1"
    assert page.text_content("#migrate-button") == "Migrate 1 legacy records…"

    page.click("#migrate-button")
    settle(page)
    assert page.text_content("#migration-plan li") == "handbook/old-note.md"
    assert head(memory_root) == before  # the dry run changed nothing
    page.click("#migrate-cancel")
    assert page.query_selector("#migration-plan") is None
    assert head(memory_root) == before

    page.click("#migrate-button")
    settle(page)
    page.click("#migrate-confirm")
    settle(page)
    assert notice(page, "repo").startswith("Migrated 1 records (apply commit ")
    assert page.text_content("#legacy-count") == "0"
    assert page.query_selector("#migrate-button") is None
    assert (memory_root / "handbook/old-note.md").read_text().startswith("---\nschema_version: 1")
    assert page.get_attribute("#run-history li.run", "data-status") == "applied"


# -- runs and rollback ---------------------------------------------------------------------


def test_rolling_back_a_run_asks_first_and_can_be_cancelled(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    applied = MemoryService(memory_root).migrate_legacy(False)["value"]
    (run,) = MemoryService(memory_root).runs(operation="migrate")["value"]["runs"]
    run_id = run["run_id"]
    before = head(memory_root)
    page = open_page()
    assert applied["applyCommit"][:12] in (page.text_content("#last-run") or "")
    row = f"#run-history li.run[data-run-id='{run_id}']"

    page.click(f"{row} button.rollback")
    assert "A new commit restores memory" in (page.text_content(f"{row} .confirm-box") or "")
    page.click(f"{row} .confirm-no")
    assert page.query_selector(f"{row} .confirm-box") is None
    assert head(memory_root) == before

    page.click(f"{row} button.rollback")
    page.click(f"{row} .confirm-yes")
    settle(page)
    assert notice(page, "runs").startswith(f"Run {run_id} rolled back")
    assert (memory_root / "handbook/old-note.md").read_text() == (
        "an old note without front matter\n"
    )
    assert page.get_attribute("#run-history li.run", "data-status") == "rolled_back"


def test_a_rollback_conflict_is_explained_in_words(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    service = MemoryService(memory_root)
    service.migrate_legacy(False)
    (run,) = service.runs(operation="migrate")["value"]["runs"]
    assert service.clear("DELETE_MEMORY")["ok"]
    before = head(memory_root)
    page = open_page()
    row = f"#run-history li.run[data-run-id='{run['run_id']}']"
    page.click(f"{row} button.rollback")
    page.click(f"{row} .confirm-yes")
    settle(page)
    text = notice(page, "runs")
    assert text.startswith("Memory changed after this run")
    assert text.endswith("(rollback-conflict)")
    assert head(memory_root) == before


# -- previews ------------------------------------------------------------------------------


PREVIEW_ID = "20261201T100000Z-0123abcd"


def make_preview(root: Path, session_logs: Any, agent_command: Callable[[str], str]) -> str:
    """A real preview: the real ``dsh-memory-sync --preview`` runs the fake agent process."""
    session_logs.dsh("d1", "remember to use uv")
    done = commands.run(
        "dsh-memory-sync",
        "--agent",
        "command",
        "--agent-command",
        agent_command("add"),
        "--preview",
        PREVIEW_ID,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "pending"
    assert (root / ".sync" / "previews" / PREVIEW_ID / "preview.json").is_file()
    return PREVIEW_ID


def test_no_pending_preview_is_said_in_words(open_page: OpenPage) -> None:
    page = open_page()
    assert page.text_content("#no-previews") == "No preview is waiting."
    assert page.query_selector("button.apply-preview") is None


def test_a_preview_is_discarded_only_after_confirmation(
    open_page: OpenPage, sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    preview_id = make_preview(sync_root, session_logs, agent_command)
    folder = sync_root / ".sync" / "previews" / preview_id
    before = head(sync_root)
    page = open_page()
    item = f"li.preview[data-preview-id='{preview_id}']"
    assert "handbook/new-fact.md" in (page.text_content(f"{item} ul.paths") or "")
    expires = page.get_attribute(f"{item} .expires", "data-expires-at") or ""
    listed = MemoryService(sync_root).previews()["value"]["previews"][0]
    assert expires == listed["expires_at"] and expires > listed["created_at"]
    assert "from 1 session log(s)" in (page.text_content(item) or "")

    page.click(f"{item} button.discard-preview")
    assert "memory stays as it is" in (page.text_content(f"{item} .confirm-box") or "")
    page.click(f"{item} .confirm-no")
    assert page.query_selector(f"{item} .confirm-box") is None
    assert folder.is_dir()

    page.click(f"{item} button.discard-preview")
    page.click(f"{item} .confirm-yes")
    settle(page)
    assert notice(page, "previews") == f"Preview {preview_id} discarded."
    assert page.query_selector(item) is None
    assert page.text_content("#no-previews") == "No preview is waiting."
    assert not folder.exists()
    assert MemoryService(sync_root).previews()["value"]["previews"] == []
    # Live memory is as it was: no commit, no record, no run.
    assert head(sync_root) == before
    assert not (sync_root / "handbook" / "new-fact.md").exists()
    assert MemoryService(sync_root).runs(operation="preview")["value"]["runs"] == []


def test_a_preview_is_applied_only_after_confirmation(
    open_page: OpenPage, sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    preview_id = make_preview(sync_root, session_logs, agent_command)
    before = head(sync_root)
    page = open_page()
    item = f"li.preview[data-preview-id='{preview_id}']"

    page.click(f"{item} button.apply-preview")
    assert "recovery and apply commits" in (page.text_content(f"{item} .confirm-box") or "")
    page.click(f"{item} .confirm-no")
    assert page.query_selector(f"{item} .confirm-box") is None
    assert head(sync_root) == before
    assert not (sync_root / "handbook" / "new-fact.md").exists()

    page.click(f"{item} button.apply-preview")
    page.click(f"{item} .confirm-yes")
    settle(page)
    (run,) = MemoryService(sync_root).runs(operation="preview")["value"]["runs"]
    assert run["status"] == "applied"
    assert notice(page, "previews") == (
        f"Preview {preview_id} applied (apply commit {run['apply_commit'][:12]})."
    )
    assert page.query_selector(item) is None
    assert "id: project/new-fact" in (sync_root / "handbook" / "new-fact.md").read_text()
    assert head(sync_root, "HEAD~1") == run["apply_commit"] != before  # then the journal
    row = f"#run-history li.run[data-run-id='{run['run_id']}']"
    assert page.get_attribute(row, "data-status") == "applied"
    assert (page.text_content(f"{row} strong") or "") == "preview"
    assert "handbook/new-fact.md" in (page.text_content(f"{row} ul.paths") or "")


# -- health --------------------------------------------------------------------------------


def _dead_pid() -> int:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait()
    return child.pid


def _interrupt(root: Path) -> str:
    """What a writer killed mid-run leaves behind: its lock and its active-run record."""
    run_id = "20260820T100000Z-a1b2c3d4"
    pid = _dead_pid()
    sync = root / ".sync"
    lock = {"operation": "sync", "pid": pid, "runId": run_id, "startedAt": "2026-08-20T10:00:00Z"}
    (sync / "operation.lock").write_text(json.dumps(lock))
    active = {
        "run_id": run_id,
        "operation": "sync",
        "status": "running",
        "phase": "applying",
        "pid": pid,
        "started_at": "2026-08-20T10:00:00Z",
    }
    (sync / "active-run.json").write_text(json.dumps(active))
    return run_id


def test_an_interrupted_run_is_a_health_problem_with_what_to_do(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    run_id = _interrupt(memory_root)
    before = head(memory_root)
    page = open_page()
    problem = page.text_content("li.problem[data-problem=interrupted-run]") or ""
    assert f"Run {run_id} (sync) was interrupted" in problem
    assert "What to do:" in problem
    shown = [
        c
        for c in page.locator("li.problem[data-problem=interrupted-run] code").all_text_contents()
        if "recover" in c
    ]
    assert shown == [f"dsh-memory recover --root {memory_root} --confirmation RECOVER_MEMORY"]

    # A write is refused with the code and a sentence, and changes nothing.
    page.click("#migrate-button")
    settle(page)
    page.click("#migrate-confirm")
    settle(page)
    assert notice(page, "repo").endswith("must be recovered first (see Health). (interrupted-run)")
    assert head(memory_root) != before  # only the interrupted run was journaled
    assert (memory_root / "handbook/old-note.md").read_text() == (
        "an old note without front matter\n"
    )

    # What the page says to do works: the command it shows, run as shown, clears the problem.
    done = subprocess.run(shlex.split(shown[0]), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    page.reload()
    settle(page)
    assert page.query_selector("li.problem[data-problem=interrupted-run]") is None


def test_a_dirty_payload_is_a_health_problem(
    open_page: OpenPage, memory_root: Path, write_file: Write
) -> None:
    write_file(memory_root, "handbook/uncommitted.md", "not committed\n")
    page = open_page()
    assert page.text_content("#repo-dirty") == "yes"
    problem = page.text_content("li.problem[data-problem=dirty-payload]") or ""
    assert "not committed" in problem
    assert "git status" in problem
    assert f"dsh-memory adopt --root {memory_root}" in problem


# -- delete memory -------------------------------------------------------------------------


def test_delete_memory_through_both_steps(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    page = open_page()

    page.click("#delete-start")
    explained = page.text_content("#delete-explain") or ""
    for part in ("summary.md", "handbook/", "rollouts/", "archive/", "Git history", "enabled"):
        assert part in explained
    page.click("#delete-continue")
    assert page.is_disabled("#delete-confirm")
    page.fill("#delete-word", "delet")
    assert page.is_disabled("#delete-confirm")
    page.fill("#delete-word", "DELETE")
    assert page.is_enabled("#delete-confirm")
    page.click("#delete-confirm")
    settle(page)

    done = notice(page, "delete")
    log = git(memory_root, "log", "--format=%H %s", "-n", "3")
    clear_commit = next(line.split()[0] for line in log.splitlines() if "memory cleared" in line)
    assert done.startswith("Memory deleted: 2 files cleared.")
    assert f"Recovery commit {before[:12]}" in done
    assert f"clear commit {clear_commit[:12]}" in done
    assert not (memory_root / "handbook/old-note.md").exists()
    assert page.text_content("#repo-empty") == "yes"
    assert page.is_checked("#memory-enabled")  # memory stays enabled


def test_delete_memory_cancelled_at_each_step_changes_nothing(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    page = open_page()

    page.click("#delete-start")
    page.click("#delete-cancel")
    assert page.query_selector("#delete-explain") is None
    assert notice(page, "delete") == "Delete cancelled. Nothing was changed."

    page.click("#delete-start")
    page.click("#delete-continue")
    page.fill("#delete-word", "DELETE")
    page.click("#delete-cancel")
    assert page.query_selector("#delete-type") is None
    assert notice(page, "delete") == "Delete cancelled. Nothing was changed."

    assert head(memory_root) == before
    assert (memory_root / "handbook/old-note.md").exists()


def test_the_typed_confirmation_cancels_itself_after_a_few_seconds(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    before = head(memory_root)
    page = open_page(clock=True)
    page.click("#delete-start")
    page.click("#delete-continue")
    page.fill("#delete-word", "DELETE")
    assert "15 s" in (page.text_content("#delete-countdown") or "")
    page.clock.run_for(16_000)
    page.wait_for_selector("#delete-start")
    assert notice(page, "delete") == (
        "Delete cancelled: the time to confirm ran out. Nothing was changed."
    )
    assert head(memory_root) == before


# -- languages and the token ---------------------------------------------------------------


def test_chinese_follows_the_browser_and_the_switch_changes_it(
    open_page: OpenPage, memory_root: Path, legacy_records: Path
) -> None:
    _interrupt(memory_root)
    page = open_page("zh-CN")
    assert page.text_content("#title") == "长期记忆"
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert "被中断" in (page.text_content("li.problem[data-problem=interrupted-run]") or "")
    page.click("#migrate-button")
    settle(page)
    page.click("#migrate-confirm")
    settle(page)
    assert (
        notice(page, "repo")
        == "之前的一次运行被中断，需要先恢复（见“健康状况”）。 (interrupted-run)"
    )

    page.click("#lang-switch")
    assert page.text_content("#title") == "Long-term memory"
    assert page.text_content("#lang-switch") == "中文"
    page.reload()
    settle(page)
    assert page.text_content("#title") == "Long-term memory"  # the choice is kept


def test_a_page_opened_without_its_token_says_where_to_find_it(
    open_page: OpenPage, ui: UiServer, memory_root: Path, write_file: Write
) -> None:
    write_file(memory_root, "handbook/x.md", "x\n")
    page = open_page(url=f"http://127.0.0.1:{ui.port}/")
    page.wait_for_selector("#token-missing:not([hidden])")
    assert "#token=" in (page.text_content("#token-missing") or "")
    assert page.query_selector("#memory-enabled") is None


def test_the_token_leaves_the_address_bar(open_page: OpenPage, ui: UiServer) -> None:
    page = open_page()
    assert page.url == f"http://127.0.0.1:{ui.port}/"
    page.reload()  # the tab keeps the token for reloads
    settle(page)
    assert page.query_selector("#memory-enabled") is not None


def test_deleting_while_a_cli_run_holds_the_lock_says_operation_in_progress(
    open_page: OpenPage,
    memory_root: Path,
    legacy_records: Path,
    cli_run_holding_the_lock: Callable[[], Any],
) -> None:
    before = head(memory_root)
    with cli_run_holding_the_lock():
        page = open_page()
        assert "sync run is in progress" in (page.text_content("#health-busy") or "")
        page.click("#delete-start")
        page.click("#delete-continue")
        page.fill("#delete-word", "delete")
        page.click("#delete-confirm")
        settle(page)
        text = notice(page, "delete")
        assert text.startswith("Another memory operation is running right now")
        assert text.endswith("(operation-in-progress)")
    assert head(memory_root) == before
    assert (memory_root / "handbook/old-note.md").exists()


def test_a_missing_repository_is_explained_not_a_blank_page(
    open_page: OpenPage, memory_root: Path
) -> None:
    shutil.rmtree(memory_root)
    page = open_page()
    assert "dsh-memory init" in (page.text_content("li.problem[data-problem=unreachable]") or "")
    assert "(repo-unavailable)" in (page.text_content("#sec-repo") or "")
    assert page.is_checked("#memory-enabled")  # the settings file is still there to use


# -- the Git remote, read-only -------------------------------------------------------------------


def test_the_git_remote_is_shown_read_only_without_its_credentials(
    open_page: OpenPage, memory_root: Path, tmp_path: Path
) -> None:
    from dsh_test_support.git_http import git_http_server

    from dsh_memory.store.initialize import initialize_repository

    page = open_page()
    assert "dsh-memory remote set URL" in (page.text_content("#remote-none") or "")
    served = tmp_path / "served"
    served.mkdir()
    gitcmd.init(served / "memory.git", bare=True)
    record = "---\nschema_version: 1\nid: project/release\ntype: fact\n---\n{}\n"
    ours = MemoryService(memory_root)
    other_root = tmp_path / "other-machine"
    initialize_repository(other_root)
    other = MemoryService(other_root)
    with git_http_server(served, credentials=("me", "pa55-w0rd")) as server:
        url = server.url("memory.git", with_credentials=True)
        for service in (ours, other):
            assert service.set_remote(url)["ok"]
        assert ours.write("handbook/release.md", record.format("Fridays."))["ok"]
        assert ours.push()["ok"]
        assert other.pull()["ok"] and other.push()["ok"]
        assert ours.pull()["ok"] and ours.push()["ok"]
        assert other.pull()["ok"]
        assert other.write("handbook/release.md", record.format("Thursdays."))["ok"]
        assert other.push()["ok"]
        assert ours.write("handbook/release.md", record.format("Mondays."))["ok"]
        pulled = ours.pull()
    assert pulled["value"]["status"] == "merged-with-conflicts", pulled
    page.click("#refresh")
    settle(page)
    remote = ours.status()["value"]["remote"]
    assert (
        page.text_content("#remote-url")
        == remote["url"]
        == (f"http://***@127.0.0.1:{server.port}/memory.git")
    )
    assert page.text_content("#remote-branch") == "main"
    assert remote["ahead"] > 0 and remote["behind"] == 0
    counts = page.text_content("#remote-counts") or ""
    assert counts.startswith(f"{remote['ahead']} commit(s) to push, 0 to pull"), counts
    assert page.get_attribute("#remote-last-pull", "data-status") == "merged-with-conflicts"
    assert "1 conflicting record(s)" in (page.text_content("#remote-last-pull") or "")
    assert page.get_attribute("#remote-last-push", "data-status") == "up-to-date"
    assert page.query_selector_all("#sec-remote button") == [], "read-only"
    assert "pa55-w0rd" not in page.content()
    page.click("#lang-switch")
    assert "已合并（有冲突）" in (page.text_content("#remote-last-pull") or "")
    assert "待推送" in (page.text_content("#remote-counts") or "")


def test_a_refused_remote_url_is_explained(open_page: OpenPage, memory_root: Path) -> None:
    git(memory_root, "config", "remote.origin.url", "ext::sh -c touch% /tmp/x")
    page = open_page()
    assert "remote-invalid" in (page.text_content("#remote-invalid") or "")
    assert (page.text_content("#remote-url") or "").startswith("ext::")

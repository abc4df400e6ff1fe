"""Rebuild the settings-page screenshots in this folder (settings-page-en.png, -zh.png).

Run from the repository root:
``uv run --frozen python packages/memory-repo/docs/make_screenshots.py``.
Needs Debian's ``chromium`` (and a CJK font such as ``fonts-wqy-microhei`` for the Chinese
page). Everything happens in a temporary DSH_HOME: a memory repository with two records, a
migrated legacy note (one applied run), a pending preview (a real ``--preview`` sync whose
"agent" is a small script adding one record), two new legacy records and one uncommitted
edit, and a Git remote (a bare repository beside it) the memory was pushed to, so the page
shows every section with something in it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from dsh_memory.service import MemoryService
from dsh_memory.store.initialize import initialize_repository
from dsh_memory.store.settings import settings_path
from dsh_memory.sync.sessions import SessionSources
from dsh_memory.sync.syncrun import SyncOptions, new_sync_run_id, run_sync
from dsh_memory.ui.server import UiServer

HERE = Path(__file__).resolve().parent
RECORD = """---
schema_version: 1
id: user/preferences
type: preference
status: active
confidence: high
created_at: 2026-08-10
updated_at: 2026-08-10
---

Prefers small commits and tests that use real git repositories.
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


AGENT = """import pathlib
path = pathlib.Path("handbook/release-checklist.md")
path.write_text("---\\nschema_version: 1\\nid: project/release-checklist\\ntype: fact\\n---\\n"
                "Tag the release only after the changelog is merged.\\n")
"""


def store_preview(root: Path, home: Path) -> None:
    """One pending preview, made the real way: a session log, an agent, ``--preview``."""
    sessions = home / "sessions"
    log = sessions / "demo" / "session.jsonl"
    log.parent.mkdir(parents=True)
    events = [
        {"type": "session", "id": "demo", "cwd": "/home/demo/project", "agentPreset": "x"},
        {"type": "user/message", "data": {"content": [{"type": "text", "text": "release"}]}},
    ]
    log.write_text("".join(json.dumps(event) + "\n" for event in events))
    now = time.time()
    os.utime(log, (now - 7200, now - 7200))  # idle for two hours
    os.utime(root / ".last-sync", (now - 10800, now - 10800))  # last sync before it
    agent = home / "demo-agent.py"
    agent.write_text(AGENT)
    result = run_sync(
        SyncOptions(
            root=root,
            sources=SessionSources(sessions, home / "claude", home / "codex"),
            env=dict(os.environ),
            agent="command",
            agent_command=f"{shlex.quote(sys.executable)} {shlex.quote(str(agent))}",
            mode="preview",
            preview_id=new_sync_run_id(),
        )
    )
    if result.get("status") != "pending":
        raise SystemExit(f"the demo preview was not stored: {result}")


def build_repository(home: Path) -> Path:
    root = home / "storages" / "memory"
    initialize_repository(root)
    (root / "summary.md").write_text("# Summary\n- preferences: handbook/preferences.md\n")
    (root / "handbook" / "preferences.md").write_text(RECORD)
    (root / "handbook" / "release-notes.md").write_text("Release steps, from an old tool.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "records")
    MemoryService(root).migrate_legacy(False)
    store_preview(root, home)
    (root / "archive" / "2025-notes.md").write_text("Notes kept from 2025.\n")
    (root / "rollouts" / "2026-08-11-session.md").write_text("What the session did.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "more legacy records")
    remote = home.parent / "shared-memory.git"
    git(home.parent, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    service = MemoryService(root)
    for answer in (service.set_remote(str(remote)), service.push()):
        if not answer["ok"]:
            raise SystemExit(f"the demo remote failed: {answer} {service.last_error_message}")
    with (root / "summary.md").open("a") as summary:
        summary.write("- an edit nobody committed\n")
    return root


def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        os.environ["HOME"] = str(base)
        os.environ["DSH_HOME"] = str(base / "dsh")
        (base / ".gitconfig").write_text("[user]\n\tname = Demo\n\temail = demo@example.com\n")
        root = build_repository(base / "dsh")
        server = UiServer(root, settings_path(), port=0)
        threading.Thread(target=server.run, daemon=True).start()
        while not server.server.started:
            time.sleep(0.02)
        with sync_playwright() as playwright:
            for locale, name in (("en-US", "en"), ("zh-CN", "zh")):
                context = playwright.chromium.launch_persistent_context(
                    str(base / f"profile-{name}"),
                    executable_path="/usr/bin/chromium",
                    headless=True,
                    args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
                    locale=locale,
                    viewport={"width": 900, "height": 900},
                )
                page = context.pages[0] if context.pages else context.new_page()
                page.goto(server.url)
                page.wait_for_selector("body[data-ready=true][data-busy=false]")
                page.click("#migrate-button")  # show the dry-run list as well
                page.wait_for_selector("#migration-plan")
                page.screenshot(path=str(HERE / f"settings-page-{name}.png"), full_page=True)
                context.close()
        server.stop()
    sys.stdout.write(f"screenshots written to {HERE}\n")


if __name__ == "__main__":
    main()

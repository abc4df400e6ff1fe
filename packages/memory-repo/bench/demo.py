"""A self-contained tour of dsh-memory, printing each step's JSON envelope.

Runs in a temporary DSH_HOME (and HOME, with a demo Git identity), so it touches nothing of
the user's: init, write records (two with front matter, one legacy), commit them through
migrateLegacy (the dirty payload is checkpointed, the legacy record gets deterministic
front matter), search in English and Chinese, context, clear, runs, rollback of the clear.

    uv run python packages/memory-repo/bench/demo.py
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from dsh_common.jsonio import dumps_bytes

RECORDS = {
    "handbook/cache-avalanche.md": (
        "---\nschema_version: 1\nid: project/cache-avalanche\ntype: decision\nstatus: active\n"
        "confidence: high\ncreated_at: 2026-08-10\nupdated_at: 2026-08-10\ntags:\n  - cache\n"
        "source_rollouts:\n  - rollouts/2026-08-10-session.md\n---\n"
        "缓存雪崩的预防: give every cache key a randomised TTL (jitter) and warm hot keys "
        "before a deploy.\n"
    ),
    "handbook/codegen.md": (
        "---\nschema_version: 1\nid: project/codegen\ntype: decision\nstatus: active\n"
        "confidence: medium\ncreated_at: 2026-08-11\nupdated_at: 2026-08-11\n---\n"
        "We chose TypeScript for the codegen pipeline; generated files live in src/gen.\n"
    ),
    "rollouts/2026-08-10-session.md": "Session notes: debugged a cache stampede in staging.\n",
}


def step(title: str, envelope: Any) -> Any:
    print(f"\n## {title}")
    print(dumps_bytes(envelope, pretty=True).decode("utf-8"))
    return envelope


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-memory-demo-") as temp:
        home = Path(temp) / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = DSH Demo\n\temail = demo@example.com\n")
        os.environ.update({"HOME": str(home), "DSH_HOME": str(Path(temp) / "dsh")})
        os.environ.pop("DSH_MEMORY_ROOT", None)

        from dsh_memory.service import MemoryService

        memory = MemoryService()
        step("init", memory.init())
        root = memory.root
        for relative, text in RECORDS.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        (root / "summary.md").write_text("# Memory\n\n- caching: see handbook/cache-avalanche.md\n")
        step("status (dirty payload, one legacy record)", memory.status())
        step("legacyRecords", memory.legacy_records())
        step("migrateLegacy dryRun", memory.migrate_legacy(True))
        step("migrateLegacy apply", memory.migrate_legacy(False))
        step("migrateLegacy again (no_change)", memory.migrate_legacy(False))
        step("search English: codegen", memory.search("codegen"))
        step("search Chinese: 缓存雪崩", memory.search("缓存雪崩"))
        step("context: cache", memory.context("cache", 2))
        cleared = step("clear", memory.clear("DELETE_MEMORY"))
        step("status after clear", memory.status())
        runs = step("runs", memory.runs(5))
        clear_run = next(r for r in runs["value"]["runs"] if r["operation"] == "clear")
        step("rollback the clear", memory.rollback(clear_run["run_id"], "ROLLBACK_MEMORY"))
        step("search after rollback: 雪崩", memory.search("雪崩"))
        step("health", memory.health())
        print(f"\nclear commit {cleared['value']['clearCommit']} was undone by a new commit;")
        print("history only grows. Prompt section:\n")
        print(memory.prompt_section())


if __name__ == "__main__":
    main()

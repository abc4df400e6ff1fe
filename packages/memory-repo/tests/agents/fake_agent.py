#!/usr/bin/env python3
"""A scripted stand-in for a model CLI: edits the staging folder (its working directory).

Usage: fake_agent.py SCENARIO [PROMPT]. The sync runs it as ``--agent command``; the
prompt it appends is ignored, as the sync ignores the agent's prose.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"


def write(relative: str, text: str) -> None:
    path = Path.cwd() / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def main() -> int:
    scenario = sys.argv[1]
    if scenario == "add":
        write("handbook/new-fact.md", RECORD.format(id="project/new-fact", body="Use uv."))
    elif scenario == "modify":
        write("handbook/existing.md", RECORD.format(id="project/existing", body="Changed."))
    elif scenario == "delete":
        (Path.cwd() / "handbook" / "existing.md").unlink()
    elif scenario == "multi":
        # Add, modify and delete in one run (idempotent: a rerun changes nothing more).
        write("handbook/new-fact.md", RECORD.format(id="project/new-fact", body="Use uv."))
        write("handbook/existing.md", RECORD.format(id="project/existing", body="Changed."))
        (Path.cwd() / "handbook" / "old.md").unlink(missing_ok=True)
    elif scenario == "break":
        write("handbook/broken.md", "---\nschema_version: 1\nid: broken\ntags: [a, b]\n---\nx\n")
    elif scenario == "symlink":
        os.symlink("/etc/passwd", Path.cwd() / "handbook" / "link.md")
    elif scenario == "hardlink":
        outside = Path(os.environ["DSH_MEMORY_SESSIONS"]).parent / "outside.md"
        outside.write_text("---\nschema_version: 1\nid: outside\n---\nnot memory\n")
        os.link(outside, Path.cwd() / "handbook" / "linked.md")
    elif scenario == "many":
        for index in range(51):
            write(f"rollouts/r{index:02d}.md", RECORD.format(id=f"r{index:02d}", body="x"))
    elif scenario == "duplicate":
        write("handbook/twin.md", RECORD.format(id="project/existing", body="Twin."))
    elif scenario == "readme":
        write("README.md", "rewritten\n")
    elif scenario == "outside":
        write("notes.txt", "not payload\n")
    elif scenario == "long-name":
        # A record named after an 80-character Chinese title: 243 bytes, a legal file name
        # whose temporary sibling (.<name>.<12 hex>.tmp) no file system can hold.
        title = "缓存雪崩的预防与热点键永不过期策略" * 5
        write(f"handbook/{title[:80]}.md", RECORD.format(id="project/long", body="Long."))
    elif scenario == "secret":
        # What a careless agent might copy from somewhere the transcripts did not cover:
        # a key glued to Chinese text (built by concatenation, as in every secret test).
        token = "sk-" + "proj" + "A1b2C3d4E5f6G7h8I9j0K1L2M3n4"
        write(
            "handbook/new-fact.md", RECORD.format(id="project/key", body=f"密钥是{token}不要外传")
        )
    elif scenario == "dotgit":
        write("handbook/.git/x.md", RECORD.format(id="project/hidden", body="Hidden."))
    elif scenario == "reserved":
        # A record under the folder named by the next argument, ASCII with \u escapes (a
        # spelling of .git: "handbook/.git\u200c").
        folder = sys.argv[2].encode("ascii").decode("unicode_escape")
        write(f"{folder}/x.md", RECORD.format(id="project/hidden", body="Hidden."))
    elif scenario == "badname":
        name = os.fsencode(Path.cwd() / "handbook") + b"/bad-\xff-name.md"
        with open(name, "wb") as handle:
            handle.write(RECORD.format(id="project/bad-name", body="x").encode())
    elif scenario == "sleep":
        time.sleep(60)
    elif scenario == "fail":
        print("the model refused", file=sys.stderr)
        return 3
    elif scenario == "env":
        names = sorted(os.environ)
        write("summary.md", "\n".join(names) + "\n")
    elif scenario == "transcripts":
        sessions = Path(os.environ["DSH_MEMORY_SESSIONS"])
        text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(sessions.iterdir()))
        write("rollouts/transcripts.md", text)
    elif scenario == "received":
        # Everything the sync hands the agent - its prompt and every transcript - kept as a
        # rollout, so it reaches the memory's Git history if it holds anything.
        sessions = Path(os.environ["DSH_MEMORY_SESSIONS"])
        parts = ["# prompt", *sys.argv[2:], "# transcripts"]
        parts += [p.read_text(encoding="utf-8") for p in sorted(sessions.iterdir())]
        write("rollouts/received.md", "\n".join(parts) + "\n")
    elif scenario != "noop":
        print(f"unknown scenario {scenario}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

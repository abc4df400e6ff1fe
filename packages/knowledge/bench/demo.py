"""A self-contained dsh-knowledge demo: add evidence-backed knowledge with Git provenance,
retrieve it in English and Chinese, verify it, then change the code and watch health flag it.

Creates a temporary Git repository and database, runs the real ``dsh-knowledge`` command for
each step and prints the command and its JSON output. Nothing outside the temporary
directory is touched.

    uv run python packages/knowledge/bench/demo.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def step(title: str, db: Path, *args: str, show: int = 40) -> Any:
    shown = " ".join(a if " " not in a else json.dumps(a, ensure_ascii=False) for a in args)
    print(f"\n## {title}\n$ dsh-knowledge {shown}")
    result = subprocess.run(
        [sys.executable, "-m", "dsh_knowledge.cli", "--db", str(db), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout if result.returncode == 0 else result.stderr
    lines = output.rstrip().splitlines()
    print(
        "\n".join(lines[:show])
        + (f"\n  … ({len(lines) - show} more lines)" if len(lines) > show else "")
    )
    if result.returncode != 0:
        raise SystemExit(f"step failed with exit code {result.returncode}")
    return json.loads(output)


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=dsh demo", "-c", "user.email=demo@example.invalid"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-knowledge-demo-") as temp:
        repo = Path(temp) / "shop"
        (repo / "config").mkdir(parents=True)
        (repo / "config" / "db.toml").write_text("[pool]\nsize = 10\ntimeout_ms = 3000\n")
        (repo / "src").mkdir()
        (repo / "src" / "router.py").write_text("class ResponseRouter:\n    pass\n")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "initial")
        db = Path(temp) / "knowledge.sqlite"
        workspace = str(repo)
        print(f"repository: {repo}\ndatabase:   {db}")

        pool = step(
            "Record a lesson, with Git provenance for its evidence",
            db,
            "add",
            "--workspace",
            workspace,
            "--type",
            "lesson",
            "--content",
            "连接池耗尽导致超时: the checkout tests hang when the DB pool is smaller "
            "than the number of workers; keep pool.size >= workers.",
            "--evidence",
            json.dumps({"type": "file", "source": "config/db.toml"}),
            "--repo",
            workspace,
        )
        step(
            "Record a decision",
            db,
            "add",
            "--workspace",
            workspace,
            "--type",
            "decision",
            "--content",
            "Provider selection must go through ResponseRouter.",
            "--evidence",
            json.dumps({"type": "file", "source": "src/router.py"}),
            "--repo",
            workspace,
            show=12,
        )
        step("Verify the lesson (candidate -> verified)", db, "verify", pool["id"], show=10)
        step(
            "Retrieve in English",
            db,
            "retrieve",
            "connection pool timeout",
            "--workspace",
            workspace,
            show=30,
        )
        step(
            "Retrieve in Chinese (数据库连接池 shares only bigrams with the lesson)",
            db,
            "retrieve",
            "数据库连接池",
            "--workspace",
            workspace,
            show=30,
        )
        step(
            "Freshness while the code is unchanged",
            db,
            "freshness",
            pool["id"],
            "--repo",
            workspace,
        )

        (repo / "config" / "db.toml").write_text("[pool]\nsize = 2\ntimeout_ms = 3000\n")
        print("\n(the pool size in config/db.toml changes from 10 to 2, not yet committed)")
        step(
            "Health, with guidance, after the change",
            db,
            "health",
            pool["id"],
            "--repo",
            workspace,
            "--guidance",
        )
        step("The item itself is untouched: still verified", db, "get", pool["id"], show=8)


if __name__ == "__main__":
    os.environ.pop("DSH_DEBUG", None)
    main()

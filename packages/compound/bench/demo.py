"""A self-contained dsh-compound demo: capture -> recall (English, Chinese) -> inspect ->
edit a source -> check.

Creates a temporary workspace with two source files, runs the real ``dsh-compound``
command for each step and prints the command and its JSON output. Nothing outside the
temporary directory is touched.

    uv run python packages/compound/bench/demo.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

DRAFT = {
    "id": "login-timeout",
    "title": "登录请求超时: login requests time out in the test environment",
    "tags": ["login", "timeout", "数据库连接池"],
    "problem": "Login requests time out after 30 s when the whole test suite runs in parallel.",
    "rootCause": "数据库连接池耗尽: the pool holds 2 connections while 8 test workers log in.",
    "resolution": "Raise poolSize to 10 in config/test.json only; production is unchanged.",
    "whenToUse": "Login or other database-bound tests hang under parallel runs.",
    "verification": {
        "command": "npm test -- tests/login.test.js",
        "result": "The author reports that the login test passed 20 times in a row.",
    },
    "files": ["config/test.json", "src/login.js"],
}


def step(title: str, *args: str, cwd: Path) -> dict[str, object]:
    shown = " ".join(a if " " not in a else json.dumps(a, ensure_ascii=False) for a in args)
    print(f"\n## {title}\n$ dsh-compound {shown}")
    result = subprocess.run(
        [sys.executable, "-m", "dsh_compound.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout if result.returncode == 0 else result.stderr
    print(output.rstrip())
    if result.returncode != 0:
        raise SystemExit(f"step failed with exit code {result.returncode}")
    value: dict[str, object] = json.loads(output)
    return value


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-compound-demo-") as temp:
        workspace = Path(temp) / "shop"
        (workspace / "src").mkdir(parents=True)
        (workspace / "config").mkdir()
        (workspace / "src" / "login.js").write_text(
            "export async function login(db, user) {\n  return db.query('select 1');\n}\n"
        )
        (workspace / "config" / "test.json").write_text('{"poolSize": 10}\n')
        (workspace / "draft.json").write_text(json.dumps(DRAFT, ensure_ascii=False, indent=2))
        print(f"workspace: {workspace}")

        step("capture", "capture", "--workspace", ".", "--input", "draft.json", cwd=workspace)
        step(
            "recall (English)",
            "recall",
            "--workspace",
            ".",
            "--query",
            "login timeout",
            cwd=workspace,
        )
        step(
            "recall (Chinese)",
            "recall",
            "--workspace",
            ".",
            "--query",
            "连接池耗尽",
            "--limit",
            "3",
            cwd=workspace,
        )
        step("check (sources untouched)", "check", "--workspace", ".", cwd=workspace)

        print("\n## someone edits config/test.json")
        (workspace / "config" / "test.json").write_text('{"poolSize": 4}\n')
        step("check (after the edit)", "check", "--workspace", ".", cwd=workspace)
        inspected = step(
            "inspect", "inspect", "--workspace", ".", "--id", "login-timeout", cwd=workspace
        )

        print("\n## the lesson is re-verified and re-captured against the new bytes")
        DRAFT["resolution"] = "Raise poolSize to at least 4 in config/test.json only."
        (workspace / "draft.json").write_text(json.dumps(DRAFT, ensure_ascii=False, indent=2))
        digest = str(inspected["digest"])
        args = ["--workspace", ".", "--input", "draft.json", "--replace", digest]
        step("capture --replace (compare-and-swap)", "capture", *args, cwd=workspace)
        step("check (after the replace)", "check", "--workspace", ".", cwd=workspace)


if __name__ == "__main__":
    main()

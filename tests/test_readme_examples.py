"""The examples' outputs in the READMEs and the site's pages (docs/) are what their commands
print now (`make readme-examples`).

The first test runs every example of every README and page in check mode; the others prove the
checker itself catches what it must: a stale output, a `$ ` command outside an example,
a command that fails without saying so, and values that change from run to run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "readme_examples.py"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_every_readme_example_matches_a_real_run() -> None:
    done = _run("--check")
    assert done.returncode == 0, (
        "README examples are out of date; run `make readme-examples`\n" + done.stdout + done.stderr
    )


def test_every_readme_has_examples_and_no_unchecked_command() -> None:
    for relative in (
        "README.md",
        "packages/compound/README.md",
        "packages/memory-repo/README.md",
        "packages/knowledge/README.md",
    ):
        assert "<!-- readme-example" in (ROOT / relative).read_text(encoding="utf-8"), relative


def test_the_site_pages_are_checked_after_the_readmes() -> None:
    spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    checked = module.documents()
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert checked == [*module.READMES, *pages]  # the READMEs first, as before
    with_examples = [p for p in pages if "<!-- readme-example" in (ROOT / p).read_text("utf-8")]
    assert "docs/compatibility/memory.md" in with_examples


def test_a_stale_output_is_reported_then_rewritten(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# t\n\n<!-- readme-example\nsetup: printf 'two\\n' > f.txt\n-->\n"
        "```console\n$ printf 'one\\n'\nthree\n$ cat f.txt\ntwo\n```\n",
        encoding="utf-8",
    )
    stale = _run("--check", str(readme))
    assert stale.returncode == 1
    assert "-three" in stale.stdout and "+one" in stale.stdout
    assert "three" in readme.read_text(encoding="utf-8")  # check mode rewrites nothing
    assert _run(str(readme)).returncode == 0
    assert "```console\n$ printf 'one\\n'\none\n$ cat f.txt\ntwo\n```" in readme.read_text(
        encoding="utf-8"
    )
    assert _run("--check", str(readme)).returncode == 0


def test_a_command_outside_an_example_block_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("```console\n$ echo unchecked\nunchecked\n```\n", encoding="utf-8")
    done = _run("--check", str(readme))
    assert done.returncode == 1
    assert "outside a <!-- readme-example block at lines [2]" in done.stderr


def test_an_undeclared_failure_is_refused_and_a_declared_one_shown(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- readme-example -->\n```console\n$ false\n```\n", encoding="utf-8")
    done = _run("--check", str(readme))
    assert done.returncode == 1 and "exited 1, not 0" in done.stderr
    readme.write_text(
        "<!-- readme-example -->\n```console\n$ echo oops >&2; false   # exit 1\n```\n",
        encoding="utf-8",
    )
    assert _run(str(readme)).returncode == 0
    assert "# exit 1\noops\n```" in readme.read_text(encoding="utf-8")


def test_volatile_values_are_normalised_the_same_way_every_run(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "<!-- readme-example\nbind 1 U u\n-->\n```console\n"
        "$ python3 -c 'import json, uuid; print(json.dumps({\"u\": str(uuid.uuid4())}))'\n"
        '$ echo "$U $U $PWD"; date -u +%Y-%m-%dT%H:%M:%SZ; git hash-object /dev/null\n'
        "```\n",
        encoding="utf-8",
    )
    assert _run(str(readme)).returncode == 0
    text = readme.read_text(encoding="utf-8")
    uuid = "00000000-0000-4000-8000-000000000001"
    assert f'{{"u": "{uuid}"}}\n' in text or f'{{\n  "u": "{uuid}"\n}}' in text
    assert f"{uuid} {uuid} /tmp/example/work\n2026-01-02T03:04:05Z\n{'1' * 40}\n" in text
    assert _run("--check", str(readme)).returncode == 0  # a second real run: same text


def test_a_command_that_never_ends_fails_instead_of_hanging(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- readme-example -->\n```console\n$ sleep 30\n```\n", encoding="utf-8")
    done = _run("--check", str(readme), env={"README_EXAMPLES_TIMEOUT": "1"})
    assert done.returncode == 1
    assert "no end after 1.0 s" in done.stderr

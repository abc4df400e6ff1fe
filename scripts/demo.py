"""`make demo`: one story, told by the three commands, in a scratch repository.

The story below is the script. A `$` line is run by the shell exactly as printed (replay it
in the printed directory with the printed DSH_HOME); `=` names the one or two fields of its
JSON result worth seeing (`label: path.to.field`, `~text` for the first line starting with
text, `>NAME` also exports the field as $NAME for later lines); `->` says what to notice.
`--verbose` also prints every full JSON result. Nothing outside a temporary directory is
touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

VERBOSE = "--verbose" in sys.argv[1:]
COMMIT = "git add -A && git -c user.name=demo -c user.email=demo@example.invalid commit -q -m"
STORY = f"""
# 1. dsh-compound: a lesson kept in the repository, fingerprinted
$ git init -q && {COMMIT} first
$ dsh-compound capture --input - < draft.json
= id: id | digest: digest
-> written to docs/solutions/dsh-compound/; --workspace defaulted to the git top level
$ dsh-compound recall 登录超时
= top: results.0.id | evidenceStatus: results.0.evidenceStatus
-> a Chinese query finds the lesson through Han bigrams; its sources are unchanged
$ printf '{{"pool": {{"max": 10}}}}\\n' > config/test.json
$ dsh-compound check
= needsReview: needsReview.0.id | changedFiles: needsReview.0.changedFiles
-> the fix touched a file the lesson is about, so the lesson is listed for re-verification

# 2. dsh-knowledge: decisions with evidence pinned to a commit, in SQLite
$ {COMMIT} 'raise the test pool'
$ dsh-knowledge add --type decision --content 'Tests use a pool of 10.' --evidence '{{"type": "file", "source": "config/test.json"}}'
= id: id >ITEM | pinned to: evidence.0.gitProvenance
-> --workspace and --repo defaulted to this repository; the file's commit was recorded
$ dsh-knowledge verify "$ITEM"
= status: status
-> verified items rank above candidates when an agent retrieves
$ dsh-knowledge retrieve 'how big is the test pool'
= top: results.0.knowledge.content | truncated: truncated
-> ranked, with an explanation per result; truncated says whether more matched
$ printf '{{"pool": {{"max": 4}}}}\\n' > config/test.json
$ dsh-knowledge health "$ITEM"
= status: results.0.status | reasons: results.0.reasons
-> the evidence no longer matches its commit: do not trust the decision blindly

# 3. dsh-memory: the agent's long-term memory, a Git repository of Markdown records
$ dsh-memory init
= root: value.root >MEM | created: value.created
-> every change to the memory will be a commit that can be rolled back
$ printf -- '---\\nschema_version: 1\\nid: project/release\\ntype: procedure\\n---\\nRelease checklist: bump, make test, tag.\\n' > "$MEM/handbook/release.md"
$ printf '# Memory\\n- prefers pnpm\\n' > "$MEM/summary.md"
$ dsh-memory search 'release checklist'
= count: value.count | cite: value.results.0.path
-> each hit names the record it came from, for the agent to cite
$ dsh-memory prompt-section
= marker: ~[DPSK
-> the summary an agent host injects is fenced after this marker: stored data, never orders
$ dsh-memory status --format text
= first line: ~empty
-> --format text gives a person's summary of any command; JSON stays the default
"""
SUMMARY = """
# Summary
  dsh-compound kept a lesson in the repo and flagged it when its source changed;
  dsh-knowledge pinned a decision to a commit and reported it stale after an edit;
  dsh-memory searched a Git-backed memory and fenced it as untrusted context.
  Replay any `$` line yourself; add --verbose to see every full JSON result."""
DRAFT = {
    "id": "login-timeout",
    "title": "登录请求在测试环境超时 (login times out in tests)",
    "tags": ["login", "timeout"],
    "problem": "Login tests time out after 30 s in the test environment.",
    "rootCause": "The test config caps the connection pool at 2; the suite opens 8.",
    "resolution": "Raise pool.max to 10 in config/test.json.",
    "whenToUse": "A login or database test hangs only under the test config.",
    "verification": {"command": "npm test -- login", "result": "12 passing"},
    "files": ["src/login.js", "config/test.json"],
}


def dig(value: Any, path: str) -> Any:
    """The field at ``a.0.b``, or with ``~x`` the first output line that starts with x."""
    if path.startswith("~"):
        return next(line for line in str(value).splitlines() if line.startswith(path[1:]))
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def run(line: str) -> Any:
    print(f"$ {line}", flush=True)
    done = subprocess.run(line, shell=True, capture_output=True, text=True, check=False)  # noqa: S602
    if done.returncode != 0:
        raise SystemExit(f"  failed ({done.returncode}): {done.stderr.strip()}")
    out = done.stdout
    result = json.loads(out) if out.startswith("{") else out
    if VERBOSE and out:
        print(json.dumps(result, indent=2, ensure_ascii=False) if out[0] == "{" else out)
    return result


def show(result: Any, spec: str) -> None:
    for part in spec.split(" | "):
        label, _, path = part.partition(": ")
        path, _, export = path.partition(" >")
        value = dig(result, path)
        print(f"  {label}: {value}")
        if export:
            os.environ[export] = str(value)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-demo-") as tmp:
        repo, home = Path(tmp) / "shop", Path(tmp) / "home"
        (repo / "src").mkdir(parents=True)
        (repo / "config").mkdir()
        (repo / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
        (repo / "config" / "test.json").write_text('{"pool": {"max": 2}}\n')
        (repo / "draft.json").write_text(json.dumps(DRAFT, ensure_ascii=False, indent=2))
        bin_dir = str(Path(sys.executable).parent)  # the commands `make setup` installed
        os.environ.update(DSH_HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        os.environ.pop("DSH_MEMORY_ROOT", None)
        os.chdir(repo)
        print(f"# In a scratch repository {repo} with DSH_HOME={home}:")
        result: Any = None
        for line in STORY.splitlines():
            if line.startswith("$ "):
                result = run(line[2:])
            elif line.startswith("= "):
                show(result, line[2:])
            elif line.startswith("# "):
                print(f"\n{line}")
            elif line:
                print(f"  {line}")
    print(SUMMARY)
    return 0


if __name__ == "__main__":
    sys.exit(main())

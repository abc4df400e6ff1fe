"""`make demo`: a short tour of what dsh does today, printed as it happens.

It runs each product's own demo (``packages/<pkg>/bench/demo.py``) in a throw-away
``DSH_HOME`` so nothing touches the user's real data, after a glimpse of the shared
foundations that every product relies on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dsh_common.errors import DshError
from dsh_common.paths import resolve_in_workspace, resolve_workspace
from dsh_common.text import query_terms, segment_words

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_DEMOS = [
    ("dsh-compound: lessons as fingerprinted Markdown", "packages/compound/bench/demo.py"),
    ("dsh-knowledge: evidence-backed SQLite knowledge", "packages/knowledge/bench/demo.py"),
    ("dsh-memory: the Git-backed memory repository", "packages/memory-repo/bench/demo.py"),
]


def _banner(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}", flush=True)


def foundations() -> None:
    _banner("dsh-common: the foundations")
    query = "数据库连接池耗尽导致超时 connection pool"
    print(f"query: {query}")
    print(f"  ICU word segments : {segment_words(query)}")
    print(f"  search terms      : {query_terms(query)}")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "src").mkdir()
        (workspace / "src" / "login.py").write_text("print('hi')\n")
        (workspace / "alias").symlink_to(workspace / "src")
        ws = resolve_workspace(workspace)
        for raw in ("src\\login.py", "../etc/passwd", "alias/login.py", ".git/config", "nul.txt"):
            try:
                relative, _ = resolve_in_workspace(ws, raw)
                print(f"  path {raw!r:18} -> accepted as {relative!r}")
            except DshError as exc:
                print(f"  path {raw!r:18} -> rejected ({exc.code}): {exc.message}")


def main() -> int:
    foundations()
    with tempfile.TemporaryDirectory(prefix="dsh-demo-home-") as home:
        env = {**os.environ, "DSH_HOME": home, "DSH_MEMORY_ROOT": str(Path(home) / "memory")}
        for title, script in PRODUCT_DEMOS:
            path = ROOT / script
            if not path.exists():
                continue
            _banner(title)
            done = subprocess.run([sys.executable, str(path)], env=env, check=False)
            if done.returncode != 0:
                print(f"demo {script} failed with exit code {done.returncode}", file=sys.stderr)
                return done.returncode
    print("\nDone. `make test` runs every test; each package README shows more.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

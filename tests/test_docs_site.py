"""The documentation site builds with ``mkdocs build --strict`` and no warning at all.

Strict mode turns every warning into a failure: a link to a missing page or anchor, a page
left out of the nav, an API reference (``::: dsh_memory``) that does not resolve. The second
test proves the site's own configuration catches a broken link, so the first one cannot
pass by accident.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "mkdocs.yml"
# Material's notice about MkDocs 2.0 is printed on every build; it is not about our pages.
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(config),
            "--site-dir",
            str(site),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=config.parent,
        env=ENV,
    )


def test_the_site_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    done = _build(CONFIG, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    for page in ("index.html", "compatibility/memory.html", "api/knowledge.html"):
        assert (tmp_path / "site" / page).is_file(), page
    # The API pages are generated from the docstrings, not left empty.
    api = (tmp_path / "site" / "api" / "memory.html").read_text(encoding="utf-8")
    assert 'id="dsh_memory.MemoryService.rollback"' in api
    assert ":meth:" not in api and ":class:" not in api  # Sphinx roles render as code


def test_the_site_configuration_fails_on_a_broken_link(tmp_path: Path) -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the design](design.md).\n", encoding="utf-8")
    config.update(docs_dir=str(docs), nav=["index.md"])
    config["plugins"] = ["search"]  # the API pages need the repository's sources
    broken = tmp_path / "mkdocs.yml"
    broken.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = _build(broken, tmp_path / "site")
    assert done.returncode != 0
    assert "design.md" in done.stderr

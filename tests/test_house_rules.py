"""House rules that no tool enforces by itself, checked over the whole repository.

- The formatter lays out every file: no ``# fmt: skip`` / ``# fmt: off`` markers.
- Prose is about the product: code, tests and documentation name behaviours, not tracker
  entries or milestone labels, which no reader of the repository can open.
- Typer stays behind each product's command line: only a package's ``cli`` module (or
  ``cli`` package; dsh-common's holds the Typer helpers the products' command lines share)
  imports it, so the library, hooks, MCP servers and fast path never pay for it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"


def _files(*patterns: str) -> list[Path]:
    found: set[Path] = set()
    for pattern in patterns:
        found.update(ROOT.glob(pattern))
    skipped = {".venv", "node_modules", "site", "__pycache__"}
    return sorted(p for p in found if p.is_file() and skipped.isdisjoint(p.parts))


PYTHON = _files("packages/*/src/**/*.py", "packages/*/tests/**/*.py", "packages/*/bench/**/*.py")
PYTHON += _files("tests/**/*.py", "scripts/**/*.py")
PROSE = PYTHON + _files("docs/**/*.md", "*.md", "packages/*/*.md", "packages/*/docs/**/*.md")

FORMATTER_MARKER = re.compile(r"#\s*fmt:\s*(skip|off)\b")
TRACKER_TALK = re.compile(
    r"\b[Ii]ssue\s*#?\d+"  # "issue 8", "issue #12"
    r"|\b[Ii]ssue \d+,? points? \d+"
    r"|\bmilestones? M\d\b|\(M[0-5]\b"  # milestone labels: "(M4)", "milestones M1"
    r"|partner section"
)
TYPER_IMPORT = re.compile(r"^\s*(import typer|from typer\b)", re.MULTILINE)


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_file_lists_are_not_empty() -> None:
    # A glob that stopped matching would make every rule below pass on nothing.
    assert len(PYTHON) > 200
    assert any(p.name == "README.md" for p in PROSE)
    assert any(p.parent.name == "docs" for p in PROSE)


def test_the_formatter_lays_out_every_file() -> None:
    this = Path(__file__).resolve()
    marked = [
        f"{_relative(path)}:{number}"
        for path in PYTHON
        if path != this
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORMATTER_MARKER.search(line)
    ]
    assert marked == []


def test_prose_names_behaviours_not_tracker_entries() -> None:
    this = Path(__file__).resolve()
    talk = [
        f"{_relative(path)}:{number}: {line.strip()[:80]}"
        for path in PROSE
        if path != this
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TRACKER_TALK.search(line)
    ]
    assert talk == []


@pytest.mark.parametrize(
    "line",
    ["regression tests for issue #8", "Issue 8, point 1: a partial clone", "extraction (M4)"],
)
def test_the_tracker_pattern_catches_what_it_is_for(line: str) -> None:
    assert TRACKER_TALK.search(line)


def _is_command_line(path: Path) -> bool:
    return path.stem == "cli" or "cli" in path.parent.parts[-1:]


def test_only_a_command_line_module_imports_typer() -> None:
    sources = _files("packages/*/src/**/*.py")
    importers = [p for p in sources if TYPER_IMPORT.search(p.read_text(encoding="utf-8"))]
    assert importers, "no module imports typer: the pattern is out of date"
    assert [_relative(p) for p in importers if not _is_command_line(p)] == []

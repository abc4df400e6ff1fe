"""The READMEs stand on their own: every mention of an earlier tool names and links it, and
no link or relative path leaves the repository except to public web pages (a reader of the
checkout has nothing above it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [
        ROOT / "README.md",
        *ROOT.glob("packages/*/README.md"),
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("packages/*/docs/*.md"),
    ]
)
EARLIER_TOOLS = (
    "https://github.com/seriousz158/dsh-memory",
    "https://github.com/Claven07/dsh-knowledge",
    "https://github.com/Nocteve/dsh-compound",  # the dsh-compound Node helper
)
# A mention and its link may be a line apart ("the earlier tool, the
# [dsh-compound Node helper](…)"), not a paragraph apart.
WINDOW = 250
MENTION = re.compile(r"earlier\s+tools?\b|\bNode\s+(?:helper|tool)\b|\bearlier\s+Node\b", re.I)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A relative path that climbs (``../x``), in a link, in code or in prose.
CLIMBING_PATH = re.compile(r"(?<![\w./])(?:\.\./)+[\w.-]+(?:/[\w.-]+)*")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def unlinked_mentions(text: str) -> list[str]:
    """``line N: 'mention'`` for each earlier-tool mention with no link to one close by."""
    unlinked = []
    for match in MENTION.finditer(text):
        after = text[match.start() : match.end() + WINDOW]
        if not any(f"]({url})" in after for url in EARLIER_TOOLS):
            line = text.count("\n", 0, match.start()) + 1
            unlinked.append(f"line {line}: {match[0]!r}")
    return unlinked


def paths_leaving(document: Path, text: str) -> list[str]:
    """Relative paths in ``text`` that climb above the repository from ``document``."""
    return [
        climbing
        for climbing in CLIMBING_PATH.findall(text)
        if not (document.parent / climbing).resolve().is_relative_to(ROOT)
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_every_earlier_tool_mention_is_named_and_linked(document: Path) -> None:
    unlinked = unlinked_mentions(document.read_text(encoding="utf-8"))
    assert not unlinked, f"{_name(document)}: earlier-tool mentions without a link: {unlinked}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_links_stay_in_the_repository_or_are_public_pages(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    leaving = paths_leaving(document, text)
    assert not leaving, f"{_name(document)} names paths outside the repository: {leaving}"
    # Code is not a link: a regular expression like `](?:token)` in backticks is text.
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)
    for target in LINK.findall(prose):
        if target.startswith("#"):
            continue
        if re.match(r"[a-z]+:", target):
            assert target.startswith("https://"), f"{_name(document)}: {target}"
            continue
        resolved = (document.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), f"{_name(document)} leaves the repository: {target}"
        assert resolved.exists(), f"{_name(document)} links to a missing file: {target}"


def test_the_checker_catches_an_unlinked_mention() -> None:
    far = "x" * (WINDOW + 10)
    assert unlinked_mentions("as the earlier\n  tool does.") == ["line 1: 'earlier\\n  tool'"]
    assert unlinked_mentions("the Node helper counts them") == ["line 1: 'Node helper'"]
    assert unlinked_mentions(
        f"the earlier tool {far} [a](https://github.com/Claven07/dsh-knowledge)"
    ) == ["line 1: 'earlier tool'"]
    assert (
        unlinked_mentions(
            "as [seriousz158/dsh-memory](https://github.com/seriousz158/dsh-memory) does; the "
            "earlier tool, [Claven07/dsh-knowledge](https://github.com/Claven07/dsh-knowledge)"
        )
        == []
    )


def test_the_checker_catches_a_path_above_the_repository() -> None:
    readme = ROOT / "packages" / "compound" / "README.md"
    text = "see `../../../desk/spec.md` and [spec](../../../desk/spec.md); ../README.md is ours"
    assert paths_leaving(readme, text) == ["../../../desk/spec.md", "../../../desk/spec.md"]
    assert paths_leaving(readme, "[root](../../README.md), ../memory-repo/docs") == []

"""The dsh skill: one text, shipped in the wheel (for setup) and in the Claude Code plugin."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_plugin_ships_the_same_skill_as_the_package() -> None:
    packaged = files("dsh_compound").joinpath("skill", "SKILL.md").read_text(encoding="utf-8")
    plugin = ROOT / "integrations" / "claude-code" / "skills" / "dsh" / "SKILL.md"
    assert plugin.read_text(encoding="utf-8") == packaged


def test_the_skill_has_the_front_matter_hosts_need() -> None:
    text = files("dsh_compound").joinpath("skill", "SKILL.md").read_text(encoding="utf-8")
    head, _, body = text.removeprefix("---\n").partition("\n---\n")
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    assert fields["name"] == "dsh"
    assert "capture" in fields["description"] and "recall" in fields["description"].lower()
    assert len(fields["description"]) <= 1024
    assert "compound_capture" in body and "replace" in body and "untrusted" in body

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import dsh_knowledge


@pytest.mark.parametrize("name", dsh_knowledge.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(dsh_knowledge, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = dsh_knowledge.not_a_name  # type: ignore[attr-defined]


def test_importing_the_package_loads_no_storage_or_git_code() -> None:
    code = (
        "import sys, dsh_knowledge; "
        "print(sorted(m for m in sys.modules if m.startswith('dsh_knowledge.')))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert output.strip() == "['dsh_knowledge.errors']"


def test_only_the_command_line_imports_typer() -> None:
    source = Path(dsh_knowledge.__file__).parent
    importers = sorted(
        path.relative_to(source).as_posix()
        for path in source.rglob("*.py")
        if re.search(r"^\s*(import typer|from typer\b)", path.read_text(), re.MULTILINE)
    )
    assert importers and all(name.startswith("cli/") for name in importers), importers

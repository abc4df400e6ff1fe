"""The command lines are a package of their own, one module per program, and the only code of
dsh-memory that imports typer: the library, the fast path, the hooks and the MCP server
never pay for it, and neither program builds the other's parser."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import dsh_memory

TYPER_IMPORT = re.compile(r"^\s*(import typer|from typer\b)", re.MULTILINE)


def test_only_the_command_line_package_imports_typer() -> None:
    source = Path(dsh_memory.__file__).parent
    importers = sorted(
        path.relative_to(source).as_posix()
        for path in source.rglob("*.py")
        if TYPER_IMPORT.search(path.read_text(encoding="utf-8"))
    )
    assert importers, "no module imports typer: the pattern is out of date"
    assert all(name.startswith("cli/") for name in importers), importers


def _imported_after(statement: str) -> set[str]:
    probe = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.split())


def test_each_program_imports_its_own_command_line_only() -> None:
    memory = _imported_after("import dsh_memory.cli.memory")
    sync = _imported_after("import dsh_memory.cli.sync")
    assert "dsh_memory.cli.sync" not in memory
    assert "dsh_memory.cli.memory" not in sync
    assert "typer" in memory and "typer" in sync
    # The package itself is a name for the two programs: importing it builds neither.
    assert {"typer", "dsh_memory.cli.memory", "dsh_memory.cli.sync"}.isdisjoint(
        _imported_after("import dsh_memory.cli")
    )


GROUPS = ("store", "write", "sync", "remote", "search")


def test_a_group_of_modules_re_exports_nothing() -> None:
    # A group's __init__ that imported its modules would make every import of one of them
    # pay for all of them - the frequent reads and the hooks would start slower.
    source = Path(dsh_memory.__file__).parent
    for group in GROUPS:
        tree = ast.parse((source / group / "__init__.py").read_text(encoding="utf-8"))
        assert len(tree.body) == 1 and ast.get_docstring(tree), group
    loaded = _imported_after("import dsh_memory.search.scoring")
    assert "dsh_memory.search.scoring" in loaded
    assert {"dsh_memory.search.search_index", "dsh_memory.search.hybrid"}.isdisjoint(loaded)

"""The command lines of dsh-memory, one module per program: the only part of it that
imports typer.

- :mod:`dsh_memory.cli.memory`: ``dsh-memory``, one subcommand per ``memory`` method (the
  console script, :mod:`dsh_memory.launcher`, answers hooks and the frequent reads without
  it);
- :mod:`dsh_memory.cli.sync`: ``dsh-memory-sync``, one consolidation run;
- :mod:`dsh_memory.cli._shared`: what both use, the ``--root`` option and the printing of an
  envelope.

Each program's module is imported only when that program runs. ``python -m
dsh_memory.cli`` runs ``dsh-memory`` without the launcher's fast path.
"""

from __future__ import annotations

from typing import NoReturn


def main() -> NoReturn:
    """``dsh-memory``'s command line (:func:`dsh_memory.cli.memory.main`)."""
    from dsh_memory.cli.memory import main as run

    run()


def sync_main() -> NoReturn:
    """``dsh-memory-sync`` (:func:`dsh_memory.cli.sync.main`)."""
    from dsh_memory.cli.sync import main as run

    run()

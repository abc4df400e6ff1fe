"""``python -m dsh_knowledge.cli``: the Typer command line, without the launcher's fast path."""

from dsh_knowledge.cli import main

main()

"""``python -m dsh_memory.cli``: ``dsh-memory``'s Typer command line, without the launcher's
fast path."""

from dsh_memory.cli.memory import main

main()

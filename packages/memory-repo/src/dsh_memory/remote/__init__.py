"""Several machines: the memory's Git remote, ``pull`` (fetch and merge another machine's
memory), ``push``, and ``dsh-memory-sync --remote``.

Re-exports nothing: importing one module of the group loads only what that module needs.
"""

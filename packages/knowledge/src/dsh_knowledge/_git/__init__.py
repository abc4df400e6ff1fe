"""Read-only, batched Git inspection behind provenance, freshness and health (private).

- :mod:`.inspect`: the entry point, :func:`~dsh_knowledge._git.inspect.inspect_snapshots`,
  and the bounds and value checks it applies;
- :mod:`.compare`: recorded ``(commit, path)`` snapshots against the index and work tree;
- :mod:`.conversion`: what git would store for a work-tree file (line endings, modes);
- :mod:`.session`: one inspection's git processes, budget and failure reasons.

The public faces are :mod:`dsh_knowledge.provenance`, :mod:`dsh_knowledge.freshness` and
:mod:`dsh_knowledge.health`.
"""

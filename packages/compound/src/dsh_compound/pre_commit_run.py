"""What ``check --pre-commit`` looks at, decided in one place from what pre-commit and git
tell the hook.

pre-commit runs a hook in several ways, and each tells differently what "the change" is:

1. ``pre-commit run --from-ref A --to-ref B`` exports ``PRE_COMMIT_FROM_REF`` and
   ``PRE_COMMIT_TO_REF``: the lessons whose sources changed from the merge base of A and B
   to B (what pre-commit itself compares), renames under both names, deletions included.
2. ``git commit`` runs the hook with ``GIT_INDEX_FILE`` naming the index the commit is
   made from (``commit -a`` and ``commit <paths>`` use an index of their own): the
   staged changes of that index, deletions included. pre-commit's file names are not
   used here: it leaves deleted files out of them.
3. Anything else is a run by hand (``pre-commit run``, ``--all-files``, ``--files X``,
   ``--hook-stage manual``): the lessons touching the files pre-commit names, plus the
   sources the index deletes (again missing from its names). With no names and no
   staged deletion (a plain run with nothing staged) every lesson is checked.

pre-commit runs hooks from the repository's top level and names files relative to it;
they are turned into workspace-relative paths here, and names outside the workspace are
dropped. A file list too long for one command line is split by pre-commit over several
runs of the hook; each then reports what its share touches (in case 3) or the whole
change (in cases 1 and 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from dsh_compound.changed_paths import paths_changed_between, staged_paths


def workspace_relative(workspace: str | os.PathLike[str], names: Sequence[str]) -> set[str]:
    """``names`` (relative to the current directory) as paths inside ``workspace``."""
    root = os.path.realpath(workspace)
    here = os.getcwd()
    inside: set[str] = set()
    for name in names:
        relative = os.path.relpath(os.path.join(here, name), root)
        if relative not in (os.curdir, os.pardir) and not relative.startswith(os.pardir + os.sep):
            inside.add(relative.replace(os.sep, "/"))
    return inside


def selected_paths(
    workspace: str | os.PathLike[str],
    names: Sequence[str],
    environ: Mapping[str, str],
) -> set[str] | None:
    """The workspace-relative paths whose lessons the hook checks, or None for every lesson."""
    from_ref, to_ref = environ.get("PRE_COMMIT_FROM_REF"), environ.get("PRE_COMMIT_TO_REF")
    if from_ref and to_ref:
        return paths_changed_between(workspace, from_ref, to_ref)
    index_file = environ.get("GIT_INDEX_FILE")
    if index_file:
        return staged_paths(workspace, index_file=index_file)
    deleted = staged_paths(workspace, deletions_only=True)
    if not names and not deleted:
        return None
    return workspace_relative(workspace, names) | deleted

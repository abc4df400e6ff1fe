"""dsh-common: the foundations every dsh product stands on.

Modules, one job each:

* :mod:`dsh_common.paths` - workspace canonicalisation and untrusted path validation
* :mod:`dsh_common.io` - bounded link-refusing reads, exclusive create, atomic replace
* :mod:`dsh_common.digest` - SHA-256 of bytes and files
* :mod:`dsh_common.locks` - lock files that name their owner
* :mod:`dsh_common.text` - NFKC/lowercase, ICU word segmentation, Han bigrams
* :mod:`dsh_common.git` - the hardened git runner and its batch helpers
* :mod:`dsh_common.jsonio`, :mod:`dsh_common.cli` - JSON and the CLI conventions
* :mod:`dsh_common.errors` - ``DshError`` and its leaves
* :mod:`dsh_common.lazy` - lazy public names for a package's ``__init__``

Submodules are imported on use (``from dsh_common.text import query_terms``) so that a
command pays only for what it needs at start-up; this package imports nothing eagerly.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

"""dsh-common: the foundations every dsh product stands on.

Modules, one job each:

* :mod:`dsh_common.errors` - ``DshError`` and its leaves, each with a stable code
* :mod:`dsh_common.paths` - workspace canonicalisation and untrusted path validation
* :mod:`dsh_common.io` - bounded link-refusing reads, exclusive create, atomic replace
* :mod:`dsh_common.digest` - SHA-256 of bytes and files
* :mod:`dsh_common.locks` - lock files that name their owner
* :mod:`dsh_common.locate` - the default workspace, found without running git
* :mod:`dsh_common.text` - NFKC/lowercase, ICU word segmentation, Han bigrams
* :mod:`dsh_common.secrets` - the one secret detector
* :mod:`dsh_common.git`, :mod:`dsh_common.git_remote` - the hardened git runner, and the
  one door to a remote
* :mod:`dsh_common.programs` - programs found as absolute paths outside the repository
* :mod:`dsh_common.jsonio`, :mod:`dsh_common.jsonlines` - JSON out, and JSON lines in
* :mod:`dsh_common.cli`, :mod:`dsh_common.fastpath` - the command-line conventions, and
  frequent commands without the parser
* :mod:`dsh_common.lazy` - lazy public names for a package's ``__init__``
* :mod:`dsh_common.agent_setup`, :mod:`dsh_common.agent_hooks`,
  :mod:`dsh_common.mcp_stdio` - what the products' agent setup, hooks and MCP servers share
* :mod:`dsh_common.embedding` - ranking by meaning (the ``[semantic]`` extra)

Submodules are imported on use (``from dsh_common.text import query_terms``) so that a
command pays only for what it needs at start-up; this package imports nothing eagerly.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

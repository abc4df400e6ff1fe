"""Lazy public names for a package's ``__init__``.

Every dsh command starts once per agent call, so a package's ``__init__`` must not import
its git, SQLite or ICU machinery just to be importable. A package lists its public names and
the modules that define them; the first access imports the module and caches the value.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``exports`` (name -> full module name) on first use.

    Usage in ``__init__.py``: ``__getattr__ = lazy_exports(__name__, {"capture": "pkg.writing"})``.
    """

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    return __getattr__

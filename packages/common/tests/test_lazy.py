from __future__ import annotations

import sys
import types

import pytest

from dsh_common.lazy import lazy_exports


def test_lazy_exports_import_on_first_use_and_cache() -> None:
    package = types.ModuleType("lazy_demo_pkg")
    sys.modules["lazy_demo_pkg"] = package
    sys.modules.pop("json.decoder", None)
    try:
        package.__getattr__ = lazy_exports(  # type: ignore[attr-defined]
            "lazy_demo_pkg", {"JSONDecodeError": "json.decoder"}
        )
        value = package.JSONDecodeError  # type: ignore[attr-defined]
        assert "json.decoder" in sys.modules
        assert value.__name__ == "JSONDecodeError"
        assert package.__dict__["JSONDecodeError"] is value
        with pytest.raises(AttributeError, match="no attribute 'missing'"):
            package.missing  # type: ignore[attr-defined]  # noqa: B018
    finally:
        del sys.modules["lazy_demo_pkg"]

from __future__ import annotations

import os
from pathlib import Path

from dsh_memory.service import MemoryService


def _settings() -> Path:
    """The settings file under the test's ``DSH_HOME``."""
    return Path(os.environ["DSH_HOME"]) / "settings.yaml"


def test_enabled_defaults_to_true_without_settings_file() -> None:
    assert MemoryService().get_settings() == {"ok": True, "value": {"enabled": True}}


def test_set_enabled_false_persists_in_settings_yaml(tmp_path: Path) -> None:
    service = MemoryService()
    assert service.set_enabled(False) == {"ok": True, "value": {"enabled": False}}
    assert "memory:\n  enabled: false\n" in _settings().read_text()
    assert service.get_settings()["value"] == {"enabled": False}


def test_set_enabled_keeps_other_settings_bytes(tmp_path: Path) -> None:
    path = _settings()
    path.parent.mkdir(parents=True)
    path.write_text("theme: dark\nmemory:\n  enabled: false  # off for now\n  other: 1\nz: 2\n")
    MemoryService().set_enabled(True)
    assert path.read_text() == (
        "theme: dark\nmemory:\n  enabled: true # off for now\n  other: 1\nz: 2\n"
    )


def test_set_enabled_rejects_non_boolean(tmp_path: Path) -> None:
    result = MemoryService().set_enabled("maybe")
    assert result == {"ok": False, "error": {"code": "settings-invalid-request"}}
    assert not _settings().exists()


def test_unparsable_enabled_value_is_settings_unavailable(tmp_path: Path) -> None:
    path = _settings()
    path.parent.mkdir(parents=True)
    path.write_text("memory:\n  enabled: perhaps\n")
    assert MemoryService().get_settings()["error"] == {"code": "settings-unavailable"}


def test_hard_linked_settings_file_is_write_failed(tmp_path: Path) -> None:
    path = _settings()
    path.parent.mkdir(parents=True)
    path.write_text("memory:\n  enabled: true\n")
    (tmp_path / "second-link.yaml").hardlink_to(path)
    assert MemoryService().set_enabled(True)["error"] == {"code": "settings-write-failed"}
    assert (tmp_path / "second-link.yaml").read_text() == "memory:\n  enabled: true\n"

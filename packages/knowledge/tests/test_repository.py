from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from dsh_knowledge.errors import (
    GitProvenanceError,
    InvalidSupersedeError,
    InvalidTransitionError,
    NotFoundError,
    ScopeChangeError,
    ValidationError,
)
from dsh_knowledge.models import KNOWLEDGE_STATUSES, parse_timestamp_ms
from dsh_knowledge.repository import KnowledgeRepository, escape_like

from .backend_helpers import integrity_errors

WS = {"workspace": "/work/payments"}
WS_P = {"workspace": "/work/payments", "project": "payments"}
NOW = "2025-03-01T10:00:00.000Z"


def _add(
    repository: KnowledgeRepository, content: str = "A fact.", **kwargs: Any
) -> dict[str, Any]:
    kwargs.setdefault("type", "fact")
    kwargs.setdefault("scope", WS)
    return repository.create(content=content, **kwargs)


def _count(repository: KnowledgeRepository) -> int:
    return int(repository.store.connection.execute("SELECT count(*) FROM knowledge").fetchone()[0])


def test_create_assigns_uuid_timestamps_and_candidate_status(
    repository: KnowledgeRepository,
) -> None:
    item = _add(repository, evidence=[{"type": "session", "source": "s-1", "timestamp": NOW}])
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", item["id"]
    )
    assert item["status"] == "candidate"
    assert item["creationOrigin"] == "explicit"
    assert item["createdAt"] == item["updatedAt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", item["createdAt"])
    assert list(item) == [
        "id",
        "type",
        "content",
        "scope",
        "status",
        "creationOrigin",
        "evidence",
        "createdAt",
        "updatedAt",
    ]
    assert item["evidence"] == [{"type": "session", "source": "s-1", "timestamp": NOW}]


def test_create_omits_project_for_workspace_wide_scope(repository: KnowledgeRepository) -> None:
    assert _add(repository, scope={"workspace": "w", "project": None})["scope"] == {
        "workspace": "w"
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": "   "}, "Knowledge content must not be empty."),
        ({"scope": {"workspace": " "}}, "Knowledge scope must include a non-empty workspace."),
        ({"scope": {"workspace": "w", "project": " "}}, "Project scope must be a non-empty"),
        ({"type": "opinion"}, "Invalid knowledge type: opinion"),
        ({"creation_origin": "robot"}, "Invalid creation origin"),
        (
            {"evidence": [{"type": "file", "source": "a", "timestamp": "yesterday"}]},
            "Evidence timestamp must be an ISO timestamp: yesterday",
        ),
        (
            {"evidence": [{"type": "file", "source": "a", "timestamp": "2025-02-30T00:00:00Z"}]},
            "Evidence timestamp must be an ISO timestamp",
        ),
        (
            {"evidence": [{"type": "file", "source": "a", "locator": "", "timestamp": NOW}]},
            "Evidence locator must not be empty",
        ),
        ({"evidence": [{"type": "web", "source": "a", "timestamp": NOW}]}, "Invalid evidence type"),
        (
            {"evidence": [{"type": "file", "source": " ", "timestamp": NOW}]},
            "Evidence source must not be empty",
        ),
    ],
)
def test_invalid_create_input_is_rejected_and_writes_nothing(
    repository: KnowledgeRepository, kwargs: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"content": "Valid.", "type": "fact", "scope": WS, **kwargs}
    with pytest.raises(ValidationError, match=re.escape(message)):
        repository.create(**arguments)
    assert _count(repository) == 0


def test_git_provenance_is_normalised(repository: KnowledgeRepository) -> None:
    item = _add(
        repository,
        evidence=[
            {
                "type": "file",
                "source": "src/a.py",
                "timestamp": NOW,
                "gitProvenance": {"commit": "ABCDEF0123" * 4, "path": "./src\\\\sub//a.py"},
            }
        ],
    )
    assert item["evidence"][0]["gitProvenance"] == {
        "commit": "abcdef0123" * 4,
        "path": "src/sub/a.py",
    }


def test_sha256_commit_is_accepted(repository: KnowledgeRepository) -> None:
    provenance = {"commit": "b" * 64, "path": "a.py"}
    item = _add(
        repository,
        evidence=[
            {"type": "file", "source": "a.py", "timestamp": NOW, "gitProvenance": provenance}
        ],
    )
    assert item["evidence"][0]["gitProvenance"] == provenance


@pytest.mark.parametrize(
    "provenance",
    [
        {"commit": "abc123", "path": "a.py"},
        {"commit": "g" * 40, "path": "a.py"},
        {"commit": "a" * 41, "path": "a.py"},
        {"commit": "a" * 40, "path": "/etc/passwd"},
        {"commit": "a" * 40, "path": "C:/x.py"},
        {"commit": "a" * 40, "path": "src/../../x.py"},
        {"commit": "a" * 40, "path": "./"},
        {"commit": "a" * 40, "path": "a\0b"},
        {"commit": "a" * 40, "path": "x" * 4097},
    ],
)
def test_bad_git_provenance_is_rejected(
    repository: KnowledgeRepository, provenance: dict[str, str]
) -> None:
    with pytest.raises(GitProvenanceError):
        _add(
            repository,
            evidence=[
                {"type": "file", "source": "a", "timestamp": NOW, "gitProvenance": provenance}
            ],
        )
    assert _count(repository) == 0


def test_git_provenance_only_on_file_evidence(repository: KnowledgeRepository) -> None:
    with pytest.raises(GitProvenanceError, match="only be attached to file evidence"):
        _add(
            repository,
            evidence=[
                {
                    "type": "session",
                    "source": "s",
                    "timestamp": NOW,
                    "gitProvenance": {"commit": "a" * 40, "path": "a.py"},
                }
            ],
        )


def test_get_returns_none_and_require_raises_not_found(repository: KnowledgeRepository) -> None:
    assert repository.get("missing") is None
    with pytest.raises(NotFoundError, match="Knowledge item not found: missing") as caught:
        repository.require("missing")
    assert caught.value.code == "not-found"


def test_list_orders_by_updated_desc_created_desc_id_asc(repository: KnowledgeRepository) -> None:
    ids = [_add(repository, f"item {n}")["id"] for n in range(4)]
    db = repository.store.connection
    stamps = {
        ids[0]: ("2025-01-01T00:00:00.000Z", "2025-01-03T00:00:00.000Z"),  # newest update
        ids[1]: ("2025-01-02T00:00:00.000Z", "2025-01-02T00:00:00.000Z"),  # newer creation
        ids[2]: ("2025-01-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z"),
        ids[3]: ("2025-01-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z"),
    }
    for item_id, (created, updated) in stamps.items():
        db.execute(
            "UPDATE knowledge SET created_at = ?, updated_at = ? WHERE id = ?",
            (created, updated, item_id),
        )
    expected = [ids[0], ids[1], *sorted(ids[2:])]
    assert [i["id"] for i in repository.list()] == expected


def test_list_filters_by_scope_type_status_origin_and_limit(
    repository: KnowledgeRepository,
) -> None:
    wide = _add(repository, "wide")
    scoped = _add(repository, "scoped", scope=WS_P, type="decision")
    auto = _add(repository, "auto", creation_origin="automatic")
    _add(repository, "elsewhere", scope={"workspace": "/other"})
    assert {i["id"] for i in repository.list(workspace=WS["workspace"])} == {
        wide["id"],
        scoped["id"],
        auto["id"],
    }
    assert {i["id"] for i in repository.list(workspace=WS["workspace"], project=None)} == {
        wide["id"],
        auto["id"],
    }
    assert [i["id"] for i in repository.list(project="payments")] == [scoped["id"]]
    assert [i["id"] for i in repository.list(type="decision")] == [scoped["id"]]
    assert [i["id"] for i in repository.list(creation_origin="automatic")] == [auto["id"]]
    assert len(repository.list(limit=2)) == 2
    assert repository.list(status="verified") == []


@pytest.mark.parametrize("limit", [0, -1, True])
def test_list_rejects_a_non_positive_limit(repository: KnowledgeRepository, limit: int) -> None:
    with pytest.raises(ValidationError, match=r"Limit must be a positive integer\."):
        repository.list(limit=limit)


def test_search_is_literal_with_like_wildcards_escaped(repository: KnowledgeRepository) -> None:
    percent = _add(repository, "Coverage is 100% on main")
    underscore = _add(repository, "Use snake_case names")
    backslash = _add(repository, "Paths like C:\\temp break")
    _add(repository, "Coverage is 1000 on main")
    _add(repository, "Use snakeXcase names")
    assert [i["id"] for i in repository.search("100%")] == [percent["id"]]
    assert [i["id"] for i in repository.search("snake_case")] == [underscore["id"]]
    assert [i["id"] for i in repository.search("C:\\temp")] == [backslash["id"]]
    assert escape_like("a\\%_") == "a\\\\\\%\\_"


def test_search_is_case_insensitive_for_ascii_and_trims(repository: KnowledgeRepository) -> None:
    item = _add(repository, "ResponseRouter decides")
    assert [i["id"] for i in repository.search("  responserouter ")] == [item["id"]]


def test_blank_search_returns_nothing(repository: KnowledgeRepository) -> None:
    _add(repository, "anything")
    assert repository.search("   ") == []


def _item_with_status(repository: KnowledgeRepository, status: str) -> dict[str, Any]:
    item = _add(repository, f"status {status}")
    if status in ("verified", "superseded"):
        repository.verify(item["id"])
    if status == "superseded":
        replacement = _add(repository, "replacement")
        repository.verify(replacement["id"])
        return repository.supersede(item["id"], replacement["id"])
    if status == "archived":
        return repository.archive(item["id"])
    return repository.require(item["id"])


ALLOWED = {
    ("candidate", "verified"),
    ("candidate", "archived"),
    ("verified", "archived"),
    ("superseded", "archived"),
}


@pytest.mark.parametrize("current", KNOWLEDGE_STATUSES)
@pytest.mark.parametrize("target", KNOWLEDGE_STATUSES)
def test_status_transition_table(
    repository: KnowledgeRepository, current: str, target: str
) -> None:
    item = _item_with_status(repository, current)
    if current == target or (current, target) in ALLOWED:
        assert repository.update(item["id"], status=target)["status"] == target
        return
    expected = f"Invalid knowledge status transition: {current} -> {target}."
    if target == "superseded":
        expected += " Use supersede(id, replacementId) instead."
    with pytest.raises(InvalidTransitionError) as caught:
        repository.update(item["id"], status=target)
    assert str(caught.value) == expected
    assert repository.require(item["id"])["status"] == current


def test_updated_at_strictly_increases(repository: KnowledgeRepository) -> None:
    item = _add(repository)
    stamps = [item["updatedAt"]]
    for _ in range(5):
        stamps.append(repository.update(item["id"], content="again")["updatedAt"])
    parsed = [parse_timestamp_ms(stamp) for stamp in stamps]
    assert all(b > a for a, b in itertools.pairwise(parsed))  # type: ignore[operator]


def test_updated_at_moves_past_a_future_previous_value(repository: KnowledgeRepository) -> None:
    item = _add(repository)
    repository.store.connection.execute(
        "UPDATE knowledge SET updated_at = '2999-01-01T00:00:00.000Z'"
    )
    assert repository.verify(item["id"])["updatedAt"] == "2999-01-01T00:00:00.001Z"


def test_update_replaces_evidence_only_when_given(repository: KnowledgeRepository) -> None:
    evidence = [{"type": "session", "source": "s", "timestamp": NOW}]
    item = _add(repository, evidence=evidence)
    assert repository.update(item["id"], content="changed")["evidence"] == evidence
    assert repository.update(item["id"], evidence=[])["evidence"] == []


def _verified(repository: KnowledgeRepository, content: str, scope: Any = None) -> dict[str, Any]:
    item = _add(repository, content, scope=scope or WS_P)
    return repository.verify(item["id"])


def test_supersede_links_replacement(repository: KnowledgeRepository) -> None:
    old = _verified(repository, "old")
    new = _verified(repository, "new")
    result = repository.supersede(old["id"], new["id"])
    assert result["status"] == "superseded"
    assert result["replacementId"] == new["id"]
    assert list(result).index("replacementId") == list(result).index("creationOrigin") + 1


def test_supersede_refuses_itself(repository: KnowledgeRepository) -> None:
    item = _verified(repository, "self")
    with pytest.raises(InvalidSupersedeError, match="cannot supersede itself"):
        repository.supersede(item["id"], item["id"])


def test_supersede_requires_a_verified_current_item(repository: KnowledgeRepository) -> None:
    current = _add(repository, "candidate", scope=WS_P)
    replacement = _verified(repository, "new")
    with pytest.raises(InvalidTransitionError, match="candidate -> superseded"):
        repository.supersede(current["id"], replacement["id"])


def test_supersede_requires_a_verified_replacement(repository: KnowledgeRepository) -> None:
    current = _verified(repository, "old")
    replacement = _add(repository, "candidate", scope=WS_P)
    with pytest.raises(InvalidSupersedeError, match="Replacement knowledge must be verified"):
        repository.supersede(current["id"], replacement["id"])


def test_supersede_requires_the_same_scope(repository: KnowledgeRepository) -> None:
    current = _verified(repository, "old")
    replacement = _verified(repository, "new", scope=WS)
    with pytest.raises(InvalidSupersedeError, match="same workspace and project scope"):
        repository.supersede(current["id"], replacement["id"])
    assert repository.require(current["id"])["status"] == "verified"


def test_supersede_unknown_replacement_is_not_found(repository: KnowledgeRepository) -> None:
    current = _verified(repository, "old")
    with pytest.raises(NotFoundError):
        repository.supersede(current["id"], "missing")


def test_scope_cannot_change_inside_a_replacement(repository: KnowledgeRepository) -> None:
    old = _verified(repository, "old")
    new = _verified(repository, "new")
    repository.supersede(old["id"], new["id"])
    for item_id in (old["id"], new["id"]):
        with pytest.raises(ScopeChangeError):
            repository.update(item_id, scope=WS)


def test_scope_can_change_outside_a_replacement(repository: KnowledgeRepository) -> None:
    item = _add(repository, scope=WS_P)
    assert repository.update(item["id"], scope=WS)["scope"] == WS


def test_database_checks_back_the_lifecycle(repository: KnowledgeRepository) -> None:
    item = _add(repository)
    with pytest.raises(integrity_errors()):
        repository.store.connection.execute(
            "UPDATE knowledge SET status = 'superseded' WHERE id = ?", (item["id"],)
        )


def test_create_many_writes_all_or_nothing(repository: KnowledgeRepository) -> None:
    specs = [{"type": "fact", "content": f"bulk {n}", "scope": WS} for n in range(3)]
    ids = repository.create_many(specs)
    assert [i["content"] for i in repository.get_many(ids)] == ["bulk 0", "bulk 1", "bulk 2"]
    with pytest.raises(ValidationError):
        repository.create_many([*specs, {"type": "fact", "content": " ", "scope": WS}])
    assert _count(repository) == 3

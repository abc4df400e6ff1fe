"""Shared fixtures: the toolkit's hermetic home, a workspace with real source files, draft
builders, and the recall cache's parity with the cold scan on every corpus a test leaves
behind.

After each test, :func:`check_corpus` reads every corpus under the test's ``tmp_path`` three
ways - the cold scan (every file read and parsed), then through the recall cache twice (the
first read may write it, the second is served from it) - and asserts that the scans
(records, metadata, digests, statuses, warnings, counts) and the rankings for a set of
queries are identical, or that all three fail with the same error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_common.errors import DshError
from dsh_common.paths import resolve_workspace
from dsh_compound import corpus_index
from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import build_metadata, render_record, sha256
from dsh_compound.scoring import Terms, recall_terms


@pytest.fixture(autouse=True)
def isolated_home(hermetic_home: Path) -> Path:
    """The toolkit's hermetic home (dsh_test_support.home): HOME, DSH_HOME and git's global
    config in a fresh folder, no developer setting (DSH_RANKING included: lexical unless a
    test asks)."""
    return hermetic_home


@pytest.fixture(autouse=True)
def recall_cache_parity(isolated_home: Path, tmp_path: Path) -> Iterator[None]:
    """After the test: the cached and cold reads of every corpus it built agree."""
    yield
    for root in corpora(tmp_path):
        check_corpus(root)


@pytest.fixture(name="check_corpus")
def check_corpus_fixture() -> Callable[[Path], None]:
    return check_corpus


@pytest.fixture(scope="session")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model's weight cache, built once for the session (each test copies it)."""
    home = tmp_path_factory.mktemp("weights") / "dsh"
    done = subprocess.run(
        [sys.executable, "-c", "from dsh_common import embedding; print(embedding.warm())"],
        env={**os.environ, "DSH_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return home / "cache" / "embedding"


@pytest.fixture
def home_with_weights(isolated_home: Path, weights: Path) -> Path:
    """The test's DSH_HOME, with the weight cache a fresh process maps instead of building."""
    target = isolated_home / ".dsh" / "cache" / "embedding"
    target.mkdir(parents=True, mode=0o700)
    (isolated_home / ".dsh").chmod(0o700)
    (isolated_home / ".dsh" / "cache").chmod(0o700)
    for path in weights.iterdir():
        shutil.copy2(path, target / path.name)
        (target / path.name).chmod(0o600)
    return isolated_home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with two real source files."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
    (root / "tests" / "login.test.js").write_text("test('login', () => {});\n")
    return root


def make_draft(**overrides: Any) -> dict[str, Any]:
    """The example draft of the contract (docs/compatibility/compound.md), with fields replaced by
    ``overrides``."""
    draft: dict[str, Any] = {
        "id": "login-timeout",
        "title": "Login requests time out in the test environment",
        "tags": ["login", "timeout"],
        "problem": "Describe the observed failure.",
        "rootCause": "Describe the investigated cause and its limits.",
        "resolution": "Describe the verified resolution without overstating scope.",
        "whenToUse": "Describe the conditions in which this lesson applies.",
        "verification": {
            "command": "node --test tests/login.test.js",
            "result": "The author reports that the regression test passed.",
        },
        "files": ["src/login.js", "tests/login.test.js"],
    }
    draft.update(overrides)
    return draft


@pytest.fixture
def draft() -> dict[str, Any]:
    return make_draft()


def corpus_of(root: Path) -> Path:
    return root.joinpath(*CORPUS_DIRECTORY.split("/"))


def write_record(root: Path, **overrides: Any) -> Path:
    """Write a consistent record straight to the corpus (fast setup for scan tests).

    File digests are those of the current source bytes, so evidence starts unchanged.
    """
    draft = make_draft(**overrides)
    digests = [sha256((root / path).read_bytes()) for path in draft["files"]]
    metadata = build_metadata(
        draft, digests, created_at="2026-01-02T03:04:05.006Z", updated_at="2026-01-02T03:04:05.006Z"
    )
    corpus = corpus_of(root)
    corpus.mkdir(parents=True, exist_ok=True)
    location = corpus / f"{draft['id']}.md"
    location.write_bytes(render_record(metadata))
    return location


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


STAMP = "2026-01-02T03:04:05.006Z"


def plant_record(root: Path, record_id: str, files: list[tuple[str, str]], **fields: Any) -> Path:
    """Write a consistent record naming ``files`` as ``(path, sha256)`` pairs, whatever the
    files hold now (fast setup for records whose evidence a test controls)."""
    draft: dict[str, Any] = {
        "id": record_id,
        "title": f"Lesson {record_id}",
        "tags": ["login"],
        "problem": "Login times out.",
        "rootCause": "Pool exhausted.",
        "resolution": "Raise the pool size.",
        "whenToUse": "When login times out.",
        "verification": {"command": "make test", "result": "passed"},
        "files": [path for path, _ in files],
        **fields,
    }
    metadata = build_metadata(
        draft, [digest for _, digest in files], created_at=STAMP, updated_at=STAMP
    )
    corpus = corpus_of(root)
    corpus.mkdir(parents=True, exist_ok=True)
    location = corpus / f"{record_id}.md"
    location.write_bytes(render_record(metadata))
    return location


def source(root: Path, relative: str, text: str = "x = 1\n") -> tuple[str, str]:
    """Write a source file; its ``(relative path, sha256)`` for :func:`plant_record`."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return relative, sha256(path.read_bytes())


@pytest.fixture(name="make_draft")
def make_draft_fixture() -> Callable[..., dict[str, Any]]:
    return make_draft


@pytest.fixture(name="write_record")
def write_record_fixture() -> Callable[..., Path]:
    return write_record


@pytest.fixture(name="corpus_of")
def corpus_of_fixture() -> Callable[[Path], Path]:
    return corpus_of


@pytest.fixture(name="write_json")
def write_json_fixture() -> Callable[[Path, Any], Path]:
    return write_json


FIXED_QUERIES = [
    "login timeout",
    "Why does the redis cache time out?",
    "登录超时怎么办",
    "数据库连接池 pool",
    "zebra",
    "a",
    "e.g. 3.14 user_id don't",
    "数据库连接池耗尽导致登录超时测试环境的配置错误缓存失效重试退避死锁事务的是了在有和人这中大",
]


def corpora(base: Path) -> Iterator[Path]:
    """Every workspace under ``base`` that holds a corpus directory (links not followed)."""
    parts = CORPUS_DIRECTORY.split("/")
    for directory, subdirectories, _ in os.walk(base, onerror=lambda error: None):
        here = Path(directory)
        if here.parts[-len(parts) :] == tuple(parts):
            yield here.parents[len(parts) - 1]
        subdirectories[:] = [d for d in subdirectories if not (here / d).is_symlink()]


def _scan_state(view: corpus_index.CorpusView) -> dict[str, Any]:
    scan = view.scan
    return {
        "records": [
            (r.id, str(r.path), r.metadata, r.content_status, r.unknown_keys, r.digest)
            for r in scan.records
        ],
        "warnings": scan.warnings.as_list(),
        "scanned": scan.scanned,
        "truncated": scan.truncated,
    }


def _queries(view: corpus_index.CorpusView) -> list[str]:
    found = list(FIXED_QUERIES)
    for record in view.records[:8]:
        metadata = record.metadata
        found += [metadata["title"][:500], " ".join(metadata["tags"])[:500]]
        found.append(metadata["problem"][:500])
    return [query for query in found if query.strip()]


def _read(workspace: Path, *, cached: bool) -> tuple[str, Any]:
    try:
        selected = resolve_workspace(workspace)
        return "ok", corpus_index.read_corpus(selected, cached=cached)
    except (DshError, OSError) as error:
        return "error", (type(error).__name__, str(error))


def check_corpus(workspace: Path) -> None:
    """Assert that the cached and the cold reads of ``workspace``'s corpus agree."""
    cold_kind, cold = _read(workspace, cached=False)
    views = []
    with pytest.MonkeyPatch.context() as patch:
        # Every file counts as settled: the files a test just wrote are cached too.
        patch.setattr(corpus_index, "SETTLED_NS", -(10**12))
        for _ in range(2):
            kind, view = _read(workspace, cached=True)
            assert kind == cold_kind, (workspace, cold, view)
            views.append(view)
    if cold_kind == "error":
        assert all(view == cold for view in views), (workspace, cold, views)
        return
    expected = _scan_state(cold)
    for view in views:
        assert _scan_state(view) == expected, workspace
    for query in _queries(cold):
        terms = Terms(recall_terms(query))
        want = [(score, record.id) for score, record in cold.ranked(terms)]
        for view in views:
            assert [(s, r.id) for s, r in view.ranked(terms)] == want, (workspace, query)

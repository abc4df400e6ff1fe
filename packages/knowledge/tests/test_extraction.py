"""Automatic extraction: the classifier, the per-turn bounds, admission, transcripts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh_knowledge.classifier import classify_message
from dsh_knowledge.context_block import build_context
from dsh_knowledge.extraction import UserMessage, extract_candidates
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.transcripts import read_transcript

from .agent_helpers import command

WS = "/work/app"
SECRET = "api" + "_key=" + "abcdef123456"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We decided to use PostgreSQL for the billing service.", "decision"),
        ("Decision: the API returns ISO timestamps everywhere.", "decision"),
        ("The team has decided to deploy with Docker.", "decision"),
        ("Actually, the backend runs on port 8080.", "fact"),
        ("No, the cache must never store session tokens.", "fact"),
        ("The repository must never commit generated files.", "fact"),
        ("Deployments always go through the GitHub workflow.", "fact"),
        (
            "The build failed because the cache was stale; clearing it fixed the problem.",
            "lesson",
        ),
        (
            "Tests hung because the port was taken; it was resolved by adding a random port.",
            "lesson",
        ),
    ],
)
def test_classifier_accepts(text: str, expected: str) -> None:
    found = classify_message(text)
    assert found is not None and found[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "Should the API use PostgreSQL?",
        "Too short.",
        "Maybe the backend should use Redis.",
        "For now the build uses Python 3.11.",
        "Temporarily the service runs on port 9000.",
        "```python\nimport os\n```",
        "import os; the project uses Python.",
        "We decided to go for lunch at noon.",  # no durable cue
        "Please fix the failing test in the parser.",
        "The build failed yesterday.",  # failure without fix and cause
        "I like this color a lot today.",
    ],
)
def test_classifier_rejects(text: str) -> None:
    assert classify_message(text) is None


def test_only_the_first_sentence_is_kept() -> None:
    found = classify_message("We decided to use Redis for the cache. It was a long meeting!")
    assert found == ("decision", "We decided to use Redis for the cache.")


def test_correction_prefix_is_dropped() -> None:
    assert classify_message("Actually, the API uses port 8080.") == (
        "fact",
        "The API uses port 8080.",
    )


def turn(*texts: str, start: int = 1) -> list[UserMessage]:
    return [
        UserMessage(start + n, text, "2026-12-01T10:00:00.000Z") for n, text in enumerate(texts)
    ]


def test_admission_rules(repository: KnowledgeRepository) -> None:
    existing = repository.create(
        type="decision",
        content="We decided to use PostgreSQL for the billing service.",
        scope={"workspace": WS},
    )
    before = repository.require(existing["id"])
    report = extract_candidates(
        repository,
        [
            turn(
                "We decided to use PostgreSQL for the billing service.",  # duplicate
                "The API must " + SECRET,  # secret: skipped outright
                "The backend always uses Python 3.12.",
                "The frontend must use React 19.",
                "Deployment runs on Kubernetes only.",  # third candidate: over the turn limit
            ),
            turn("Actually, the database is SQLite in tests.", start=10),
        ],
        session_id="sess-9",
        workspace=WS,
    )
    assert report.skipped["duplicate"] == 1
    assert report.skipped["secret"] == 1
    assert report.skipped["turnLimit"] == 1
    contents = [item["content"] for item in report.admitted]
    assert contents == [
        "The backend always uses Python 3.12.",
        "The frontend must use React 19.",
        "The database is SQLite in tests.",
    ]
    for item in report.admitted:
        assert item["creationOrigin"] == "automatic" and item["status"] == "candidate"
        assert len(item["evidence"]) == 1
        assert item["evidence"][0]["type"] == "session"
        assert item["evidence"][0]["source"] == "sess-9"
    assert [i["evidence"][0]["locator"] for i in report.admitted] == ["seq=3", "seq=4", "seq=10"]
    assert repository.require(existing["id"]) == before  # nothing existing is modified
    stored = json.dumps(repository.list())
    assert SECRET not in stored
    # Automatic candidates stay out of retrieval until verified.
    assert build_context("backend python", repository=repository, workspace=WS) == (None, [])
    repository.verify(report.admitted[0]["id"])
    assert build_context("backend python", repository=repository, workspace=WS)[1] == [
        report.admitted[0]["id"]
    ]


def test_turn_bounds(repository: KnowledgeRepository) -> None:
    messages = [f"The service {n} must use Redis." for n in range(12)]
    report = extract_candidates(repository, [turn(*messages)], session_id="s", workspace=WS)
    assert report.skipped["overflow"] == 4  # only 8 messages per turn are looked at
    assert len(report.admitted) == 2
    huge = extract_candidates(
        repository,
        [turn(*(["The app must use Rust. " + "x" * 1300] * 5))],
        session_id="s",
        workspace=WS,
    )
    # 1,200 characters each, 4,000 per turn: the fourth message no longer fits.
    assert huge.skipped["overflow"] == 2


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    return path


def claude_lines(cwd: str) -> list[dict[str, Any]]:
    return [
        {"type": "summary", "summary": "x"},
        {
            "type": "user",
            "sessionId": "claude-sess",
            "cwd": cwd,
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": "We decided to use Redis for the cache."},
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The repo must use Go."}],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "The app must use Java.",
                    }
                ],
            },
        },
        {
            "type": "user",
            "isMeta": True,
            "message": {"role": "user", "content": "The project must use Perl."},
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Actually, the backend runs on port 8080."},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "ignored"},
                ],
            },
        },
    ]


def test_reads_claude_transcripts(tmp_path: Path) -> None:
    parsed = read_transcript(write_lines(tmp_path / "t.jsonl", claude_lines("/work/app")))
    assert parsed.session_id == "claude-sess" and parsed.cwd == "/work/app"
    assert [[m.text for m in t] for t in parsed.turns] == [
        ["We decided to use Redis for the cache."],
        ["Actually, the backend runs on port 8080."],
    ]
    assert [t[0].seq for t in parsed.turns] == [2, 6]
    assert parsed.unreadable_lines == 1


def test_reads_dsh_session_logs(tmp_path: Path) -> None:
    lines = [
        {"type": "session/header", "id": "dsh-sess", "cwd": "/work/app"},
        {
            "type": "user/message",
            "seq": 4,
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": "The API must use JSON."}],
        },
        {
            "type": "user/message",
            "seq": 5,
            "source": {"kind": "user-approval"},
            "content": "The app must use XML.",
        },
        {"type": "assistant/message", "seq": 6, "content": "The app must use YAML."},
        {"type": "turn/end"},
        {
            "type": "user/message",
            "seq": 9,
            "source": {"kind": "user"},
            "content": "Decision: the build uses uv.",
        },
    ]
    parsed = read_transcript(write_lines(tmp_path / "log.jsonl", lines))
    assert parsed.session_id == "dsh-sess"
    assert [[(m.seq, m.text) for m in t] for t in parsed.turns] == [
        [(4, "The API must use JSON.")],
        [(9, "Decision: the build uses uv.")],
    ]


def test_extract_and_review_commands(tmp_path: Path, db: str) -> None:
    transcript = write_lines(tmp_path / "t.jsonl", claude_lines("/work/app"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [command(), "--db", str(db), *args], capture_output=True, text=True, check=False
        )

    done = run("extract", "--transcript", str(transcript))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sessionId"] == "claude-sess" and report["turns"] == 2
    ids = [item["id"] for item in report["admitted"]]
    assert len(ids) == 2
    again = json.loads(run("extract", "--transcript", str(transcript)).stdout)
    assert again["admitted"] == [] and again["skipped"]["duplicate"] == 2

    listed = json.loads(run("review", "--workspace", "/work/app", "--origin", "automatic").stdout)
    assert sorted(c["item"]["id"] for c in listed["candidates"]) == sorted(ids)
    assert all(c["health"] is None for c in listed["candidates"])
    assert listed["candidates"][0]["item"]["evidence"][0]["locator"].startswith("seq=")

    bad = run("verify", ids[0], "no-such-id")
    assert bad.returncode == 1
    assert json.loads(bad.stderr)["error"]["code"] == "not-found"
    assert json.loads(run("get", ids[0]).stdout)["status"] == "candidate"  # nothing changed
    verified = json.loads(run("verify", *ids).stdout)
    assert [i["status"] for i in verified["items"]] == ["verified", "verified"]
    assert json.loads(run("review", "--workspace", "/work/app").stdout)["candidates"] == []
    archived = json.loads(run("archive", ids[0]).stdout)
    assert archived["status"] == "archived"

    missing = run("extract", "--transcript", str(tmp_path / "absent.jsonl"))
    assert (
        missing.returncode == 1 and json.loads(missing.stderr)["error"]["code"] == "invalid-input"
    )


def test_extract_stores_a_directory_workspace_canonically(tmp_path: Path, db: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    transcript = write_lines(tmp_path / "t.jsonl", claude_lines("/work/app"))
    done = subprocess.run(
        [
            command(),
            "--db",
            str(db),
            "extract",
            "--transcript",
            str(transcript),
            "--workspace",
            ".",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    admitted = json.loads(done.stdout)["admitted"]
    assert admitted
    stored = json.loads(
        subprocess.run(
            [command(), "--db", str(db), "get", admitted[0]["id"]],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert stored["scope"]["workspace"] == str(project.resolve())


def test_a_line_nested_too_deep_is_skipped_and_counted(tmp_path: Path, db: str) -> None:
    """One hostile line (``[[[[...`` a few kilobytes long) used to fail the whole extract
    with a RecursionError; now it is an unreadable line like any other."""
    transcript = write_lines(tmp_path / "t.jsonl", claude_lines("/work/app"))
    with transcript.open("a") as handle:
        handle.write("[" * 5000 + "]" * 5000 + "\n")
        # A user line whose content nests ~500 levels (written as text: json.dumps of it
        # would itself exceed the stack).
        level = '{"type": "user", "message": {"role": "user", "content": ['
        handle.write(level * 170 + '"x"' + "]}}" * 170 + "\n")
    done = subprocess.run(
        [command(), "--db", db, "extract", "--transcript", str(transcript)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["turns"] == 2 and len(report["admitted"]) == 2
    assert report["unreadableLines"] == 3  # "not json" and the two deep lines

"""A checkout's workspace identity: one scope for a whole team, through every front end.

Two members clone one repository to different paths. With a committed
``.dsh-knowledge.toml`` (or ``DSH_KNOWLEDGE_WORKSPACE``) both checkouts name the same
workspace, so what one member adds on the command line reaches the other's hook, MCP server
and ``retrieve`` on the shared store - while provenance and freshness still read each
member's own checkout. Runs on both backends; the file is read as untrusted input.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

from dsh_knowledge.workspace_identity import normalize_remote_url

from .agent_helpers import make_repo

FILES = {"src/app.py": "PORT = 8080\n", "README.md": "payments\n"}


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, data: str | None = None) -> Any:
    return commands.run(
        "dsh-knowledge", *args, cwd=cwd, input=data, env=commands.environ(**(env or {}))
    )


def ok(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    done = cli(*args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def hook(db: str, cwd: Path, prompt: str, session: str = "s1") -> str:
    payload = json.dumps({"session_id": session, "cwd": str(cwd), "prompt": prompt})
    done = cli("hook", "user-prompt-submit", "--db", db, cwd=cwd, data=payload)
    assert (done.returncode, done.stderr) == (0, "")
    return str(done.stdout)


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """Two members' checkouts of one repository, at different absolute paths."""
    upstream = make_repo(tmp_path / "upstream", FILES)
    (upstream / ".dsh-knowledge.toml").write_text('workspace = "acme/payments"\n')
    git(upstream, "add", ".dsh-knowledge.toml")
    git(upstream, "commit", "-q", "-m", "knowledge scope")
    alice = tmp_path / "alice" / "src" / "payments"
    bob = tmp_path / "bob" / "work" / "pay"
    for clone in (alice, bob):
        clone.parent.mkdir(parents=True)
        git(tmp_path, "clone", "-q", str(upstream), str(clone))
    return alice, bob


def test_a_committed_workspace_name_is_one_scope_for_every_member(
    db: str, clones: tuple[Path, Path]
) -> None:
    alice, bob = clones
    evidence = json.dumps({"type": "file", "source": "src/app.py"})
    item = ok(
        "--db",
        db,
        "add",
        "--type",
        "fact",
        "--content",
        "The payments API listens on 8080.",
        "--evidence",
        evidence,
        cwd=alice / "src",
    )
    assert item["scope"] == {"workspace": "acme/payments"}
    # Provenance came from Alice's local checkout, as always.
    assert item["provenanceCapture"]["captured"] == 1
    assert item["evidence"][0]["gitProvenance"]["path"] == "src/app.py"
    ok("--db", db, "verify", item["id"], cwd=alice)

    # Bob: his retrieve, his prompt hook, his freshness check - another path, the same scope.
    found = ok("--db", db, "retrieve", "which port does the payments api use", cwd=bob)
    assert [r["knowledge"]["id"] for r in found["results"]] == [item["id"]]
    context = hook(db, bob, "which port does the payments API listen on")
    assert "8080" in json.loads(context)["hookSpecificOutput"]["additionalContext"]
    fresh = ok("--db", db, "freshness", item["id"], cwd=bob)
    assert fresh["status"] == "current"  # read from Bob's checkout
    (bob / "src" / "app.py").write_text("PORT = 9090\n")
    assert ok("--db", db, "freshness", item["id"], cwd=bob)["status"] != "current"
    # An explicit --workspace still wins; the path scope is another workspace.
    assert (
        ok("--db", db, "retrieve", "payments api port", "--workspace", str(bob), cwd=bob)["results"]
        == []
    )


def test_the_mcp_server_uses_the_identity_and_reads_the_local_checkout(
    db: str, clones: tuple[Path, Path]
) -> None:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from .test_mcp_server import session

    alice, bob = clones
    ok(
        "--db",
        db,
        "add",
        "--type",
        "fact",
        "--content",
        "Refunds go through the ledger.",
        cwd=alice,
    )
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        found = await client.call_tool("knowledge_search", {"query": "refunds ledger"})
        assert found.is_error is False, found.content
        seen["items"] = found.structured_content["items"]
        added = await client.call_tool(
            "knowledge_add",
            {
                "type": "fact",
                "content": "The app module holds the port.",
                "evidence": [{"type": "file", "source": "src/app.py"}],
            },
        )
        assert added.is_error is False, added.content
        seen["added"] = added.structured_content

    old = Path.cwd()
    os.chdir(bob)
    try:
        session(["--db", db], body, {})
    finally:
        os.chdir(old)
    assert [i["workspace"] for i in seen["items"]] == ["acme/payments"]
    assert seen["added"]["item"]["workspace"] == "acme/payments"
    assert seen["added"]["provenanceCapture"]["captured"] == 1  # from Bob's checkout


def test_the_identity_can_come_from_the_remote_url(db: str, tmp_path: Path) -> None:
    alice = make_repo(tmp_path / "alice", FILES)
    bob = make_repo(tmp_path / "bob", FILES)
    for clone, url in (
        (alice, "https://alice:ghp_secret123@GitHub.com/Acme/Payments.git"),
        (bob, "git@github.com:Acme/Payments"),
    ):
        git(clone, "remote", "add", "origin", url)
        (clone / ".dsh-knowledge.toml").write_text('workspace-from-remote = "origin"\n')
    item = ok(
        "--db", db, "add", "--type", "fact", "--content", "Settlement runs at noon.", cwd=alice
    )
    assert item["scope"]["workspace"] == "github.com/Acme/Payments"  # no credentials kept
    found = ok("--db", db, "retrieve", "when does settlement run", cwd=bob)
    assert [r["knowledge"]["id"] for r in found["results"]] == [item["id"]]


def test_the_environment_names_the_workspace_and_scope_rules_stay(
    db: str, clones: tuple[Path, Path]
) -> None:
    alice, bob = clones
    env = {"DSH_KNOWLEDGE_WORKSPACE": "acme/billing"}
    billing = ok(
        "--db",
        db,
        "add",
        "--type",
        "fact",
        "--project",
        "api",
        "--content",
        "Invoices are numbered per year.",
        cwd=alice,
        env=env,
    )
    assert billing["scope"] == {"workspace": "acme/billing", "project": "api"}
    # Same project name in another workspace: isolated, as the scope rules say.
    assert (
        ok("--db", db, "retrieve", "invoices numbered", "--project", "api", cwd=bob)["results"]
        == []
    )
    found = ok("--db", db, "retrieve", "invoices numbered", "--project", "api", cwd=bob, env=env)
    assert [r["knowledge"]["id"] for r in found["results"]] == [billing["id"]]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('workspace = ""\n', "non-empty"),
        ('workspace = "a"\nworkspace-from-remote = "origin"\n', "not both"),
        ('colour = "red"\n', "unknown key"),
        ("workspace = [1, 2]\n", "non-empty string"),
        ("not toml at all =\n", "not valid TOML"),
        ('workspace-from-remote = "--upload-pack=evil"\n', "must name a git remote"),
        ('workspace-from-remote = "nowhere"\n', "no URL for the remote"),
        ("# " + "x" * 5000 + "\n", "larger than 4096 bytes"),
    ],
)
def test_a_bad_config_file_is_a_clear_error_and_the_hook_stays_silent(
    tmp_path: Path, content: str, message: str
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    (repo / ".dsh-knowledge.toml").write_text(content)
    db = str(tmp_path / "k.sqlite")
    done = cli("--db", db, "add", "--type", "fact", "--content", "x", cwd=repo)
    assert done.returncode == 1, done.stdout
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-input" and message in error["message"], error
    ok("--db", db, "add", "--workspace", "/w", "--type", "fact", "--content", "seed", cwd=tmp_path)
    assert hook(db, repo, "seed") == ""


def test_a_symlinked_config_file_is_not_followed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    secret = tmp_path / "elsewhere.toml"
    secret.write_text('workspace = "leaked"\n')
    (repo / ".dsh-knowledge.toml").symlink_to(secret)
    done = cli(
        "--db", str(tmp_path / "k.sqlite"), "add", "--type", "fact", "--content", "x", cwd=repo
    )
    assert done.returncode == 1
    assert "symbolic link" in json.loads(done.stderr)["error"]["message"]


def test_setup_carries_the_workspace_variable_to_codex(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    ok(
        "setup",
        "codex",
        cwd=tmp_path,
        env={"CODEX_HOME": str(codex_home), "DSH_KNOWLEDGE_WORKSPACE": "acme/payments"},
    )
    assert 'DSH_KNOWLEDGE_WORKSPACE = "acme/payments"' in (codex_home / "config.toml").read_text()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://alice:ghp_x@GitHub.COM:443/Acme/Payments.git", "github.com/Acme/Payments"),
        ("ssh://git@GitHub.com:22/Acme/Payments.git/", "github.com/Acme/Payments"),
        ("git@GITHUB.com:Acme/Payments", "github.com/Acme/Payments"),
        ("GitHub.com:Acme/Payments.git", "github.com/Acme/Payments"),
        ("git@[FE80::1]:team/app.git", "[fe80::1]/team/app"),
        ("ssh://git@[FE80::1]:2222/team/app", "[fe80::1]/team/app"),
        ("file:///srv/Git/App.git", "/srv/Git/App"),
        ("/srv/Git/App.git/", "/srv/Git/App"),
        ("https://host.example/", None),
    ],
)
def test_remote_urls_normalise_the_host_to_lower_case_and_keep_the_path(
    url: str, expected: str | None
) -> None:
    # The host is case-insensitive everywhere; the path is not on every server, so its case
    # is kept (an explicit workspace name covers members whose remotes spell it differently).
    assert normalize_remote_url(url) == expected

"""Fetch and push through a checked remote: which URLs, which transport, what may run.

Real remotes only: bare repositories on disk and a real smart-HTTP server on 127.0.0.1
(``git http-backend``, from tests/support). Every program a remote or a repository's config
names is a script that leaves a marker file; the assertion is that no marker appears.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from dsh_test_support.git_http import git_http_server
from dsh_test_support.gitcmd import commit_file, git, head, init

from dsh_common.errors import GitError
from dsh_common.git import GitRunner
from dsh_common.git_remote import (
    RemoteConfigError,
    RemoteUrlError,
    check_transfer_config,
    fetch,
    fetch_branch,
    parse_remote_url,
    push,
    redact_remote,
    redact_url,
    repository_config,
)

TRACKING = "refs/remotes/origin/main"


def _script(path: Path, marker: Path, *, exit_code: int = 0) -> Path:
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit {exit_code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# -- which URLs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "transport", "shown"),
    [
        ("/srv/memory.git", "file", "/srv/memory.git"),
        ("file:///srv/memory.git", "file", "file:///srv/memory.git"),
        ("https://host.example/me/memory.git", "https", "https://host.example/me/memory.git"),
        ("https://me:t0k3n@host.example/m.git", "https", "https://***@host.example/m.git"),
        ("https://t0k3n@host.example/m.git", "https", "https://***@host.example/m.git"),
        ("https://me:p@ss@host.example/m.git", "https", "https://***@host.example/m.git"),
        ("http://127.0.0.1:8080/m.git", "http", "http://127.0.0.1:8080/m.git"),
        ("http://localhost/m.git", "http", "http://localhost/m.git"),
        ("ssh://git@host.example:2222/m.git", "ssh", "ssh://git@host.example:2222/m.git"),
        ("git@host.example:me/m.git", "ssh", "git@host.example:me/m.git"),
        # IPv6 addresses in brackets: "::" inside them names no remote helper.
        ("[::1]:repo", "ssh", "[::1]:repo"),
        ("user@[::1]:repo", "ssh", "user@[::1]:repo"),
        ("git@[2001:db8::1]:me/m.git", "ssh", "git@[2001:db8::1]:me/m.git"),
        ("ssh://git@[2001:db8::1]:2222/m.git", "ssh", "ssh://git@[2001:db8::1]:2222/m.git"),
        ("https://[2001:db8::1]/m.git", "https", "https://[2001:db8::1]/m.git"),
        ("http://[::1]:8080/m.git", "http", "http://[::1]:8080/m.git"),
        ("host.example:a::b", "ssh", "host.example:a::b"),  # "::" in the path: no helper
    ],
)
def test_accepted_remotes_name_their_one_transport(text: str, transport: str, shown: str) -> None:
    remote = parse_remote_url(text)
    assert (remote.url, remote.transport, remote.shown) == (text, transport, shown)


@pytest.mark.parametrize(
    "text",
    [
        "ext::sh -c touch% /tmp/pwned",
        "fd::3",
        "evil::https://host.example/x",
        "git://host.example/m.git",
        "ftp://host.example/m.git",
        "http://host.example/m.git",  # plain http off this machine
        "ssh://-oProxyCommand=touch%20x/m.git",
        "ssh://-oProxyCommand=x@host/m.git",
        "-oProxyCommand=x:m.git",
        "-u/tmp/x",
        "https://host.example/m.git?x=1",
        "file://other.host/m.git",
        "https://host.example/",
        "ssh://host.example",
        "https://host.example/a\nb",
        "host.example:path with space",
        "alice:s3cret@host.example:m.git",
        "ssh://git:s3cret@host.example/m.git",  # ssh takes no password from a URL
        "ssh://git:s3cret@[::1]/m.git",
        "::host.example/m.git",  # the helper named "" (git-remote-)
        "a+b.c-d::x",
        "x::[::1]:repo",
        "[::1]:",  # no path
        "[zz::1]:repo",
        "[127.0.0.1]:repo",  # brackets hold an IPv6 address only
        "http://[::2]:8080/m.git",  # plain http off this machine
        "",
        "  ",
        "https://host.example/" + "a" * 5000,
    ],
)
def test_refused_remotes_are_remote_invalid(text: str) -> None:
    with pytest.raises(RemoteUrlError) as refused:
        parse_remote_url(text)
    assert refused.value.code == "remote-invalid"
    assert "s3cret" not in refused.value.message


def test_a_relative_path_is_made_absolute_against_the_base(tmp_path: Path) -> None:
    remote = parse_remote_url("backups/memory.git", base=tmp_path)
    assert remote.url == str(tmp_path / "backups" / "memory.git")
    assert remote.transport == "file"


def test_redact_url_hides_every_credential_in_a_message() -> None:
    message = "fatal: unable to access 'https://me:t0k3n@host/x/': and ssh://git:pw@h/y"
    shown = redact_url(message)
    assert "t0k3n" not in shown and "pw@" not in shown
    assert "https://***@host/x/" in shown and "ssh://git:***@h/y" in shown
    assert redact_url("ssh://git@host/x") == "ssh://git@host/x"
    assert redact_remote("alice:s3cret@host.example:m.git") == "alice:***@host.example:m.git"
    assert redact_remote("git@host.example:m.git") == "git@host.example:m.git"


# -- bare repositories on disk ---------------------------------------------------------------


def test_push_is_fast_forward_only_and_fetch_brings_the_commit_back(
    repo: Path, tmp_path: Path
) -> None:
    remote = parse_remote_url(str(init(tmp_path / "remote.git", bare=True)))
    runner = GitRunner(repo)
    first = head(repo)
    assert push(runner, remote, first, "main").status == "pushed"
    assert push(runner, remote, first, "main").status == "up-to-date"
    # Another machine pushes on top; our own next commit is no longer a fast-forward.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(other))
    theirs = commit_file(other, "theirs.txt", "theirs\n", "add theirs.txt")
    git(other, "push", "-q", "origin", "main")
    ours = commit_file(repo, "ours.txt", "ours\n", "add ours.txt")
    rejected = push(runner, remote, ours, "main")
    assert rejected.status == "rejected"
    assert git(tmp_path / "remote.git", "rev-parse", "main").strip() == theirs
    assert fetch_branch(runner, remote, "main", TRACKING) == theirs
    assert git(repo, "rev-parse", TRACKING).strip() == theirs


def test_an_empty_remote_has_no_branch_and_leaves_no_tracking_ref(
    repo: Path, tmp_path: Path
) -> None:
    remote = parse_remote_url(str(init(tmp_path / "empty.git", bare=True)))
    git(repo, "update-ref", TRACKING, head(repo))
    assert fetch_branch(GitRunner(repo), remote, "main", TRACKING) is None
    assert git(repo, "for-each-ref", TRACKING) == ""


def test_an_unreachable_remote_is_a_git_error(repo: Path, tmp_path: Path) -> None:
    remote = parse_remote_url(str(tmp_path / "missing.git"))
    with pytest.raises(GitError):
        fetch_branch(GitRunner(repo), remote, "main", TRACKING)


def test_hooks_and_config_of_a_local_remote_never_run(repo: Path, tmp_path: Path) -> None:
    """The receiving and uploading git run in the remote repository and read its config and
    hooks, not our -c options: every program it names is a marker script."""
    marker = tmp_path / "ran"
    bare = init(tmp_path / "remote.git", bare=True)
    for hook in (
        "pre-receive",
        "update",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "proc-receive",
    ):
        _script(bare / "hooks" / hook, marker)
    fsmonitor = _script(tmp_path / "fsmonitor", marker)
    git(bare, "config", "core.fsmonitor", str(fsmonitor))
    git(bare, "config", "core.alternateRefsCommand", str(_script(tmp_path / "alt", marker)))
    git(bare, "config", "uploadpack.packObjectsHook", str(_script(tmp_path / "pack", marker)))
    # Alternates make the receiving side list their refs (through alternateRefsCommand).
    (bare / "objects" / "info" / "alternates").write_text(str(repo / ".git" / "objects") + "\n")
    remote = parse_remote_url(str(bare))
    runner = GitRunner(repo)
    assert push(runner, remote, head(repo), "main").status == "pushed"
    assert fetch_branch(runner, remote, "main", TRACKING) == head(repo)
    assert not marker.exists()


def test_a_non_bare_remote_never_checks_a_push_out(repo: Path, tmp_path: Path) -> None:
    """``receive.denyCurrentBranch=updateInstead`` would check the push out in the remote's
    work tree, through the smudge filter its config names."""
    marker = tmp_path / "ran"
    target = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo), str(target))
    git(target, "config", "receive.denyCurrentBranch", "updateInstead")
    git(target, "config", "filter.evil.smudge", str(_script(tmp_path / "smudge", marker)))
    (target / ".gitattributes").write_text("* filter=evil\n")
    git(target, "add", ".gitattributes")
    git(target, "commit", "-qm", "attributes")
    git(repo, "pull", "-q", str(target), "main")
    ours = commit_file(repo, "new.txt", "new\n", "add new.txt")
    outcome = push(GitRunner(repo), parse_remote_url(str(target)), ours, "main")
    assert outcome.status == "rejected"
    assert not marker.exists()
    assert not (target / "new.txt").exists()


def test_our_own_repository_config_names_no_program_for_a_transfer(
    repo: Path, tmp_path: Path, hermetic_home: Path
) -> None:
    """core.sshCommand and credential helpers count only from the user's own config."""
    marker = tmp_path / "ran-local"
    used = tmp_path / "ran-global"
    git(
        repo, "config", "core.sshCommand", str(_script(tmp_path / "local-ssh", marker, exit_code=1))
    )
    git(repo, "config", "credential.helper", f"!{_script(tmp_path / 'cred', marker)}")
    global_ssh = _script(tmp_path / "global-ssh", used, exit_code=1)
    with (hermetic_home / ".gitconfig").open("a") as config:
        config.write(f"[core]\n\tsshCommand = {global_ssh}\n")
    with pytest.raises(GitError):
        fetch(GitRunner(repo), parse_remote_url("ssh://host.invalid/m.git"), ["main"])
    assert used.exists(), "the user's own ssh command is the one used"
    assert not marker.exists()


def test_the_user_gets_batch_mode_ssh_when_no_ssh_command_is_configured(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "ssh-args"
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$@\" > '{log}'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    with pytest.raises(GitError):
        fetch(GitRunner(repo), parse_remote_url("git@host.invalid:m.git"), ["main"])
    assert "BatchMode=yes" in log.read_text()


def test_a_repository_url_rewrite_is_refused_before_git_starts(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "url.https://attacker.invalid/.insteadOf", "https://")
    runner = GitRunner(repo)
    assert repository_config(runner, r"^url\..*\.insteadof$") == [
        "url.https://attacker.invalid/.insteadof"
    ]
    before = runner.commands_run
    with pytest.raises(RemoteConfigError) as refused:
        fetch(runner, parse_remote_url("https://me:t0k3n@host.invalid/m.git"), ["main"])
    assert refused.value.code == "unsafe-config"
    assert runner.commands_run - before == 1  # the config read, no fetch
    with pytest.raises(RemoteConfigError):
        push(runner, parse_remote_url(str(tmp_path)), head(repo), "main")


def test_the_users_own_url_rewrite_is_allowed(repo: Path, hermetic_home: Path) -> None:
    with (hermetic_home / ".gitconfig").open("a") as config:
        config.write('[url "git@host.example:"]\n\tinsteadOf = https://host.example/\n')
    check_transfer_config(GitRunner(repo))  # no error


def test_a_transport_opens_only_for_fetch_and_push(repo: Path, tmp_path: Path) -> None:
    runner = GitRunner(repo)
    with pytest.raises(ValueError, match="fetch and push"):
        runner.run(["ls-remote", str(tmp_path)], transport="file")
    with pytest.raises(ValueError, match="may not be allowed"):
        runner.run(["fetch", "ext::sh"], transport="ext")


def test_fetch_over_the_file_transport_cannot_reach_ext(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    git(repo, "config", "protocol.ext.allow", "always")
    result = GitRunner(repo).run(
        ["fetch", f"ext::sh -c touch% {marker}", "main"], transport="file", check=False
    )
    assert result.returncode != 0
    assert not marker.exists()


# -- a real smart-HTTP server --------------------------------------------------------------------


def test_push_and_fetch_over_http_with_credentials_that_never_show(
    repo: Path, tmp_path: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    init(served / "memory.git", bare=True)
    with git_http_server(served, credentials=("me", "s3cr3t-t0k3n")) as server:
        good = parse_remote_url(server.url("memory.git", with_credentials=True))
        assert "s3cr3t" not in good.shown
        runner = GitRunner(repo)
        assert push(runner, good, head(repo), "main").status == "pushed"
        assert fetch_branch(runner, good, "main", TRACKING) == head(repo)
        assert {r.user for r in server.requests if r.status == 200} == {"me"}
        wrong = parse_remote_url(server.url("memory.git").replace("://", "://me:wrong@"))
        with pytest.raises(GitError) as failed:
            fetch_branch(runner, wrong, "main", TRACKING)
        missing = parse_remote_url(server.url("nope.git", with_credentials=True))
        with pytest.raises(GitError) as absent:
            fetch_branch(runner, missing, "main", TRACKING)
    for error in (failed.value, absent.value):
        text = f"{error.message} {error.stderr} {error.argv}"
        assert "s3cr3t" not in text and "wrong" not in text, text
    # Nothing of ours wrote the URL down: no FETCH_HEAD, no config entry, no reflog line.
    assert not (repo / ".git" / "FETCH_HEAD").exists()
    for path in (repo / ".git").rglob("*"):
        if path.is_file() and path.stat().st_size < 1 << 20:
            assert b"s3cr3t" not in path.read_bytes(), path


# -- the user's own programs and settings, never the repository's ------------------------------


def _helper_script(path: Path, log: Path, user: str, password: str) -> Path:
    """A credential helper (``!<path>``) that logs its operation and answers ``get``."""
    path.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"echo \"$1\" >> '{log}'\n"
        f'if [ "$1" = get ]; then echo username={user}; echo password={password}; fi\n'
    )
    path.chmod(0o755)
    return path


def _user_config(home: Path, text: str) -> None:
    with (home / ".gitconfig").open("a") as config:
        config.write(text)


def test_a_url_scoped_credential_helper_of_the_user_is_used(
    repo: Path, tmp_path: Path, hermetic_home: Path
) -> None:
    """What ``gh auth setup-git`` writes: an empty helper (ending the list) and the helper,
    both scoped to one host. The repository's own helpers, scoped or not, never run."""
    served = tmp_path / "served"
    served.mkdir()
    init(served / "memory.git", bare=True)
    log, marker = tmp_path / "helper.log", tmp_path / "ran"
    helper = _helper_script(tmp_path / "helper", log, "me", "s3cr3t-t0k3n")
    with git_http_server(served, credentials=("me", "s3cr3t-t0k3n")) as server:
        host = f"http://127.0.0.1:{server.port}"
        other = _script(tmp_path / "o", marker)
        _user_config(
            hermetic_home,
            f'[credential "{host}"]\n\thelper =\n\thelper = !{helper}\n'
            f'[credential "https://elsewhere.invalid"]\n\thelper = !{other}\n',
        )
        git(repo, "config", f"credential.{host}.helper", f"!{_script(tmp_path / 'c', marker)}")
        git(repo, "config", "credential.helper", f"!{_script(tmp_path / 'd', marker)}")
        remote = parse_remote_url(server.url("memory.git"))  # no credentials in the URL
        runner = GitRunner(repo)
        assert push(runner, remote, head(repo), "main").status == "pushed"
        assert fetch_branch(runner, remote, "main", TRACKING) == head(repo)
        assert {r.user for r in server.requests if r.status == 200} == {"me"}
    assert "get" in log.read_text().split()
    assert not marker.exists()


def test_a_helper_named_by_name_runs_through_our_own_git(
    repo: Path, tmp_path: Path, hermetic_home: Path
) -> None:
    """``helper = store --file F``: git runs ``git credential-store --file F``."""
    served = tmp_path / "served"
    served.mkdir()
    init(served / "memory.git", bare=True)
    store = tmp_path / "credentials"
    with git_http_server(served, credentials=("me", "s3cr3t-t0k3n")) as server:
        store.write_text(f"http://me:s3cr3t-t0k3n@127.0.0.1:{server.port}\n")
        _user_config(
            hermetic_home,
            f'[credential "http://127.0.0.1:{server.port}/"]\n\thelper = store --file {store}\n',
        )
        remote = parse_remote_url(server.url("memory.git"))
        assert push(GitRunner(repo), remote, head(repo), "main").status == "pushed"


def test_a_helper_of_the_user_inside_the_repository_is_refused(
    repo: Path, tmp_path: Path, hermetic_home: Path
) -> None:
    marker = tmp_path / "ran"
    inside = _script(repo / "helper.sh", marker)
    _user_config(hermetic_home, f"[credential]\n\thelper = {inside} --option\n")
    with pytest.raises(RemoteConfigError) as refused:
        fetch(GitRunner(repo), parse_remote_url("https://host.invalid/m.git"), ["main"])
    assert refused.value.code == "unsafe-config" and str(inside) in refused.value.message
    assert not marker.exists()


def _ssh_logger(path: Path, log: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho \"{path.name} $*\" >> '{log}'\nexit 1\n")
    path.chmod(0o755)
    return path


def test_the_users_git_ssh_command_and_git_ssh_reach_ssh(
    repo: Path, tmp_path: Path, hermetic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's order: $GIT_SSH_COMMAND, core.sshCommand (the user's), $GIT_SSH, plain ssh."""
    log = tmp_path / "ssh.log"
    by_command = _ssh_logger(tmp_path / "bin" / "by-command", log)
    by_config = _ssh_logger(tmp_path / "bin" / "by-config", log)
    _ssh_logger(tmp_path / "bin" / "by-program", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    remote = parse_remote_url("ssh://git@host.invalid/m.git")

    def used() -> str:
        log.unlink(missing_ok=True)
        with pytest.raises(GitError):
            fetch(GitRunner(repo), remote, ["main"])
        return log.read_text().split()[0]

    monkeypatch.setenv("GIT_SSH", "by-program")  # a name, found on PATH
    assert used() == "by-program"
    _user_config(hermetic_home, f"[core]\n\tsshCommand = {by_config} -o Extra=1\n")
    assert used() == "by-config"
    monkeypatch.setenv("GIT_SSH_COMMAND", f"{by_command} -i key")
    assert used() == "by-command"
    assert "-i key" in log.read_text() and "git@host.invalid" in log.read_text()


def test_what_the_users_ssh_command_looks_up_is_never_inside_the_repository(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GIT_SSH_COMMAND=ssh``: the shell finds ``ssh`` on the transfer's PATH, which has no
    entry inside the repository (direnv's ``$PWD/bin``, say)."""
    marker, log = tmp_path / "ran", tmp_path / "ssh.log"
    (repo / "bin").mkdir()
    _script(repo / "bin" / "ssh", marker)
    _ssh_logger(tmp_path / "bin" / "ssh", log)
    monkeypatch.setenv("PATH", f"{repo / 'bin'}:{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh")
    with pytest.raises(GitError):
        fetch(GitRunner(repo), parse_remote_url("git@host.invalid:m.git"), ["main"])
    assert log.exists() and not marker.exists()
    monkeypatch.delenv("GIT_SSH_COMMAND")
    monkeypatch.setenv("GIT_SSH", str(repo / "bin" / "ssh"))
    with pytest.raises(RemoteConfigError):
        fetch(GitRunner(repo), parse_remote_url("git@host.invalid:m.git"), ["main"])
    assert not marker.exists()


def test_the_repositorys_own_http_config_never_applies_to_a_transfer(
    repo: Path, tmp_path: Path, hermetic_home: Path
) -> None:
    """A proxy, extra headers (plain and URL-scoped), a cookie file, no TLS verification:
    plain git would use every one. The user's own http settings still apply."""
    served = tmp_path / "served"
    served.mkdir()
    init(served / "memory.git", bare=True)
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\trepo-cookie\n")
    with git_http_server(served) as server:
        url = server.url("memory.git")
        for key, value in (
            ("http.proxy", "http://127.0.0.1:9"),  # nothing listens: a proxy would fail
            ("http.extraHeader", "X-Repo: plain"),
            (f"http.{url}.extraHeader", "X-Repo: scoped"),
            ("http.cookieFile", str(cookies)),
            ("http.sslVerify", "false"),
            ("http.followRedirects", "true"),
            ("fsck.missingEmail", "ignore"),
            ("push.followTags", "true"),
        ):
            git(repo, "config", "--add", key, value)
        _user_config(hermetic_home, "[http]\n\textraHeader = X-User: mine\n")
        remote = parse_remote_url(url)
        runner = GitRunner(repo)
        assert push(runner, remote, head(repo), "main").status == "pushed"
        assert fetch_branch(runner, remote, "main", TRACKING) == head(repo)
        assert server.requests
        for request in server.requests:
            assert "x-repo" not in request.headers and "cookie" not in request.headers
            assert request.headers.get("x-user") == "mine"


def test_a_fetch_brings_its_objects_into_the_repository_and_leaves_nothing_behind(
    repo: Path, tmp_path: Path
) -> None:
    """A small fetch arrives as loose objects, a large one as a pack: both end in the
    repository's store; the private git directory is gone; an old one left by a killed
    process is removed, a recent one (another transfer under way) kept."""
    bare = init(tmp_path / "remote.git", bare=True)
    runner = GitRunner(repo)
    push(runner, parse_remote_url(str(bare)), head(repo), "main")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    small = commit_file(other, "one.txt", "one\n", "add one.txt")
    git(other, "push", "-q", "origin", "main")
    transfers = repo / ".git" / "dsh-transfer"  # made by the push
    (transfers / "t-old").mkdir()
    os.utime(transfers / "t-old", (0, 0))
    (transfers / "t-running").mkdir()
    remote = parse_remote_url(str(bare))
    assert fetch_branch(runner, remote, "main", TRACKING) == small
    assert sorted(p.name for p in transfers.iterdir()) == ["t-running"]
    for index in range(150):
        (other / f"f{index}.txt").write_text(f"{index}\n")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "many")
    large = head(other)
    git(other, "push", "-q", "origin", "main")
    assert fetch_branch(runner, remote, "main", TRACKING) == large
    assert list((repo / ".git" / "objects" / "pack").glob("*.idx")), "the large fetch's pack"
    git(repo, "fsck", "--strict", "--no-dangling")
    git(repo, "merge", "-q", "--ff-only", TRACKING)
    assert (repo / "f149.txt").read_text() == "149\n"
    assert sorted(p.name for p in transfers.iterdir()) == ["t-running"]


def test_a_runner_given_a_relative_directory_fetches_and_pushes(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = parse_remote_url(str(init(tmp_path / "remote.git", bare=True)))
    monkeypatch.chdir(tmp_path)
    runner = GitRunner(Path("repo"))
    assert push(runner, remote, head(repo), "main").status == "pushed"
    assert fetch_branch(runner, remote, "main", TRACKING) == head(repo)


def test_an_object_store_on_another_file_system_gets_the_objects_copied(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.git/objects`` linked to another file system: a rename cannot cross it (EXDEV)."""
    import errno

    from dsh_common import git_transfer_dir

    bare = init(tmp_path / "remote.git", bare=True)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    theirs = commit_file(other, "one.txt", "one\n", "add one.txt")
    git(other, "push", "-q", "origin", "HEAD:main")
    real_replace = os.replace

    def replace(source: object, target: object) -> None:
        if "dsh-transfer" in str(source):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(git_transfer_dir.os, "replace", replace)
    assert fetch_branch(GitRunner(repo), parse_remote_url(str(bare)), "main", TRACKING) == theirs
    git(repo, "cat-file", "-e", f"{theirs}^{{tree}}")
    assert not list((repo / ".git" / "objects").rglob(".*.dsh-tmp"))


def test_a_link_where_the_private_directory_goes_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".git" / "dsh-transfer").symlink_to(elsewhere)
    with pytest.raises(RemoteConfigError):
        fetch(GitRunner(repo), parse_remote_url(str(init(tmp_path / "r.git", bare=True))), ["main"])
    assert list(elsewhere.iterdir()) == []

"""One hermetic environment for every test: its own home, git identity and DSH data.

A test must never read or write the developer's home, their git configuration or their
dsh stores, and nothing a developer exported may change what a test sees: a ``DSH_*``
variable (a store, a scope, a ranking, a crash point), a libpq ``PG*`` variable (a
password, a service file, a server), a ``GIT_*`` variable (a test run from a git hook
inherits ``GIT_DIR`` and ``GIT_INDEX_FILE``), an agent's own config folder, or
pre-commit's ``PRE_COMMIT_*`` range.

:func:`environ` computes such an environment (a plain dict, for a subprocess that needs a
home of its own); :func:`make_home` creates the folders and the git config it points at;
:func:`enter` does both and applies the result to ``os.environ`` through pytest's
``monkeypatch``, so it is undone after the test. The ``hermetic_home`` fixture
(:mod:`dsh_test_support.fixtures`) is :func:`enter` with the default layout.

The git identity is written to ``$HOME/.gitconfig`` and ``GIT_CONFIG_GLOBAL`` names that
same file: plain ``git`` reads ``GIT_CONFIG_GLOBAL``, while dsh-common's ``GitRunner``
strips every ``GIT_*`` variable and then reads ``$HOME/.gitconfig`` - both see one identity
and ``init.defaultBranch = main``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The fixed git identity of every test commit: (name, email).
IDENTITY = ("dsh test", "test@example.invalid")

#: Variables of these prefixes are removed: the products' and libpq's settings, git's
#: per-process overrides, pre-commit's ref range.
LEAKING_PREFIXES = ("DSH_", "PG", "GIT_", "PRE_COMMIT")
#: ... except the test suite's own switches (``DSH_REQUIRE_ALL_TIERS`` turns a skip into a
#: failure in CI; ``DSH_TEST_POSTGRES_URL`` names an external test server) and where git's
#: own programs live.
KEPT = frozenset({"DSH_REQUIRE_ALL_TIERS", "GIT_EXEC_PATH"})
KEPT_PREFIXES = ("DSH_TEST_",)
#: Single variables that point a product or a tool at the developer's own files.
LEAKING_NAMES = frozenset(
    {
        "CODEX_HOME",  # Codex's config folder: setup would edit the developer's
        "CLAUDE_CONFIG_DIR",  # Claude Code's config folder, likewise
        "XDG_CONFIG_HOME",  # git reads $XDG_CONFIG_HOME/git/config where GIT_* is stripped
    }
)


class _Default:
    """The default DSH_HOME: ``$HOME/.dsh``, set explicitly."""


DEFAULT_DSH_HOME = _Default()


@dataclass(frozen=True)
class Home:
    """A hermetic home: where things are, and the environment that points at them."""

    home: Path
    #: ``DSH_HOME``, or None when the variable is unset (the products then use ``~/.dsh``).
    dsh_home: Path | None
    gitconfig: Path
    environ: dict[str, str]


def leaks(name: str) -> bool:
    """Whether the variable ``name`` could carry a developer's setting into a test."""
    if name in KEPT or name.startswith(KEPT_PREFIXES):
        return False
    return name in LEAKING_NAMES or name.startswith(LEAKING_PREFIXES)


def environ(
    home: Path,
    *,
    dsh_home: Path | _Default | None = DEFAULT_DSH_HOME,
    gitconfig: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``base`` (default: this process's environment) with every leaking variable removed
    and ``HOME``, ``DSH_HOME``, ``GIT_CONFIG_GLOBAL`` and ``GIT_CONFIG_NOSYSTEM`` set.

    ``dsh_home=None`` leaves ``DSH_HOME`` unset; ``gitconfig`` defaults to
    ``home/.gitconfig``. Nothing is written: see :func:`make_home`.
    """
    source = os.environ if base is None else base
    result = {name: value for name, value in source.items() if not leaks(name)}
    result["HOME"] = str(home)
    if isinstance(dsh_home, _Default):
        result["DSH_HOME"] = str(home / ".dsh")
    elif dsh_home is not None:
        result["DSH_HOME"] = str(dsh_home)
    result["GIT_CONFIG_GLOBAL"] = str(gitconfig if gitconfig is not None else home / ".gitconfig")
    result["GIT_CONFIG_NOSYSTEM"] = "1"
    return result


def gitconfig_text(identity: tuple[str, str] = IDENTITY) -> str:
    """The global git config of a test home: the identity and ``main`` as default branch."""
    name, email = identity
    return f"[user]\n\tname = {name}\n\temail = {email}\n[init]\n\tdefaultBranch = main\n"


def make_home(
    home: Path,
    *,
    dsh_home: Path | _Default | None = DEFAULT_DSH_HOME,
    gitconfig: Path | None = None,
    identity: tuple[str, str] = IDENTITY,
    base: Mapping[str, str] | None = None,
) -> Home:
    """Create ``home`` and its git config (``home/.gitconfig`` and ``gitconfig`` if that is
    elsewhere); return it with its :func:`environ`. ``DSH_HOME`` is not created: the
    products create it themselves, with the modes they choose."""
    home.mkdir(parents=True, exist_ok=True)
    text = gitconfig_text(identity)
    (home / ".gitconfig").write_text(text)
    config = gitconfig if gitconfig is not None else home / ".gitconfig"
    if config != home / ".gitconfig":
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text)
    env = environ(home, dsh_home=dsh_home, gitconfig=config, base=base)
    located = Path(env["DSH_HOME"]) if "DSH_HOME" in env else None
    return Home(home=home, dsh_home=located, gitconfig=config, environ=env)


def enter(
    monkeypatch: pytest.MonkeyPatch,
    home: Path,
    *,
    dsh_home: Path | _Default | None = DEFAULT_DSH_HOME,
    gitconfig: Path | None = None,
    identity: tuple[str, str] = IDENTITY,
) -> Home:
    """:func:`make_home`, then make ``os.environ`` exactly its environment for the test."""
    made = make_home(home, dsh_home=dsh_home, gitconfig=gitconfig, identity=identity)
    for name in list(os.environ):
        if name not in made.environ:
            monkeypatch.delenv(name)
    for name, value in made.environ.items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    return made

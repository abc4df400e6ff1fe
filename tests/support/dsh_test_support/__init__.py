"""Test-only helpers shared by every package's tests (``tests/support`` is on pytest's path).

One module per job:

- :mod:`~dsh_test_support.home` - one hermetic environment: HOME, DSH_HOME, git identity,
  nothing leaked from the developer's environment;
- :mod:`~dsh_test_support.fixtures` - the pytest fixtures (``hermetic_home``), registered
  once from the repository's ``conftest.py``;
- :mod:`~dsh_test_support.gitcmd` - plain ``git`` for building fixtures, and commit helpers;
- :mod:`~dsh_test_support.commands` - a product's console script as a process, as users
  run it, and the JSON convention's ``ok`` / ``error``;
- :mod:`~dsh_test_support.in_process` - the same command line in the test's process, for
  tests that only check output;
- :mod:`~dsh_test_support.fake_model` - the scripted model server the real Claude Code and
  Codex CLIs talk to;
- :mod:`~dsh_test_support.git_http` - a smart-HTTP git server on 127.0.0.1.
"""

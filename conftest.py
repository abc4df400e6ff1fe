"""Repository-wide pytest policy.

Some tiers skip where a tool truly cannot exist (no Chromium, no npm, no mount namespace).
CI must prove every tier, so ``.ci/run`` sets ``DSH_REQUIRE_ALL_TIERS=1``: there a skip is
reported as a failure instead of passing silently - a skipped test, and a whole module
skipped while it is collected (``pytest.importorskip`` of an extra that is not installed).
"""

from __future__ import annotations

import os

import pytest

# The shared test toolkit's fixtures (tests/support/dsh_test_support), for every package.
pytest_plugins = ["dsh_test_support.fixtures"]


def _every_tier_required() -> bool:
    return os.environ.get("DSH_REQUIRE_ALL_TIERS") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    outcome = yield
    if not _every_tier_required():
        return
    report = outcome.get_result()
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"module skipped under DSH_REQUIRE_ALL_TIERS=1: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    if not _every_tier_required():
        return
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under DSH_REQUIRE_ALL_TIERS=1 (CI proves every tier): {reason}"

"""The browser tier (`make test-browser`): skipped in one line where Chromium is absent, unless
CCQ_EVAL_REQUIRE_BROWSER is set (CI), where its absence fails the run."""

import os

import pytest

from tests.browser.driver import missing

reason = missing()
if reason and os.environ.get("CCQ_EVAL_REQUIRE_BROWSER"):
    raise pytest.UsageError(f"browser tests: {reason}")
if reason:
    collect_ignore_glob = ["test_*.py"]
    print(f"browser tests skipped: {reason}")

"""Each test of the own kernels' trust check starts and ends with no verdict and the default mode (the verdicts are
the process's: one test's must not decide another's)."""

from __future__ import annotations

import pytest

from ccq_eval.ops import trust


@pytest.fixture(autouse=True)
def fresh_verdicts():
    trust.forget()
    yield
    trust.forget()
    trust.set_mode("auto")

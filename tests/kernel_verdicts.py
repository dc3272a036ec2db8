"""Each test of the own kernels' trust check starts and ends with no verdict and the default mode (the verdicts are
the process's: one test's must not decide another's)."""

from __future__ import annotations

import pytest

from ccq_eval.models import kernel_trust


@pytest.fixture(autouse=True)
def fresh_verdicts():
    kernel_trust.forget()
    yield
    kernel_trust.forget()
    kernel_trust.set_mode("auto")

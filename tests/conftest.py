import warnings

import pytest
import torch

warnings.filterwarnings("ignore", message="Triton is not supported")

from ccq_eval.models.cpu_backend import install_cpu_backend  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _cpu_backend():
    # every model test runs on the CPU; load_model would do the same
    install_cpu_backend()
    torch.set_num_threads(2)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# property tests run the same examples every time: a red CI is never a roll of the dice
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ccq", derandomize=True, deadline=None)
_hypothesis_settings.load_profile("ccq")

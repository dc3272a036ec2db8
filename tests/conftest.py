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

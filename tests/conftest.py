import os
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", message="Triton is not supported")

from ccq_eval.ops.cpu_forms import install_cpu_backend  # noqa: E402

# the interpreter tier needs TRITON_INTERPRET=1 before triton imports: its own process (make test-interpreter)
collect_ignore = [] if os.environ.get("TRITON_INTERPRET") == "1" else ["interpreter"]


@pytest.fixture(autouse=True, scope="session")
def _cpu_backend():
    # every model test runs on the CPU; load_model would do the same
    install_cpu_backend()
    # one thread per test process when tests run side by side (make test: two workers on two cores)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test builds and freezes its data in its own cache, never in ~/.cache."""
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """The byte-level test tokenizer saved as a folder (what the task plugins reload)."""
    from tests.helpers import byte_tokenizer

    folder = tmp_path_factory.mktemp("tok")
    byte_tokenizer().save_pretrained(folder)
    return folder


# property tests run the same examples every time: a red CI is never a roll of the dice
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ccq", derandomize=True, deadline=None)
_hypothesis_settings.load_profile("ccq")

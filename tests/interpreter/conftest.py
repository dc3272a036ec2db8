"""The Triton-interpreter tier: fla's real kernels, run on CPU by TRITON_INTERPRET=1 (``make test-interpreter``,
which `make test` also runs). The variable must be set before triton is imported, so this folder runs in its
own pytest process; the main run ignores it (tests/conftest.py)."""

from tests.interpreter import patches

patches.apply()

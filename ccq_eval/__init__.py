"""ccq-eval: reproduce the CCQ linear-attention paper's tables for any checkpoint."""

__version__ = "0.1.0"

import ccq_eval.models  # noqa: E402,F401  (registers the CCQ model families with transformers)

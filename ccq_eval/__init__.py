"""ccq-eval: reproduce the CCQ linear-attention paper's tables for any checkpoint.

Importing the package loads nothing heavy: the model families register with transformers where
models are loaded (``ccq_eval.models``)."""

__version__ = "0.1.0"

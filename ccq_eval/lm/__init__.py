"""lm-eval: the LM wrapper (wrapper.py) and the one call into lm-eval every suite uses (harness.py).
Importing this package imports neither; both import lm-eval."""

"""The lm-eval bridge: the LM wrapper (wrapper.py, strict.py), the one call into lm-eval the lm-eval suites make
(harness.py), the context budget (context.py), task YAMLs read as lm-eval reads them (task_yaml.py) and
``ccq-eval lm-eval`` (stock_cli.py). Importing this package imports none of them; the first two import lm-eval."""

"""The package list, found rather than written out: a new suite's folder under ccq_eval/suites/ ships with no
edit here. tasks/ and results/reference/ live outside ccq_eval/ and ship as ccq_eval.tasks and
ccq_eval.reference (pyproject.toml's package-dir). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["ccq_eval", "ccq_eval.*"]), "ccq_eval.tasks", "ccq_eval.reference"])

"""The package list, found by setuptools' own discovery: a new suite's folder under ccq_eval/suites/ ships with no
edit here. Data folders (the zoo, the viewer's assets, the plugins' YAMLs) are found as namespace packages, so their
files ship as package data. tasks/ and results/reference/ live outside ccq_eval/ and ship as ccq_eval.tasks and
ccq_eval.reference (pyproject.toml's package-dir). Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup


def found(root: str, prefix: str) -> list[str]:
    """``prefix`` and every folder below ``root`` as ``prefix.<folder>`` (caches and build output left out)."""
    skip = ["*__pycache__*", "*.egg-info*"]
    return [prefix, *(f"{prefix}.{name}" for name in find_namespace_packages(root, exclude=skip))]


setup(packages=[*found("ccq_eval", "ccq_eval"), *found("tasks", "ccq_eval.tasks"),
                *found("results/reference", "ccq_eval.reference")])

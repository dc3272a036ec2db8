"""What the multi_niah task plugins call when stock lm-eval runs them: S-NIAH's plugin over this suite's generator."""

from __future__ import annotations

import datasets

from ccq_eval.suites.multi_niah import data as multi
from ccq_eval.suites.sniah.plugin import dataset_from_metadata


def dataset(multi_niah_task: str, **metadata) -> dict[str, datasets.Dataset]:
    """``multi_niah_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    return dataset_from_metadata(multi, "multi_niah", multi_niah_task, **metadata)

"""What the ruler task plugins call when stock lm-eval runs them: S-NIAH's plugin over this suite's generator; the
QA tasks read their documents from the metadata's ``data_dir`` (DATA_DIR/ruler/) or the fetched copy."""

from __future__ import annotations

import datasets

from ccq_eval.suites.ruler import data as ruler
from ccq_eval.suites.ruler import qa_data
from ccq_eval.suites.sniah.plugin import dataset_from_metadata


def dataset(ruler_task: str, data_dir: str | None = None, **metadata) -> dict[str, datasets.Dataset]:
    """``ruler_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    return dataset_from_metadata(ruler, "ruler", ruler_task, source=qa_data.sources([ruler_task], data_dir), **metadata)

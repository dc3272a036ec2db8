"""HF datasets / hub offline for the duration of a block: nothing downloads behind the user's back."""

from __future__ import annotations

import contextlib

from ccq_eval.scoped_env import scoped_environ


@contextlib.contextmanager
def offline():
    """They read these flags at import time, so the module constants are set as well as the environment."""
    import datasets
    import huggingface_hub.constants as hub

    saved = (datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = hub.HF_HUB_OFFLINE = True
    try:
        with scoped_environ(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1"):
            yield
    finally:
        datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE = saved

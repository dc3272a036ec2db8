"""What a label says about its model, written once: seeds of one model (``NAME``, ``NAME-s1``, ...: the zoo's
naming), and which model is whose backbone (``ccq-NAME`` is the trained CCQ version of ``NAME``;
``NAME+ccq<lambda>`` its training-free CCQ version on the same weights, `run`'s default label). The pairs table,
the seeds table and every figure's series read these."""

from __future__ import annotations

import re

SEED_SUFFIX = r"-s\d+$"
TRAINED_PREFIX = "ccq-"
TRAINING_FREE = re.compile(r"\+ccq[0-9.eE+-]+(-\w+)?$")  # default_label's "+ccq0.3" / "+ccq0.3-none"
TRAINED_CCQ, TRAINING_FREE_CCQ, ALONE = "ccq", "training-free ccq", "alone"


def model_name(label: str) -> str:
    """A label without its seed suffix."""
    return re.sub(SEED_SUFFIX, "", label)


def backbone_and_role(name: str, names) -> tuple[str, str]:
    """(the backbone ``name`` is CCQ's version of, TRAINED_CCQ or TRAINING_FREE_CCQ) when that backbone is among
    ``names``; else (``name``, ALONE)."""
    if name.startswith(TRAINED_PREFIX) and name[len(TRAINED_PREFIX):] in names:
        return name[len(TRAINED_PREFIX):], TRAINED_CCQ
    plain = TRAINING_FREE.sub("", name)
    if plain != name and plain in names:
        return plain, TRAINING_FREE_CCQ
    return name, ALONE


def backbone_of(label: str, labels) -> str | None:
    """The label this one is CCQ's version of, when both are present."""
    backbone, role = backbone_and_role(label, set(labels))
    return None if role == ALONE else backbone


def pairs_of(labels) -> list[tuple[str, str]]:
    """(CCQ label, backbone label) for every pair present, sorted."""
    present = set(labels)
    return sorted((label, base) for label in present if (base := backbone_of(label, present)))

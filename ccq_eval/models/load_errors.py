"""The error every checkpoint mistake is: one line naming the input and the fix (exit 2)."""

from ccq_eval.errors import BadInput


class ModelLoadError(BadInput):
    """A checkpoint that cannot be loaded as given; the message says what to do."""

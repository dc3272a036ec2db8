"""The two error bases the CLI catches. Every input mistake of every suite derives from BadInput
(one line naming the input and the fix, exit 2, nothing written); a store write that fails mid-run
is a StoreWriteFailure (exit 1: finished units are kept, the failed write left nothing)."""


class BadInput(ValueError):
    """Input that cannot be used as given; the message names it and what to do."""


class StoreWriteFailure(RuntimeError):
    """A write that failed mid-run (disk full, store turned read-only); rolled back whole."""

"""What a suite's driver may ask of the lm-eval model it evaluates, beyond lm-eval's ``LM`` interface: the context
budget of the evaluations made inside a block. wrapper.CCQEvalLM implements it over a checkpoint; anything else a
run evaluates implements the same member (generating is generation/generator.py's ``Generator``)."""

from __future__ import annotations

from typing import ContextManager, Protocol, runtime_checkable


@runtime_checkable
class ModelAdapter(Protocol):
    def budget(self, max_length: int) -> ContextManager:
        """The context budget of the lm-eval evaluations made inside the block."""

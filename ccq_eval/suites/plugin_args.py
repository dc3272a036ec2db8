"""What a task plugin reads from lm-eval's metadata when stock lm-eval runs it. lm-eval hands the data function
``--model_args`` merged with ``--metadata``, so the tokenizer is ``tokenizer`` or else the model's own
``pretrained`` (as lm-eval's RULER tasks read it), and the lengths are ``max_seq_lengths`` or else the suite's
defaults (the paper's)."""

from __future__ import annotations


def tokenizer_source(task: str, tokenizer: str | None, pretrained: str | None) -> str:
    source = tokenizer or pretrained
    if not source or not isinstance(source, str):
        raise ValueError(f"{task}: no tokenizer: pass --model_args pretrained=CKPT, or --metadata "
                         "'{\"tokenizer\": \"PATH\"}' for a model named otherwise")
    return source


NOT_THIS_LENGTH = -1  # lm-eval's RULER port's value for a length a document does not belong to


def reported_lengths(suite) -> tuple[int, ...]:
    """The lengths a plugin's results name one by one (``"<L>,none"``, as lm-eval's RULER tasks name theirs): the
    suite's defaults and the powers of two from 1K to 128K (the metrics its task YAML lists); another length
    counts in the overall metric only."""
    return tuple(sorted(set(suite.default_lengths) | {1 << k for k in range(10, 18)}))


def per_length(suite_name: str, doc: dict, value) -> dict:
    """One document's value under its own length's metric and NOT_THIS_LENGTH under every other reported one
    (what lm-eval's RULER tasks return), for documents that carry their length (``max_length``)."""
    from ccq_eval.suites import get_suite

    own = doc.get("max_length")
    reported = reported_lengths(get_suite(suite_name))
    if own not in reported:  # a length the task YAML names no metric for: in the overall metric only
        return {}
    return {str(length): value if length == own else NOT_THIS_LENGTH for length in reported}


def at_length(aggregate):
    """An lm-eval aggregation over one length's documents: the others' NOT_THIS_LENGTH left out; NOT_THIS_LENGTH
    when none is of this length (as RULER's aggregate_metrics)."""
    def aggregate_at_length(items):
        mine = [item for item in items if not (isinstance(item, (int, float)) and item == NOT_THIS_LENGTH)]
        return aggregate(mine) if mine else NOT_THIS_LENGTH
    aggregate_at_length.__name__ = f"{aggregate.__name__}_at_length"
    return aggregate_at_length


def mean(items) -> float:
    return sum(items) / len(items)


def check_context(task: str, wanted: list[int], metadata: dict, tokenizer) -> None:
    """Refuses (before lm-eval runs anything) a length that does not fit the context lm-eval will give the model:
    each length budgets prompt + generation (or the scored tokens), so it must be at most the model's context."""
    from ccq_eval.lm.context import check_lengths_fit, model_context

    check_lengths_fit(task, {length: length for length in wanted}, model_context(metadata, tokenizer))


def lengths(suite: str, max_seq_lengths) -> list[int]:
    from ccq_eval.suites import get_suite
    from ccq_eval.suites.base import plugin_lengths

    return plugin_lengths(get_suite(suite), max_seq_lengths)

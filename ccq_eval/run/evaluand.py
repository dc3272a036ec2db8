"""What a suite evaluates: a generator (the generating suites' one call), an lm-eval LM (the suites lm-eval drives),
the loaded model where there is one, its tokenizer, data-parallel ranks and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field

from ccq_eval.generation.ranks import Ranks
from ccq_eval.run.request import RunRequest, ccq_overrides


@dataclass
class Evaluand:
    generator: object  # generation.generator.Generator: generate(requests), scores_text
    lm: object  # an lm-eval LM with a context budget (lm.adapter.ModelAdapter)
    tokenizer: object
    tokenizer_path: str  # a folder the tokenizer can be reloaded from
    provenance: dict
    model: object = None  # the loaded torch model (the efficiency suite, the kernel warm-up); None where none is
    ranks: Ranks = Ranks()
    compilations: list = field(default_factory=list)  # what resolving --batch-size auto compiled and took

    def generate(self, requests):
        """Greedy continuations of ``requests`` in their order (rank 0; None on the others)."""
        return self.generator.generate(requests)

    @property
    def scores_text(self) -> bool:
        return self.generator.scores_text


def checkpoint_evaluand(model, tokenizer, provenance: dict, max_length: int, batch_size: int,
                        ranks: Ranks = Ranks(), compilations: list | None = None,
                        tokenizer_path: str | None = None) -> Evaluand:
    """A loaded checkpoint: the engine generates, and lm-eval's wrapper (with ``max_length`` as its budget) hands
    its own generating requests to the same engine. The tokenizer reloads from the checkpoint's folder unless
    ``tokenizer_path`` says otherwise."""
    from ccq_eval.generation.generator import EngineGenerator
    from ccq_eval.lm.wrapper import CCQEvalLM

    generator = EngineGenerator(model, tokenizer, batch_size, ranks)
    lm = CCQEvalLM(model, tokenizer, max_length, generator.generate_here, ranks, batch_size=batch_size)
    return Evaluand(generator, lm, tokenizer, tokenizer_path or provenance["path"], provenance, model=model, ranks=ranks,
                    compilations=compilations or [])


def load_evaluand(request: RunRequest, max_length: int) -> Evaluand:
    """The default: a checkpoint through load_model, with an explicit budget."""
    from ccq_eval.models.loading import load_model
    from ccq_eval.run.batching import default_batch_size

    device = request.device
    ranks = Ranks.from_environment(request.rendezvous_timeout)
    if ranks.world_size > 1 and device in ("auto", "cuda"):  # one GPU per rank under accelerate launch / torchrun
        import torch

        device = f"cuda:{ranks.local_rank}" if torch.cuda.is_available() else "cpu"
    model, tokenizer, provenance = load_model(request.model, device=device, dtype=request.dtype,
                                              allow_pickle=request.allow_pickle,
                                              ccq_overrides=ccq_overrides(request) or None)
    batch_size, probes = request.batch_size, []
    if batch_size is None:
        batch_size = default_batch_size(model.device)
    elif batch_size == "auto":
        probes.append(_probe(model, max_length))
        batch_size = probes[-1].batch
    provenance["batch_size"] = batch_size
    return checkpoint_evaluand(model, tokenizer, provenance, max_length, batch_size, ranks, probes)


def _probe(model, max_length: int):
    """``--batch-size auto`` resolved with the engine's prefill, timed as the kernel warm-up is (on a GPU it compiles
    the run's own prefill kernels): the warm-up's record, with the batch size found."""
    from dataclasses import replace

    from ccq_eval.run.batching import auto_batch_size
    from ccq_eval.run.kernel_warmup import compile_kernels

    found = []
    timed = compile_kernels(model, max_length, 0, lambda m, length, _: found.append(auto_batch_size(m, length)),
                            "auto batch size probe")
    return replace(timed, batch=found[0])

"""The kernel warm-up meets every kernel key a run meets (fla's real kernels, interpreted, with the run's CUDA
behaviour on: packed prefills padded to packing.py's totals, decoding in fixed slots, the warm-up before the first
unit). Keys: what makes a GPU compile again (Triton's JIT specialisation of each launch) or tune again (each
autotuner's key), recorded by tests/interpreter/kernel_keys.py. A mixed-length run: two lengths (or prompts of
several sizes), refills of one and of several prompts, on a BPE tokenizer with its own BOS. Interpreted kernels cost
about 20 ms a token here, so the totals stay in fla's first norm bucket (up to 2,048 tokens); that every bucket above is in the warm-up's set is
checked on the ladder itself (tests/generation/test_packing.py)."""

from __future__ import annotations

import json

import pytest

from ccq_eval.cli import main
from ccq_eval.generation import engine, layouts
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from ccq_eval.run import kernel_warmup
from tests.helpers import save_checkpoint, tiny_model
from tests.interpreter.kernel_keys import recorded_kernel_keys

GENERATION_CAP = 3  # tokens a row: a step's kernels are the same at every step


def longbench_data(root):
    (root / "longbench").mkdir(parents=True)
    records = [{"input": f"What is item {i}?", "context": f"Some context number {i}. " * (2 + 3 * i),
                "answers": [f"answer {i}"], "length": 100, "dataset": "hotpotqa", "language": "en",
                "all_classes": None, "_id": f"h-{i}"} for i in range(5)]
    (root / "longbench" / "hotpotqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


RUNS = {
    "sniah": ["--suite", "sniah", "--tasks", "1", "--lengths", "320,448", "--samples", "3"],
    "longbench": ["--suite", "longbench", "--tasks", "hotpotqa", "--lengths", "300"],
}


@pytest.mark.shapes
@pytest.mark.parametrize("suite", list(RUNS))
def test_the_warm_up_meets_every_kernel_key_the_run_meets(suite, tmp_path, monkeypatch):
    from tests.fixtures.ruler.make_fixtures import subword_tokenizer_with_bos

    tokenizer = subword_tokenizer_with_bos()  # a BPE with its own BOS: prompts a quarter of their bytes
    model = tiny_model("gated_deltanet", fuse_cross_entropy=False, vocab_size=len(tokenizer))
    folder = save_checkpoint(model, tmp_path / "gdn", tokenizer)
    monkeypatch.setattr(kernel_warmup, "compiles_fla_kernels", lambda provenance: True)  # as on CUDA
    monkeypatch.setattr(layouts, "pads", lambda model: True)
    monkeypatch.setattr(engine, "fixed_slots", lambda layout: layout.refills)
    generate = engine.generate
    monkeypatch.setattr(engine, "generate", lambda model, tok, requests, *a, **k: generate(
        model, tok, [r.__class__(**{**r.__dict__, "max_new_tokens": min(r.max_new_tokens, GENERATION_CAP)})
                     for r in requests], *a, **k))
    warm, prefills = [], []
    warm_up = kernel_warmup.warm_up

    def recorded_warm_up(*args, **kwargs):
        with recorded_kernel_keys() as keys:
            done = warm_up(*args, **kwargs)
        warm.append(keys)
        return done

    monkeypatch.setattr(kernel_warmup, "warm_up", recorded_warm_up)
    prefill = layouts.Independent.prefill
    monkeypatch.setattr(layouts.Independent, "prefill",
                        lambda self, prompts: prefills.append(sum(map(len, prompts))) or prefill(self, prompts))
    extra = ["--data-dir", str(longbench_data(tmp_path / "data"))] if suite == "longbench" else []
    with fla_kernels_on_cpu(), recorded_kernel_keys() as (jit, tuning):
        code = main(["--model", str(folder), *RUNS[suite], *extra, "--batch-size", "2", "--device", "cpu",
                     "--store", str(tmp_path / "s.db")])
    assert code == 0
    (warm_jit, warm_tuning), = warm
    run_totals = prefills[len(prefills) - len(set(prefills)) :]
    assert len(set(prefills)) >= 3, prefills  # prompts of several sizes, alone and together
    assert jit - warm_jit == set(), sorted(jit - warm_jit)[:3]
    assert tuning - warm_tuning == set(), sorted(tuning - warm_tuning, key=str)[:3]

"""Small models and a byte-level tokenizer, made in the tests (no downloads)."""

from __future__ import annotations

from pathlib import Path

import torch

from ccq_eval.byte_tokenizer import byte_tokenizer  # noqa: F401  (re-exported for the tests)

SMALL = dict(hidden_size=64, num_hidden_layers=2, vocab_size=260)
WINDOW_ATTN = {"layers": [1], "num_heads": 2, "num_kv_heads": 2, "window_size": 48}
TINY = {
    "gla": dict(SMALL, num_heads=2),
    "gated_deltanet": dict(SMALL, num_heads=2, head_dim=32),
    "transformer": dict(SMALL, num_heads=2),
    # the other families of the paper's tables (#14)
    "delta_net": dict(SMALL, num_heads=2),
    "retnet": dict(SMALL, num_heads=2),
    "hgrn2": dict(SMALL, expand_ratio=32),  # two heads of 32
    "mamba": dict(SMALL, state_size=8),
    "mamba2": dict(SMALL, num_heads=4, head_dim=32, state_size=16, n_groups=1, chunk_size=32),
    "samba": dict(SMALL, state_size=8, attn=WINDOW_ATTN),
    "gdn_hybrid": dict(SMALL, num_heads=2, head_dim=32, attn=WINDOW_ATTN),
    "llama": dict(SMALL, num_attention_heads=2, num_key_value_heads=1, intermediate_size=128),
    "gpt_neox": dict(SMALL, num_attention_heads=2, intermediate_size=128),
}
MODEL_TYPE = {"gdn_hybrid": "gated_deltanet"}  # kinds that are a configuration of another model_type
NEW_FAMILIES = ["delta_net", "retnet", "hgrn2", "mamba", "mamba2", "samba", "gdn_hybrid", "llama", "gpt_neox"]
HOOKED_CCQ = ["delta_net", "retnet", "hgrn2"]  # training-free CCQ families (ccq_<kind>)


def bpe_tokenizer():
    """A real merges tokenizer without a BOS of its own (GPT-2's kind: byte-level BPE, trained here on the shipped
    essays), so that cutting a text can change tokens at the cut and nothing is added before a prompt."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from ccq_eval.data import SHIPPED_ESSAYS

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([SHIPPED_ESSAYS.read_text()], trainers.BpeTrainer(
        vocab_size=800, special_tokens=["<s>", "</s>", "<unk>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def tiny_model(kind: str, **overrides):
    """A randomly initialised tiny model of a family ('gla', 'ccq_gla', 'mamba', 'gdn_hybrid', ...)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models import register_ccq_models
    from ccq_eval.models.generate_cache import install_generate_cache_names

    register_ccq_models()  # the CCQ families with transformers' Auto classes, as loading does
    install_generate_cache_names()  # and fla's models' cache under generate()'s name for it, as loading does

    base = kind.removeprefix("ccq_")
    model_type = ("ccq_" if kind.startswith("ccq_") else "") + MODEL_TYPE.get(base, base)
    config = AutoConfig.for_model(model_type, **{**TINY[base], **overrides})
    return AutoModelForCausalLM.from_config(config).eval()


def save_checkpoint(model, folder: Path, tokenizer=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    (tokenizer or byte_tokenizer()).save_pretrained(folder)
    return folder


def left_padding_gaps(model, x: torch.Tensor, starts=(0, 25, 70)) -> list[float]:
    """Per row, the largest logit difference between a left-padded batch (row i padded up to starts[i])
    and that row's sequence run alone."""
    mask = torch.ones(x.shape, dtype=torch.long)
    for row, start in enumerate(starts):
        mask[row, :start] = 0
    with torch.no_grad():
        batched = model(x, attention_mask=mask).logits
        return [float((batched[row, start:] - model(x[row : row + 1, start:]).logits[0]).abs().max())
                for row, start in enumerate(starts)]


def greedy_by_full_forward(model, ids: torch.Tensor, steps: int) -> torch.Tensor:
    """Greedy decoding without a cache: the slow reference for generate()."""
    for _ in range(steps):
        with torch.no_grad():
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids


def cli_command(tmp_path: Path, kind: str, samples: int) -> tuple[list[str], dict, Path]:
    """A subprocess `ccq-eval` S-NIAH run (1k, 2k) on a seeded tiny model: (argv, env, store)."""
    import os
    import sys

    torch.manual_seed(0)
    model = save_checkpoint(tiny_model(kind), tmp_path / "m")
    store = tmp_path / "s.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "CCQ_EVAL_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "ccq_eval", "--model", str(model), "--suite", "sniah", "--lengths", "1k,2k",
           "--samples", str(samples), "--store", str(store), "--device", "cpu"]
    return cmd, env, store


def wait_for_units(store: Path, proc, count: int, timeout: float = 300) -> None:
    """Poll the store until it holds `count` units; fails if the process ends first (then a signal
    sent next would test nothing) or the timeout passes."""
    import contextlib
    import sqlite3
    import time

    deadline, seen = time.time() + timeout, 0
    while time.time() < deadline and proc.poll() is None:
        try:  # read-only, closed each time: the poller never creates, locks or holds the store
            with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)) as db:
                seen = db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
            if seen >= count:
                return
        except sqlite3.OperationalError:
            pass  # not created yet, or mid-write
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before {count} units were seen ({seen})"
    raise AssertionError(f"{count} units not written within {timeout:.0f} s ({seen} seen)")


def oracle_request(store, **kw):
    """A small S-NIAH request for the oracle stand-in (tests.oracle.oracle_loader) on ``store``."""
    from ccq_eval.run import RunRequest

    return RunRequest(model="oracle", suite="sniah", lengths=kw.pop("lengths", "1k"), samples=kw.pop("samples", 3),
                      store=str(store), **kw)


def unit_rows(store) -> list[tuple]:
    """(unit key, status, samples) of each unit in a store, read directly."""
    import sqlite3

    return sqlite3.connect(store).execute(
        "SELECT u.unit_key, u.status, COUNT(s.idx) FROM units u LEFT JOIN samples s ON s.unit_id = u.id "
        "GROUP BY u.id").fetchall()

"""`ccq-eval zoo build`: train the tiny model zoo from scratch on CPU, resumable from checkpoints.

Every model sees the same data in the same order with the same budget; only the architecture (and,
for the GLA / CCQ-GLA pairs, the seed) differs. The corpus is offline and licence-clean, and the
recipe is a two-stage curriculum that first makes the lookup easy (a one-shot recipe with haystacks
from the start never taught even the Transformer to retrieve at this scale):

- lookup: documents that are one needle and its question alone ("One of the special magic numbers
  for KEY is: VALUE." then "The special magic number for KEY mentioned in the provided text is
  VALUE."), ~165 bytes, many per batch: the copy is learnt before any filler competes with it;
- haystack: full S-NIAH-1 prompts from the suite's own template (RULER's header, repeated filler,
  one needle at a random line, the question, the answer) whose length grows from 300 bytes to the
  training length of 1024, mixed with windows of the shipped CC0 essays (`data/text/essays.txt`).

The answer's bytes weigh more in the loss in both stages. The byte-level tokenizer makes one token
one byte.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ccq_eval.byte_tokenizer import byte_tokenizer
from ccq_eval.data.cache import file_sha256
from ccq_eval.suites.sniah.examples import lookup_example, sniah_1_example

TRAIN_LENGTH = 1024  # RULER's template alone is ~375 bytes: 512 would leave almost no haystack
SHORTEST_HAYSTACK_DOC = 300  # where the haystack stage's length curriculum starts (the template alone: ~380-470)
# Two layers: enough for copy-by-lookup (the short convolution gives keys the previous token), and
# half the CPU cost of four, which is what lets the zoo train in a few core-hours.
WIDTH = dict(hidden_size=128, num_hidden_layers=2, num_heads=4, vocab_size=260)
FAMILY_EXTRA = {"gated_deltanet": dict(head_dim=32), "ccq_gated_deltanet": dict(head_dim=32),
                "gla": dict(use_short_conv=True), "ccq_gla": dict(use_short_conv=True)}


@dataclass
class TrainConfig:
    steps: int = 1800  # in all: lookup_steps of the lookup stage, then the haystack stage
    # Recurrent models sit at chance on the lookup for 450-650 steps, then learn the copy within a few hundred
    # (benchmarks/zoo_levers.py); 250 stopped every one of them before the turn.
    lookup_steps: int = 1200
    lookup_batch: int = 32  # lookup documents are ~165 bytes: 32 of them cost about one batch of 8 haystacks
    batch: int = 8
    lr: float = 1e-3  # 3e-3 left the Transformer's answer loss at chance in the lookup stage
    warmup: int = 50  # then constant through the lookup stage, cosine to 10% over the haystack stage
    save_every: int = 50
    needle_share: float = 0.75  # the haystack stage's share of S-NIAH documents; the rest are essay windows
    # The answer's 7 digits are ~1% of a haystack document's bytes, and the repeated filler is learnt in
    # a few dozen steps: weighting the answer bytes keeps retrieval from drowning in the filler's gradient.
    answer_weight: float = 8.0
    data_seed: int | str = 1234  # the data order: step s's documents come from random.Random(f"{data_seed}-{s}")

    def in_lookup_stage(self, step: int) -> bool:
        return step < self.lookup_steps


SHORT_LOOKUP = dict(steps=850, lookup_steps=250)  # the first recipe: every recurrent model at chance
LEVERS_DATA_ORDER = "levers"  # the lookup documents benchmarks/zoo_levers.py trains on, step for step


@dataclass(frozen=True)
class ZooModel:
    name: str
    family: str
    seed: int
    # the recipe it ships with; models not rebuilt on the long lookup stage yet keep the short one they were
    # built with (their cards say which), so `zoo build` reproduces each shipped model as it is
    steps: int = TrainConfig.steps
    lookup_steps: int = TrainConfig.lookup_steps
    data_seed: int | str = TrainConfig.data_seed  # shared within each CCQ / backbone pair

    def recipe(self, steps: int | None = None) -> "TrainConfig":
        """Its TrainConfig; ``steps`` (a short build) ends it early, lookup stage first."""
        total = self.steps if steps is None else steps
        return TrainConfig(steps=total, lookup_steps=min(self.lookup_steps, total), data_seed=self.data_seed,
                           save_every=min(TrainConfig.save_every, total))


ZOO = {m.name: m for m in (
    ZooModel("gla-tiny", "gla", 0), ZooModel("ccq-gla-tiny", "ccq_gla", 0),
    # Gated DeltaNet's turn depends on the data order: on the zoo's (1234) neither GDN model had left chance
    # after 2,400 lookup steps; on the lever runs' order (benchmarks/zoo_levers.py) GDN turned by step 550.
    # The pair trains on that order, both models alike. A rebuild of both on a 1,800-step lookup stage (2,400
    # steps in all) left CCQ-GDN at chance through step 1,850 while GDN learnt (results/zoo-training/not-shipped/):
    # the shipped pair keeps the 1,200-step recipe, on which CCQ-GDN learnt the copy partly.
    ZooModel("gdn-tiny", "gated_deltanet", 0, data_seed=LEVERS_DATA_ORDER),
    ZooModel("ccq-gdn-tiny", "ccq_gated_deltanet", 0, data_seed=LEVERS_DATA_ORDER),
    ZooModel("transformer-tiny", "transformer", 0, **SHORT_LOOKUP),  # retrieves on the short recipe already
    # two more seeds of the pair the paper compares (20-27 core-minutes per recurrent model)
    ZooModel("gla-tiny-s1", "gla", 1), ZooModel("ccq-gla-tiny-s1", "ccq_gla", 1),
    ZooModel("gla-tiny-s2", "gla", 2), ZooModel("ccq-gla-tiny-s2", "ccq_gla", 2),
)}


def build_model(spec: ZooModel):
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models import register_ccq_models

    register_ccq_models()

    torch.manual_seed(spec.seed)
    config = AutoConfig.for_model(spec.family, **WIDTH, **FAMILY_EXTRA.get(spec.family, {}),
                                  max_position_embeddings=4 * TRAIN_LENGTH, fuse_cross_entropy=True)
    config.training_context_length = TRAIN_LENGTH  # the curves draw a dashed line here
    model = AutoModelForCausalLM.from_config(config)
    if spec.family in ("gla", "ccq_gla"):
        retention_init(model)
    return model


# GLA's forget gate is logsigmoid(x) / 16: at a zero logit it keeps exp(-0.043) per byte, so a needle
# 300 bytes back arrives with weight ~1e-6 and retrieval never gets a gradient. A bias of +4 keeps
# ~0.999 per byte (0.57 after 500 bytes) at initialisation; training moves it from there.
RETENTION_GATE_BIAS = 4.0


def retention_init(model) -> None:
    with torch.no_grad():
        for layer in model.model.layers:
            layer.attn.gk_proj[-1].bias.fill_(RETENTION_GATE_BIAS)


class Batches:
    """The shared, seeded stream of training batches: step s always yields the same tokens."""

    def __init__(self, config: TrainConfig):
        from ccq_eval.data import SHIPPED_ESSAYS

        self.config = config
        self.tokenizer = byte_tokenizer()
        self.essays = self.tokenizer(SHIPPED_ESSAYS.read_text(), add_special_tokens=False)["input_ids"]

    def _encode(self, text: str, answer: str) -> tuple[list[int], int]:
        """The document's tokens (BOS, text, answer) and how many trailing tokens are the answer."""
        ids = self.tokenizer(text + answer, add_special_tokens=False)["input_ids"]
        return [self.tokenizer.bos_token_id, *ids], len(answer)

    def lookup_doc(self, rng: random.Random) -> tuple[list[int], int]:
        """One needle and its question, nothing else: the copy without a haystack."""
        return self._encode(*lookup_example(rng))

    def needle_doc(self, rng: random.Random, length: int) -> tuple[list[int], int]:
        """An S-NIAH-1 prompt of about `length` bytes (never less than the template) and its answer."""
        return self._encode(*sniah_1_example(rng, length))

    def essay_doc(self, rng: random.Random, length: int) -> tuple[list[int], int]:
        start = rng.randrange(len(self.essays) - length)
        return [self.tokenizer.bos_token_id, *self.essays[start : start + length - 1]], 0

    def curriculum_length(self, step: int) -> int:
        """The haystack stage's longest document: from 300 bytes to the training length over its first half."""
        haystack_steps = self.config.steps - self.config.lookup_steps
        frac = min(1.0, (step - self.config.lookup_steps) / max(1, haystack_steps // 2))
        return int(SHORTEST_HAYSTACK_DOC + frac * (TRAIN_LENGTH + 1 - SHORTEST_HAYSTACK_DOC))

    def documents(self, step: int) -> list[tuple[list[int], int]]:
        rng = random.Random(f"{self.config.data_seed}-{step}")
        if self.config.in_lookup_stage(step):
            return [self.lookup_doc(rng) for _ in range(self.config.lookup_batch)]
        longest = self.curriculum_length(step)
        # lengths spread over the upper half, so a batch always holds shorter and longer haystacks
        return [self.needle_doc(rng, rng.randint(max(200, longest // 2), longest))
                if rng.random() < self.config.needle_share else self.essay_doc(rng, longest)
                for _ in range(self.config.batch)]

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Inputs, next-token targets (-100: padding) and per-target loss weights (answers weigh more)."""
        docs = self.documents(step)
        # the batch is as long as its longest document: early (curriculum) steps cost less
        width = min(TRAIN_LENGTH + 1, max(len(doc) for doc, _ in docs))
        ids = torch.full((len(docs), width), self.tokenizer.pad_token_id)
        targets = torch.full_like(ids, -100)
        weights = torch.zeros(ids.shape)
        for row, (doc, answer_length) in enumerate(docs):
            doc = doc[:width]
            ids[row, : len(doc)] = torch.tensor(doc)
            targets[row, : len(doc)] = torch.tensor(doc)
            weights[row, : len(doc)] = 1.0
            if answer_length:
                weights[row, len(doc) - answer_length : len(doc)] = self.config.answer_weight
        return ids[:, :-1], targets[:, 1:], weights[:, 1:]


def weighted_loss(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    per_token = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    weights = weights.flatten()
    return (per_token * weights).sum() / weights.sum()


def answer_loss(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor) -> float:
    """Mean NLL of the answer bytes alone (nats/byte): the retrieval signal the loss log tracks."""
    answer = weights.flatten() > 1.0
    if not answer.any():
        return float("nan")
    per_token = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), reduction="none")
    return float(per_token[answer].mean())


def _lr(config: TrainConfig, step: int) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    if config.in_lookup_stage(step):
        return config.lr
    start = max(config.lookup_steps, config.warmup)
    progress = (step - start) / max(1, config.steps - start)
    return config.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def train(spec: ZooModel, config: TrainConfig, work: Path, out: Path, progress=print) -> dict:
    """Train (or resume) one model up to config.steps and export it to out/<name>."""
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    folder = work / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    model = build_model(spec)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01, betas=(0.9, 0.95))
    state_file = folder / "state.pt"
    step = 0
    if state_file.exists():  # our own checkpoint, written below
        state = torch.load(state_file, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        progress(f"{spec.name}: resuming at step {step}")
    batches = Batches(config)
    log = open(folder / "loss.jsonl", "a")
    model.train()
    loss_value, started = float("nan"), time.time()
    from tqdm import tqdm

    bar = tqdm(total=config.steps, initial=step, desc=spec.name, unit="step", disable=None, leave=False)
    while step < config.steps:
        ids, targets, weights = batches.batch(step)
        for group in optimizer.param_groups:
            group["lr"] = _lr(config, step)
        logits = model(input_ids=ids).logits
        loss = weighted_loss(logits, targets, weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        with torch.no_grad():
            plain = weights.clamp(max=1.0)
            loss_value, answer_value = float(weighted_loss(logits, targets, plain)), answer_loss(logits, targets, weights)
        log.write(json.dumps({"step": step, "loss": loss_value, "answer_loss": answer_value,
                              "lr": _lr(config, step - 1)}) + "\n")
        bar.update(1)
        bar.set_postfix(loss=f"{loss_value:.3f}", answer=f"{answer_value:.3f}", refresh=False)
        if step % config.save_every == 0 or step == config.steps:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, state_file)
            log.flush()
            progress(f"{spec.name}: step {step}/{config.steps} loss {loss_value:.3f} answer {answer_value:.3f} "
                     f"({(time.time() - started) / 60:.1f} min since this build started)")
    bar.close()
    log.close()
    return export(spec, model, step, _final_loss(folder / "loss.jsonl", loss_value), out, config)


def _final_loss(path: Path, fallback: float, last: int = 50) -> float:
    """Mean unweighted loss of the last 50 logged steps (one batch's loss is noisy)."""
    lines = path.read_text().splitlines()[-last:] if path.exists() else []
    return sum(json.loads(line)["loss"] for line in lines) / len(lines) if lines else fallback


def export(spec: ZooModel, model, steps: int, final_loss: float, out: Path, config: TrainConfig) -> dict:
    """bf16 safetensors + tokenizer + a model card, loadable as zoo:<name>."""
    target = out / spec.name
    target.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(target, safe_serialization=True)
    byte_tokenizer().save_pretrained(target)
    weights = file_sha256(target / "model.safetensors")
    params = sum(p.numel() for p in model.parameters())
    card = {"name": spec.name, "architecture": spec.family, "parameters": params, "seed": spec.seed, "steps": steps,
            "final_loss_nats_per_byte": round(final_loss, 4),  # mean of the last 50 steps
            "training_length": TRAIN_LENGTH, "sha256": weights, "data_order": config.data_seed,
            "corpus": "synthetic needle/question pairs and S-NIAH-1 documents + CC0 essays (ccq_eval/data/text/essays.txt), byte-level",
            "recipe": (f"{config.lookup_steps} lookup steps (batch {config.lookup_batch}: one needle and its question), "
                       f"then {config.steps - config.lookup_steps} haystack steps (batch {config.batch} x <= {TRAIN_LENGTH} "
                       f"bytes, {config.needle_share:.0%} S-NIAH-1 documents growing {SHORTEST_HAYSTACK_DOC}->{TRAIN_LENGTH} "
                       f"bytes over the first half, the rest essay windows); AdamW lr {config.lr} (warm-up {config.warmup}, "
                       f"constant, then cosine to 10% over the haystack stage), answer bytes weighted x{config.answer_weight:g}"
                       + (f", forget-gate bias +{RETENTION_GATE_BIAS:g} at init" if spec.family in ("gla", "ccq_gla") else "")),
            "width": WIDTH}
    (target / "MODEL_CARD.md").write_text(
        f"# {spec.name}\n\n" + "\n".join(f"- {k}: {v}" for k, v in card.items()) + "\n")
    return card

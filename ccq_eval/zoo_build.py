"""`ccq-eval zoo build`: train the tiny model zoo from scratch on CPU, resumable from checkpoints.

Every model sees the same data in the same order with the same budget; only the architecture (and,
for the GLA / CCQ-GLA pairs, the seed) differs. The corpus is offline and licence-clean: the
shipped CC0 essays (`data/text/essays.txt`), cut into windows, mixed with synthetic S-NIAH-1-style
documents (filler, a needle, the question and its answer) from the suite's own generator, whose
haystacks grow from short to the training length of 1024 bytes (a curriculum: retrieval first appears on short
haystacks). The byte-level tokenizer makes one token one byte.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ccq_eval.byte_tokenizer import byte_tokenizer

TRAIN_LENGTH = 1024  # RULER's template alone is ~375 bytes: 512 would leave almost no haystack
SHORTEST_NEEDLE_DOC = 640  # S-NIAH prompts need ~380-470 bytes with an empty haystack, plus 128
WIDTH = dict(hidden_size=128, num_hidden_layers=4, num_heads=4, vocab_size=260)
FAMILY_EXTRA = {"gated_deltanet": dict(head_dim=32), "ccq_gated_deltanet": dict(head_dim=32),
                "gla": dict(use_short_conv=True), "ccq_gla": dict(use_short_conv=True)}


@dataclass(frozen=True)
class ZooModel:
    name: str
    family: str
    seed: int


ZOO = {m.name: m for m in (
    ZooModel("gla-tiny", "gla", 0), ZooModel("ccq-gla-tiny", "ccq_gla", 0),
    ZooModel("gdn-tiny", "gated_deltanet", 0), ZooModel("ccq-gdn-tiny", "ccq_gated_deltanet", 0),
    ZooModel("transformer-tiny", "transformer", 0),
    ZooModel("gla-tiny-s1", "gla", 1), ZooModel("gla-tiny-s2", "gla", 2),
    ZooModel("ccq-gla-tiny-s1", "ccq_gla", 1), ZooModel("ccq-gla-tiny-s2", "ccq_gla", 2),
)}


@dataclass
class TrainConfig:
    steps: int = 3000
    batch: int = 16
    lr: float = 2e-3
    warmup: int = 100
    save_every: int = 100
    needle_share: float = 0.5  # fraction of each batch that is synthetic S-NIAH documents
    data_seed: int = 1234  # the data order, shared by every model


def build_model(spec: ZooModel):
    import ccq_eval.models  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(spec.seed)
    config = AutoConfig.for_model(spec.family, **WIDTH, **FAMILY_EXTRA.get(spec.family, {}),
                                  max_position_embeddings=4 * TRAIN_LENGTH, fuse_cross_entropy=True)
    config.training_context_length = TRAIN_LENGTH  # the curves draw a dashed line here
    return AutoModelForCausalLM.from_config(config)


class Batches:
    """The shared, seeded stream of training batches: step s always yields the same tokens."""

    def __init__(self, config: TrainConfig):
        from ccq_eval.data.haystack import DEFAULT_HAYSTACK

        self.config = config
        self.tokenizer = byte_tokenizer()
        self.essays = self.tokenizer(DEFAULT_HAYSTACK.read_text(), add_special_tokens=False)["input_ids"]

    def needle_doc(self, rng: random.Random, length: int) -> list[int]:
        from ccq_eval.data import sniah

        record = sniah.generate("sniah_1", self.tokenizer, length, 1, seed=rng.randrange(1 << 30), haystack=None)[0]
        text = sniah.prompt_of(record) + " " + record["outputs"][0] + "."
        return [self.tokenizer.bos_token_id, *self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def essay_doc(self, rng: random.Random) -> list[int]:
        start = rng.randrange(len(self.essays) - TRAIN_LENGTH)
        return [self.tokenizer.bos_token_id, *self.essays[start : start + TRAIN_LENGTH]]

    def curriculum_length(self, step: int) -> int:
        """Needle documents grow from the shortest possible to the training length over the first half."""
        frac = min(1.0, step / max(1, self.config.steps // 2))
        return int(SHORTEST_NEEDLE_DOC + frac * (TRAIN_LENGTH + 1 - SHORTEST_NEEDLE_DOC))

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        rng = random.Random(f"{self.config.data_seed}-{step}")
        docs = [self.needle_doc(rng, rng.randint(SHORTEST_NEEDLE_DOC, self.curriculum_length(step)))
                if rng.random() < self.config.needle_share else self.essay_doc(rng)
                for _ in range(self.config.batch)]
        ids = torch.full((len(docs), TRAIN_LENGTH + 1), self.tokenizer.pad_token_id)
        labels = torch.full_like(ids, -100)
        for row, doc in enumerate(docs):
            doc = doc[: TRAIN_LENGTH + 1]
            ids[row, : len(doc)] = torch.tensor(doc)
            labels[row, : len(doc)] = torch.tensor(doc)
        return ids[:, :-1], labels[:, :-1]  # fla shifts the labels itself


def _lr(config: TrainConfig, step: int) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def train(spec: ZooModel, config: TrainConfig, work: Path, out: Path, progress=print) -> dict:
    """Train (or resume) one model up to config.steps and export it to out/<name>."""
    from ccq_eval.models.cpu_backend import install_cpu_backend

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
    while step < config.steps:
        ids, labels = batches.batch(step)
        for group in optimizer.param_groups:
            group["lr"] = _lr(config, step)
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        loss_value = float(loss.detach())
        log.write(json.dumps({"step": step, "loss": loss_value, "lr": _lr(config, step - 1)}) + "\n")
        if step % config.save_every == 0 or step == config.steps:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, state_file)
            log.flush()
            progress(f"{spec.name}: step {step}/{config.steps} loss {loss_value:.3f} "
                     f"({(time.time() - started) / 60:.1f} min this session)")
    log.close()
    return export(spec, model, step, loss_value, out)


def export(spec: ZooModel, model, steps: int, final_loss: float, out: Path) -> dict:
    """bf16 safetensors + tokenizer + a model card, loadable as zoo:<name>."""
    target = out / spec.name
    target.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(target, safe_serialization=True)
    byte_tokenizer().save_pretrained(target)
    weights = hashlib.sha256((target / "model.safetensors").read_bytes()).hexdigest()
    params = sum(p.numel() for p in model.parameters())
    card = {"name": spec.name, "architecture": spec.family, "parameters": params, "seed": spec.seed, "steps": steps,
            "final_loss_nats_per_byte": final_loss, "training_length": TRAIN_LENGTH, "sha256": weights,
            "corpus": "CC0 essays (ccq_eval/data/text/essays.txt) + synthetic S-NIAH-1 documents, byte-level"}
    (target / "MODEL_CARD.md").write_text(
        f"# {spec.name}\n\n" + "\n".join(f"- {k}: {v}" for k, v in card.items()) + "\n")
    return card

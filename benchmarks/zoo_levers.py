"""One lever of the zoo recipe, measured where retrieval starts: the answer loss (nats per answer byte) of a
model trained from scratch on one kind of short document, beside its chance level. The zoo's recurrent models
sit at chance on the lookup stage (a needle and its question); a lever that works brings the answer loss well
below it within a few hundred steps. One core, resumable nothing: a measurement, not a build.

    python benchmarks/zoo_levers.py --family gla --data lookup --steps 300 [--width '{"num_heads": 1}']
    python benchmarks/zoo_levers.py --family gla --data pairs --steps 600

Documents (byte tokenizer, as the zoo):
  lookup  the zoo's lookup stage: RULER's needle, then its question; the answer is the 7-digit value + "."
          (chance 2.015: the "." is free, the 7 digits are not)
  pairs   many key-value lines "KEY: VALUE" (RULER's adjective-noun keys, 7-digit values), then some keys again,
          "KEY: " -> VALUE: the value right after its key in both places (MQAR's layout, Zoology), so a
          recurrent model can match the key's last bytes instead of carrying a 40-byte key across the question

Prints the answer loss every 50 steps and the mean of the last 50.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CHANCE = {"lookup": 7 * 2.302585 / 8, "pairs": 7 * 2.302585 / 8}


def pairs_doc(batches, rng: random.Random, pairs: int = 6, queries: int = 3) -> tuple[list[int], list[int]]:
    """(tokens, answer mask): pairs "KEY: VALUE" lines, then queries of some of those keys with their values."""
    from ccq_eval.suites.sniah import data as sniah

    table = [(sniah.random_key(rng), sniah.random_value("numbers", rng)) for _ in range(pairs)]
    tokenizer = batches.tokenizer
    ids, mask = [tokenizer.bos_token_id], [0]
    for key, value in table:
        line = tokenizer(f"{key}: {value}\n", add_special_tokens=False)["input_ids"]
        ids += line
        mask += [0] * len(line)
    for key, value in rng.sample(table, queries):
        asked = tokenizer(f"{key}: ", add_special_tokens=False)["input_ids"]
        answer = tokenizer(f"{value}.", add_special_tokens=False)["input_ids"]
        ids += asked + answer
        mask += [0] * len(asked) + [1] * len(answer)
    return ids, mask


def batch(batches, data: str, step: int, size: int, answer_weight: float):
    from ccq_eval.zoo_build import LEVERS_DATA_ORDER

    rng = random.Random(f"{LEVERS_DATA_ORDER}-{step}")  # the GDN pair of the zoo trains on this order
    docs = []
    for _ in range(size):
        if data == "lookup":
            doc, answer = batches.lookup_doc(rng)
            docs.append((doc, [0] * (len(doc) - answer) + [1] * answer))
        else:
            docs.append(pairs_doc(batches, rng))
    width = max(len(d) for d, _ in docs)
    ids = torch.full((size, width), batches.tokenizer.pad_token_id)
    targets = torch.full_like(ids, -100)
    weights = torch.zeros(ids.shape)
    for row, (doc, mask) in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc)
        targets[row, : len(doc)] = torch.tensor(doc)
        weights[row, : len(doc)] = torch.tensor([answer_weight if m else 1.0 for m in mask])
    return ids[:, :-1], targets[:, 1:], weights[:, 1:]


def main(argv=None) -> int:
    from ccq_eval import zoo_build as zb
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="gla")
    parser.add_argument("--data", choices=("lookup", "pairs"), default="lookup")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=zb.TrainConfig.lr)
    parser.add_argument("--width", default="{}", help="JSON overrides of the zoo's model width (zoo_build.WIDTH)")
    parser.add_argument("--seed", type=int, default=0, help="the model's initialisation (the data order is fixed)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    install_cpu_backend()
    zb.WIDTH = {**zb.WIDTH, **json.loads(args.width)}
    config = zb.TrainConfig(steps=args.steps, lookup_steps=args.steps, lr=args.lr)
    model = zb.build_model(zb.ZooModel("lever", args.family, args.seed)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    batches, losses, started = zb.Batches(config), [], time.time()
    print(f"{args.family} {args.data} width {zb.WIDTH} lr {args.lr}: chance {CHANCE[args.data]:.3f}", flush=True)
    for step in range(args.steps):
        ids, targets, weights = batch(batches, args.data, step, args.batch, config.answer_weight)
        for group in optimizer.param_groups:
            group["lr"] = zb._lr(config, step)
        logits = model(input_ids=ids).logits
        loss = zb.weighted_loss(logits, targets, weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(zb.answer_loss(logits.detach(), targets, weights))
        if (step + 1) % 50 == 0:
            print(f"step {step + 1}: answer loss {statistics.fmean(losses[-50:]):.3f} "
                  f"({time.time() - started:.0f} s)", flush=True)
    print(f"RESULT family={args.family} data={args.data} width={json.dumps(json.loads(args.width))} lr={args.lr} seed={args.seed} "
          f"steps={args.steps} answer_loss_last50={statistics.fmean(losses[-50:]):.3f} chance={CHANCE[args.data]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

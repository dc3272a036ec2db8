"""`ccq-eval zoo build`: the resumable trainer of the shipped tiny zoo, on CPU."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import MAX_SAMPLES, number
from ccq_eval.errors import BadInput

NAME = "zoo"


def add(subparsers) -> None:
    zoo = subparsers.add_parser(NAME, help="train the tiny model zoo on CPU (resumable)")
    zoo.add_argument("action", choices=("build",))
    zoo.add_argument("--steps", type=number(int, 1, MAX_SAMPLES, "training steps"),
                     help="training steps per model (default: each model's shipped recipe)")
    zoo.add_argument("--threads", type=number(int, 1, 1024, "torch CPU threads"),
                     help="torch CPU threads (default: torch's; run two builds with 1 each on 2 cores)")
    zoo.add_argument("--models", help="comma list of zoo names (default: all of them)")
    zoo.add_argument("--work", default="results/zoo-work", help="checkpoints and loss logs (resumed from)")
    zoo.add_argument("--out", help="where the exported models go (default: ccq_eval/zoo/ in the package)")


def handle(args) -> int:
    from ccq_eval import zoo_build
    from ccq_eval.models.loading import zoo_dir

    names = args.models.split(",") if args.models else list(zoo_build.ZOO)
    unknown = [n for n in names if n not in zoo_build.ZOO]
    if unknown:
        raise BadInput(f"--models: unknown {', '.join(unknown)}; available: {', '.join(zoo_build.ZOO)}")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = Path(args.out) if args.out else zoo_dir()
    for name in names:
        spec = zoo_build.ZOO[name]
        card = zoo_build.train(spec, spec.recipe(args.steps), Path(args.work), out)
        print(f"{name}: {card['steps']} steps, final loss {card['final_loss_nats_per_byte']:.3f} -> {out / name}")
    return 0

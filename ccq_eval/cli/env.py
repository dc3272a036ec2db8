"""`ccq-eval env`: the machine record every run stores (versions, device, kernel path per family, threads,
cache and store locations), as text or JSON."""

from __future__ import annotations

from ccq_eval.cli.common import add_store
from ccq_eval.errors import BadInput

NAME = "env"


def add(subparsers) -> None:
    env = subparsers.add_parser(NAME, help="versions, device, kernel path per family, threads, cache and store "
                                           "locations (what every run records)")
    env.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda[:N]")
    add_store(env)
    env.add_argument("--json", action="store_true", help="print the record as JSON")
    env.add_argument("--kernels", choices=("auto", "own", "reference"), default="auto",
                     help="auto (default): check each own kernel against its reference on this device at the 1.3B "
                          "heads and show its path; own or reference: what a run with that flag would use")


def _device(name: str) -> str:
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if name == "auto" else name
    try:
        torch.device(device)
    except RuntimeError as exc:
        raise BadInput(f"--device {name!r}: not a device ({exc}); use auto, cpu or cuda[:N]") from None
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {name!r}: this torch sees no CUDA device; use --device cpu")
    return device


def _check_kernels(device: str) -> None:
    """The own kernels checked here as a run would check them (nothing to check without fla)."""
    try:
        import fla  # noqa: F401
    except ImportError:
        return
    from ccq_eval.ops.checks import check_all

    check_all(device)


def handle(args) -> int:
    import json

    import torch

    from ccq_eval import machine

    device = _device(args.device)
    threads, why = machine.choose_threads(None)  # what a run started now would use
    torch.set_num_threads(threads)
    from ccq_eval.ops import trust

    trust.set_mode(args.kernels)
    _check_kernels(device)
    record = machine.record(device, args.store, why)
    print(json.dumps(record, indent=2) if args.json else machine.describe(record))
    return 0

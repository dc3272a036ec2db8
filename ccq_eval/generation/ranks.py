"""A generating unit's requests shared across data-parallel ranks (`accelerate launch` / torchrun): each rank runs every
world-size-th request of the longest-first order (so each rank's share is longest first too, and the shares are of
like length), and rank 0 gathers the results back into the requests' order; it alone writes the store. ``Ranks`` is
this process's place among them and the collectives lm-eval's evaluator asks for.

The launcher's environment is checked before anything loads (``launch``: integers, ``0 <= RANK < WORLD_SIZE``, the
rendezvous address for more than one process), and the ranks meet within a stated time (``--rendezvous-timeout``):
each checks in under its rank, so a rank that never comes is named, not waited for in silence."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Sequence

from ccq_eval.errors import BadInput

DEFAULT_RENDEZVOUS_MINUTES = 5.0
LAUNCHERS = "launch with torchrun or accelerate launch, or unset it for one process"


class LaunchError(BadInput):
    """A launch environment ccq-eval cannot run under, or ranks that never met; the message names the variable or the
    ranks."""


@dataclass(frozen=True)
class Launch:
    """What the launcher's environment says: this process's rank, the world size, its local rank (its GPU), and where
    the ranks meet (more than one process)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    address: str | None = None
    port: int | None = None


def _integer(environ, name: str, low: int, high: int | None, why: str) -> int:
    text = environ[name]
    if not re.fullmatch(r"-?[0-9]+", text.strip()):
        raise LaunchError(f"{name}={text!r}: not an integer; {LAUNCHERS}")
    value = int(text)
    if value < low or (high is not None and value > high):
        raise LaunchError(f"{name}={text!r}: {why}; {LAUNCHERS}")
    return value


def launch(environ=None) -> Launch:
    """The launch environment, checked: WORLD_SIZE, RANK, LOCAL_RANK integers with 0 <= RANK < WORLD_SIZE and
    LOCAL_RANK >= 0; with more than one process, MASTER_ADDR and MASTER_PORT set. A fault is one line naming the
    variable (LaunchError)."""
    environ = os.environ if environ is None else environ
    if "WORLD_SIZE" not in environ:
        return Launch()
    world = _integer(environ, "WORLD_SIZE", 1, None, "the number of processes must be at least 1")
    if world > 1 and "RANK" not in environ:
        raise LaunchError(f"RANK is not set under WORLD_SIZE={world}; {LAUNCHERS}")
    rank = _integer(environ, "RANK", 0, world - 1, f"must be in [0, {world - 1}] under WORLD_SIZE={world}") \
        if "RANK" in environ else 0
    local = _integer(environ, "LOCAL_RANK", 0, None, "must be at least 0") if "LOCAL_RANK" in environ else rank
    if world == 1:
        return Launch(rank, world, local)
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not environ.get(name, "").strip():
            raise LaunchError(f"{name} is not set under WORLD_SIZE={world}: the ranks have nowhere to meet; {LAUNCHERS}")
    port = _integer(environ, "MASTER_PORT", 1, 65535, "not a TCP port (1-65535)")
    return Launch(rank, world, local, environ["MASTER_ADDR"].strip(), port)


def _meet(found: Launch, timeout: timedelta):
    """The ranks' store, once every rank has checked in under its rank; LaunchError naming the ranks that did not
    come within ``timeout``. The store is made as torch's env:// rendezvous makes it (a client of torchrun's agent
    store where it offers one), without waiting for the other ranks at its creation, so that the wait is ours."""
    import torch.distributed as dist

    where = f"{found.address}:{found.port}"
    try:
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            store = dist.PrefixStore(f"/worker/attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}",
                                     dist.TCPStore(found.address, found.port, found.world_size, False, timeout))
        else:
            store = dist.TCPStore(found.address, found.port, found.world_size, found.rank == 0, timeout,
                                  wait_for_workers=False, multi_tenant=True)
    except (RuntimeError, OSError) as exc:  # torch's DistNetworkError / DistStoreError derive from RuntimeError
        if found.rank == 0:
            raise LaunchError(f"rank 0 could not open the rendezvous at {where} (MASTER_ADDR:MASTER_PORT): "
                              f"{str(exc).splitlines()[0][:160]}") from None
        raise LaunchError(f"rank 0 never came: no rendezvous at {where} (MASTER_ADDR:MASTER_PORT) within "
                          f"{timeout.total_seconds() / 60:g} min (--rendezvous-timeout)") from None
    joined = dist.PrefixStore("ccq-eval/joined", store)
    joined.set(str(found.rank), "1")
    deadline = time.monotonic() + timeout.total_seconds()
    while missing := [r for r in range(found.world_size) if not joined.check([str(r)])]:
        if time.monotonic() > deadline:
            raise LaunchError(f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of "
                              f"{found.world_size} never came to the rendezvous at {where} within "
                              f"{timeout.total_seconds() / 60:g} min (--rendezvous-timeout); nothing was written")
        time.sleep(0.05)
    return store


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0  # this process's place on its machine (its GPU)

    @classmethod
    def from_environment(cls, minutes: float = DEFAULT_RENDEZVOUS_MINUTES, environ=None) -> "Ranks":
        """This process's place under `accelerate launch` / torchrun (their environment, checked), the process group
        initialised (gloo on CPU, nccl on CUDA) once every rank has come, within ``minutes``; rank 0 of 1 for a
        single process."""
        found = launch(environ)
        if found.world_size == 1:
            return cls()
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            timeout = timedelta(minutes=minutes)
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", store=_meet(found, timeout),
                                    rank=found.rank, world_size=found.world_size, timeout=timeout)
        return cls(dist.get_rank(), dist.get_world_size(), found.local_rank)

    def gather(self, obj, dst: int = 0) -> list | None:
        """``obj`` from every rank, as a list on ``dst`` (None elsewhere)."""
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def all_gather(self, tensor):
        """Every rank's ``tensor``, concatenated (a scalar as one element, as accelerate's gather)."""
        if self.world_size == 1:
            return tensor
        import torch
        import torch.distributed as dist

        tensor = tensor.reshape(1) if tensor.dim() == 0 else tensor
        parts = [torch.zeros_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    def barrier(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist

            dist.barrier()


def longest_first(requests: Sequence) -> list[int]:
    """Request indices, longest prompt first (ties in the requests' order): the order the engine is fed."""
    return sorted(range(len(requests)), key=lambda i: -len(requests[i].prompt))


def across_ranks(requests: Sequence, run: Callable[[list], list], ranks: Ranks = Ranks()) -> list | None:
    """``run`` (requests -> results, in their order) over this rank's share; every result in the requests' order on
    rank 0, None on the others."""
    mine = longest_first(requests)[ranks.rank::ranks.world_size]
    results = run([requests[i] for i in mine])
    parts = ranks.gather(list(zip(mine, results)))
    if parts is None:
        return None
    ordered = [None] * len(requests)
    for part in parts:
        for index, result in part:
            ordered[index] = result
    return ordered

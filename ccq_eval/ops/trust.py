"""ccq-eval's own kernels are trusted only once they agree with their reference on the device they run on.

The first time a process is about to use an own step (the in-place decoding steps of ops/<family>/fused_recurrent.py,
CCQ's fused step of ops/ccq/step.py) for a key (kernel, form, dtype, head shape, options, device), it runs
it beside its reference on a few rows of the call's own inputs: the per-head block counts are the real ones. The own
step must write its state into the tensor it was given and agree with the reference within ``TOLERANCE`` (relative
to the reference's largest value; docs/gpu.md states them). A disagreement, or a compile or launch error, turns that
kernel off for the process: the reference path runs instead (fla's function and the copy home, or CCQ's torch step),
said once in one line naming the kernel, the shape and the difference. ``verdicts()`` is what the run's provenance
records (each unit's settings, ``kernels``), and ``ccq-eval env`` shows it after checking each kernel itself.

``--kernels own`` uses the own kernels unchecked; ``--kernels reference`` never uses them (``set_mode``)."""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

MODES = ("auto", "own", "reference")
# the largest difference, relative to the reference's largest value, an own kernel may show against its reference:
# float32 arithmetic in another order (state and float32 outputs), and one rounding of a bfloat16 or float16 output
# (2^-8) with as much again for sums taken in another order
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -9}
TRIAL_ROWS = 4  # a few rows: the kernels' per-row work does not depend on the batch

_MODE = "auto"
_VERDICTS: dict[tuple, "Verdict"] = {}
_DECLINED: set[tuple] = set()  # keys of calls the own step does not take (float64, gradients): fla's path, unchecked


@dataclass(frozen=True)
class Verdict:
    """Which path one own kernel takes in this process, and why."""

    kernel: str  # "GLA step", "gated delta-rule step", "CCQ step"
    form: str  # "Triton", "Triton (interpreter)", "torch"
    shape: str  # "H=4 K=256 V=512 bfloat16 cuda"
    path: str  # "own" or "reference"
    why: str
    difference: float | None = None

    @property
    def name(self) -> str:
        return f"{self.kernel} ({self.form}) {self.shape}"

    def line(self) -> str:
        return f"{self.name}: {self.path} ({self.why})"


class NotInPlace(AssertionError):
    """An own step returned or wrote its state somewhere other than the tensor it was given."""


class Declined(Exception):
    """The own step does not take calls like this one (its function goes on to fla's): nothing to check."""


def set_mode(mode: str) -> None:
    """``auto`` (checked on first use), ``own`` (unchecked), ``reference`` (never the own kernels)."""
    global _MODE
    if mode not in MODES:
        raise ValueError(f"kernels mode must be one of {MODES}, got {mode!r}")
    _MODE = mode


def mode() -> str:
    return _MODE


@contextlib.contextmanager
def forced(chosen: str):
    """Inside the block the mode is ``chosen`` (a measurement of the kernels themselves), then what it was."""
    saved = _MODE
    set_mode(chosen)
    try:
        yield
    finally:
        set_mode(saved)


def verdicts() -> dict[str, str]:
    """Each own kernel met in this process -> its path and why (what a run's provenance records)."""
    return {v.name: f"{v.path} ({v.why})" for v in _VERDICTS.values()}


def latest(kernel: str) -> Verdict | None:
    """The verdict reached last for this kernel (any shape)."""
    found = [v for v in _VERDICTS.values() if v.kernel == kernel]
    return found[-1] if found else None


def forget() -> None:
    """Every verdict dropped (tests; a check that measures one configuration after another)."""
    _VERDICTS.clear()
    _DECLINED.clear()


def form_of(x: torch.Tensor, triton: bool) -> str:
    if not triton:
        return "torch"
    return "Triton" if x.device.type != "cpu" else "Triton (interpreter)"


def relative_difference(got: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest |got - expected| over the largest |expected| (NaN anywhere counts as infinitely far)."""
    got, expected = got.double(), expected.double()
    if got.shape != expected.shape:
        return float("inf")
    difference = float((got - expected).abs().max()) if got.numel() else 0.0
    scale = float(expected.abs().max()) if expected.numel() else 0.0
    value = difference / max(scale, 1e-30)
    return float("inf") if value != value else value


def _describe(x: torch.Tensor, shape: dict) -> str:
    """"H=4 K=256 HV=4 V=512 bfloat16 cuda": the heads, dtype and device a verdict holds for."""
    return " ".join(f"{k}={v}" for k, v in shape.items()) + f" {str(x.dtype).removeprefix('torch.')} {x.device.type}"


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _decide(key: tuple, kernel: str, form: str, shape: str, dtype: torch.dtype, trial: Callable[[], float]) -> Verdict:
    bound = TOLERANCE.get(dtype, TOLERANCE[torch.float32])
    try:
        with torch.no_grad():
            difference = trial()
    except Declined:
        raise
    except Exception as exc:  # noqa: BLE001 - a kernel that fails to compile or launch is off, not fatal
        first = (str(exc).splitlines() or [""])[0][:160]
        verdict = Verdict(kernel, form, shape, "reference", f"raised {type(exc).__name__}: {first}")
    else:
        if difference <= bound:
            verdict = Verdict(kernel, form, shape, "own", f"agrees: {difference:.2g} <= {bound:.2g}", difference)
        else:
            verdict = Verdict(kernel, form, shape, "reference", f"differs from its reference by {difference:.3g} "
                                                                f"> {bound:.2g}", difference)
    _VERDICTS[key] = verdict
    if verdict.path == "reference":
        warnings.warn(f"own kernel off, its reference runs instead: {verdict.line()}", stacklevel=4)
    return verdict


def trusted(kernel: str, x: torch.Tensor, triton: bool, shape: dict, options: dict,
            trial: Callable[[], float]) -> bool:
    """Whether the own ``kernel`` runs for a call like this one: ``x`` one of its inputs (its dtype and device),
    ``triton`` whether its Triton form runs (else its torch form),
    ``shape`` and ``options`` what else keys it; ``trial()`` runs it beside its reference on a few rows and returns
    the largest relative difference (raising where it is not in place)."""
    if _MODE == "own":
        return True
    # every layer asks at every step: the key is plain values, its text written only when a verdict is
    key = (kernel, triton, x.device.type, x.dtype, tuple(shape.items()), tuple(sorted(options.items())),
           torch.is_grad_enabled())
    if key in _DECLINED:
        return False
    if _MODE == "reference":
        if key not in _VERDICTS:
            _VERDICTS[key] = Verdict(kernel, form_of(x, triton), _describe(x, shape), "reference",
                                     "--kernels reference")
        return False
    known = _VERDICTS.get(key)
    if known is None:
        if _capturing():  # a trial reads values back; a graph captured now takes the reference (checked first)
            return False
        try:
            known = _decide(key, kernel, form_of(x, triton), _describe(x, shape), x.dtype, trial)
        except Declined:
            _DECLINED.add(key)
            return False
    return known.path == "own"


def leading_rows(tensors: dict, rows: int) -> dict:
    """The first ``rows`` rows of each tensor, as new tensors (a trial never touches the call's own)."""
    return {name: value[:rows].clone() for name, value in tensors.items()}


def check_in_place(given: torch.Tensor, returned: torch.Tensor) -> None:
    if returned is not given and (not isinstance(returned, torch.Tensor) or returned.data_ptr() != given.data_ptr()):
        raise NotInPlace("the new state is not the tensor passed in")

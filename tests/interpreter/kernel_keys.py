"""What makes a GPU compile or tune again, recorded under Triton's interpreter: for every kernel launch, the key
Triton's JIT specialises a compiled kernel on, and for every autotuned kernel the key its autotuner tunes per.

- JIT: each non-constexpr integer argument by whether it is 1 and whether it divides by 16 (unless the kernel names it
  in ``do_not_specialize``), each tensor by its dtype and whether its address is 16-byte aligned, each constexpr by
  its value (Triton's ``specialize_impl``);
- autotuner: the values of the kernel's ``key`` arguments and the dtypes of its tensor arguments
  (``Autotuner.run``; fla's ``CachedAutotuner`` keys the same)."""

from __future__ import annotations

import contextlib
import inspect


def _jit_key(function, args, kwargs) -> tuple:
    parameters = inspect.signature(function.fn).parameters
    names = list(parameters)
    bound = {**dict(zip(names, args)), **kwargs}
    unspecialised = set(function.kwargs.get("do_not_specialize") or ())
    key = []
    for position, name in enumerate(names):
        if name not in bound:
            continue
        value = bound[name]
        constexpr = "constexpr" in str(parameters[name].annotation)
        if constexpr or value is None or isinstance(value, (bool, str)):
            key.append((name, value if not callable(value) else getattr(value, "__name__", "fn")))
        elif isinstance(value, int):
            key.append((name, "int") if name in unspecialised or position in unspecialised
                       else (name, value == 1, value % 16 == 0))
        elif hasattr(value, "data_ptr"):
            key.append((name, str(value.dtype), value.data_ptr() % 16 == 0))
        else:
            key.append((name, type(value).__name__))
    return (function.fn.__name__, tuple(key))


def _tuning_key(tuner, args, kwargs) -> tuple:
    named = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in named.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named] + [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    name = getattr(tuner.fn, "__name__", None) or getattr(getattr(tuner.fn, "fn", None), "__name__", "?")
    return (name, tuple(key))


@contextlib.contextmanager
def recorded_kernel_keys():
    """Yields (JIT keys, autotuning keys): two sets that fill with every key met inside the block."""
    from triton.runtime import autotuner, interpreter

    jit, tuning = set(), set()
    launch, tune = interpreter.InterpretedFunction.run, autotuner.Autotuner.run

    def run(self, *args, **kwargs):
        jit.add(_jit_key(self, args, {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}))
        return launch(self, *args, **kwargs)

    def tuned(self, *args, **kwargs):
        if len(self.configs) > 1:
            tuning.add(_tuning_key(self, args, kwargs))
        return tune(self, *args, **kwargs)

    interpreter.InterpretedFunction.run, autotuner.Autotuner.run = run, tuned
    try:
        yield jit, tuning
    finally:
        interpreter.InterpretedFunction.run, autotuner.Autotuner.run = launch, tune

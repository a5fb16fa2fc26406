"""The drivers' compiled programs, in one cache: a program is compiled once per process for
what it is built from (the agent's structure, the environment, the driver settings, its
name) and the shapes of its arguments, whichever loop asks for it
(:class:`jaxrl.training.jax_loop.JaxLoop`'s period, initialization and evaluation programs,
:func:`jaxrl.training.sharding.train_sharded`'s, the host driver's initialization, acting,
learning and evaluation)."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any

import jax

# Compiled programs of the drivers, by what they are compiled from and for (the least
# recently used beyond the limit dropped): a sweep's groups, a tuning study's batches, the
# periods of a run and the runs of a process compile each program once.
_PROGRAMS: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_PROGRAMS_KEPT = 32


def compiled(key: Any, build: Callable[[], Any], args: Any = None) -> tuple[Callable, float]:
    """``(program, seconds)``: the program ``key`` names (``build()``, a jitted function),
    compiled for arguments shaped as ``args``: from the cache where it was compiled before
    (0 seconds), else lowered and compiled now (the seconds that took). ``key`` must name
    everything the program is built from but its arguments. With ``args`` None, the jitted
    function itself (compiled by ``jax.jit`` at its first call for each shape: on several
    processes' devices, each device its block)."""
    if args is None:
        full = key
    else:
        leaves, tree = jax.tree_util.tree_flatten(args)
        full = (key, tree, tuple(jax.typeof(x) for x in leaves))  # shape, dtype, weak type
    if full in _PROGRAMS:
        _PROGRAMS.move_to_end(full)
        return _PROGRAMS[full], 0.0
    start = time.perf_counter()
    program = build() if args is None else build().lower(*args).compile()
    seconds = time.perf_counter() - start
    _PROGRAMS[full] = program
    while len(_PROGRAMS) > _PROGRAMS_KEPT:
        _PROGRAMS.popitem(last=False)
    return program, seconds


def clear() -> None:
    """Forget every program the cache holds: the next request builds and compiles it again
    (or loads it from JAX's persistent compilation cache). For a change to how XLA compiles
    (``jax_disable_most_optimizations``, compile options), which the cache's keys do not
    name (nor do JAX's in-memory caches: ``jax.clear_caches()``)."""
    _PROGRAMS.clear()


class Same:
    """A part of a program's key that stands for ``value`` by identity (an environment
    object and its parameters need not hash); the key keeps it alive."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

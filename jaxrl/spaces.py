"""Observation and action spaces from gymnasium or gymnax, reduced to what agents need."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np

SUPPORTED_SPACES = "Box (continuous actions/observations) and Discrete (actions)"


@dataclasses.dataclass(frozen=True)
class SpaceSpec:
    """A space described by plain data (hashable, usable as static jit data).

    Attributes:
      kind: "box" or "discrete".
      shape: shape of one element (``()`` for discrete).
      low: lower bounds of a Box as nested tuples (``None`` for discrete).
      high: upper bounds of a Box as nested tuples (``None`` for discrete).
      n: number of actions of a Discrete space (``None`` for a Box).
    """

    kind: Literal["box", "discrete"]
    shape: tuple[int, ...]
    low: tuple | None = None
    high: tuple | None = None
    n: int | None = None

    def describe(self) -> str:
        """``"Discrete(2)"`` or ``"Box(shape (3,))"``, as a user wrote the space."""
        return f"Discrete({self.n})" if self.kind == "discrete" else f"Box(shape {self.shape})"

    @property
    def low_array(self) -> np.ndarray:
        return np.asarray(self.low, np.float32)

    @property
    def high_array(self) -> np.ndarray:
        return np.asarray(self.high, np.float32)


def _class_name(space: Any) -> str:
    return type(space).__name__


def _tuples(x: Any) -> Any:
    """Nested lists as nested tuples (hashable)."""
    return tuple(map(_tuples, x)) if isinstance(x, list) else x


def describe_space(space: Any, name: str = "space") -> SpaceSpec:
    """Describe a gymnasium or gymnax ``Box``/``Discrete`` space (or pass a SpaceSpec through).

    Raises:
      TypeError: for any other space (MultiDiscrete, Dict, Tuple, ...), naming ``name`` and
        listing what is supported.
    """
    if isinstance(space, SpaceSpec):
        return space
    kind = _class_name(space)
    if kind == "Box":
        shape = tuple(int(d) for d in space.shape)
        low = np.broadcast_to(np.asarray(space.low, np.float32), shape)
        high = np.broadcast_to(np.asarray(space.high, np.float32), shape)
        return SpaceSpec("box", shape, low=_tuples(low.tolist()), high=_tuples(high.tolist()))
    if kind == "Discrete":
        start = int(getattr(space, "start", 0))
        if start != 0:
            raise ValueError(f"{name}: Discrete spaces must start at 0, got start={start}")
        return SpaceSpec("discrete", (), n=int(space.n))
    raise TypeError(f"{name} of type {kind} is not supported; supported: {SUPPORTED_SPACES}")

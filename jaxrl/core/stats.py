"""Summary statistics of per-step metrics (Tianshou's ``SequenceSummaryStats``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

Array = jax.Array


class SummaryStats(struct.PyTreeNode):
    """Mean, population standard deviation, maximum and minimum of a sequence.

    A pytree of scalars (or of arrays, when built over the leading axis of a multi-dimensional
    input), so it can be returned from ``jit`` and stacked by ``vmap``/``scan``.
    """

    mean: Array
    std: Array
    max: Array
    min: Array

    @classmethod
    def from_sequence(cls, values: Array) -> SummaryStats:
        """Summarize ``values`` of shape ``[K, ...]`` over the leading axis (``K >= 1``)."""
        values = jnp.asarray(values)
        if values.ndim == 0 or values.shape[0] == 0:
            raise ValueError(
                f"values must be a non-empty sequence (shape [K, ...], K >= 1), got {values.shape}"
            )
        return cls(
            mean=jnp.mean(values, axis=0),
            std=jnp.std(values, axis=0),
            max=jnp.max(values, axis=0),
            min=jnp.min(values, axis=0),
        )

    def to_dict(self, prefix: str = "") -> dict[str, Array]:
        """``{prefix/mean: ..., prefix/std: ..., ...}`` for logging."""
        sep = "/" if prefix else ""
        return {f"{prefix}{sep}{k}": getattr(self, k) for k in ("mean", "std", "max", "min")}

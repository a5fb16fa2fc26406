"""Running statistics for observation normalization and return scaling."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Array = jax.Array

# Tianshou's observation normalization (``VectorEnvNormObs``): float32 epsilon, clip to +-10.
OBS_EPS = float(np.finfo(np.float32).eps)
OBS_CLIP = 10.0


class RunningMeanStd(struct.PyTreeNode):
    """Running mean and (population) variance over a stream of batches, as a pytree.

    Batches are merged with the parallel algorithm of Chan et al. (Tianshou's
    ``RunningMeanStd``): with ``delta = batch_mean - mean`` and ``total = count + n``,

    .. math::

        \\mathrm{mean}' = \\mathrm{mean} + \\delta\\, n / \\mathrm{total},\\qquad
        \\mathrm{var}' = (\\mathrm{var}\\,\\mathrm{count} + \\mathrm{var}_b\\, n
        + \\delta^2\\, \\mathrm{count}\\, n / \\mathrm{total}) / \\mathrm{total}

    Initial state: mean 0, var 1, count 0 (so the first batch's statistics replace it).

    Attributes:
      mean: shape ``S`` (the shape of one sample).
      var: shape ``S``.
      count: scalar float, the number of samples merged so far.
    """

    mean: Array
    var: Array
    count: Array

    @classmethod
    def create(cls, shape: tuple[int, ...] = (), dtype: jnp.dtype = jnp.float32) -> RunningMeanStd:
        """Fresh statistics for samples of shape ``shape``."""
        return cls(
            mean=jnp.zeros(shape, dtype),
            var=jnp.ones(shape, dtype),
            count=jnp.zeros((), dtype),
        )

    def update(self, batch: Array) -> RunningMeanStd:
        """Merge ``batch`` of shape ``[B, *S]`` (any number of leading batch axes ``B``).

        A batch with zero samples leaves the statistics unchanged.
        """
        batch = jnp.asarray(batch, self.mean.dtype)
        sample_ndim = self.mean.ndim
        if batch.ndim < sample_ndim or batch.shape[batch.ndim - sample_ndim :] != self.mean.shape:
            raise ValueError(
                f"batch must have shape [..., {', '.join(map(str, self.mean.shape))}] "
                f"(trailing axes equal to the statistics' shape), got {batch.shape}"
            )
        axes = tuple(range(batch.ndim - sample_ndim))
        num_samples = math.prod(batch.shape[: len(axes)])
        if num_samples == 0:
            return self
        batch_count = jnp.asarray(num_samples, self.count.dtype)
        batch_mean = jnp.mean(batch, axis=axes)
        batch_var = jnp.var(batch, axis=axes)
        total = self.count + batch_count
        delta = batch_mean - self.mean
        new_mean = self.mean + delta * batch_count / total
        m2 = (
            self.var * self.count
            + batch_var * batch_count
            + delta**2 * self.count * batch_count / total
        )
        return RunningMeanStd(mean=new_mean, var=m2 / total, count=total)

    @property
    def std(self) -> Array:
        """``sqrt(var)``."""
        return jnp.sqrt(self.var)

    def normalize(self, x: Array, epsilon: float = 1e-8, clip: float | None = None) -> Array:
        """``(x - mean) / sqrt(var + epsilon)``, optionally clipped to ``[-clip, clip]``."""
        normalized = (x - self.mean) / jnp.sqrt(self.var + epsilon)
        return normalized if clip is None else jnp.clip(normalized, -clip, clip)


def normalize_observations(
    stats: RunningMeanStd | None, obs: Array, update: bool
) -> tuple[RunningMeanStd | None, Array]:
    """Tianshou's observation normalization as a pure function: ``(stats', normalized)``.

    With ``update`` the batch ``obs [..., *obs_shape]`` is merged into ``stats`` first
    (training observations); without it the statistics are frozen (evaluation, and final
    observations that the statistics have already seen). Normalized observations are
    ``clip((obs - mean) / sqrt(var + eps), -10, 10)`` in float32, ``eps`` float32's
    epsilon. ``stats=None`` means no normalization: ``obs`` is returned as float32.
    """
    obs = jnp.asarray(obs, jnp.float32)
    if stats is None:
        return None, obs
    if update:
        stats = stats.update(obs)
    return stats, stats.normalize(obs, OBS_EPS, OBS_CLIP)

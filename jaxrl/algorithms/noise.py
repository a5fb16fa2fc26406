"""Exploration noise for deterministic policies (DDPG): small frozen pytrees whose parameters
are leaves (vmappable); Ornstein-Uhlenbeck noise carries its state in the agent's state."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl.algorithms._common import check_bounds, hyperparameter

Array = jax.Array


class GaussianNoise(struct.PyTreeNode):
    """Independent Gaussian noise ``N(mu, sigma^2)`` per action component (stateless).

    Tianshou's ``GaussianNoise``; its noise is added in ``[-1, 1]``-action space here, so on an
    action space ``[-h, h]`` it moves the environment action by ``h * sigma``.
    """

    sigma: float | Array = hyperparameter(1.0, "standard deviation", low=0.0)
    mu: float | Array = hyperparameter(0.0, "mean", low=-math.inf)

    def __post_init__(self) -> None:
        check_bounds(self)

    def sample(self, key: Array, noise_state: Array, shape: tuple[int, ...]) -> tuple[Array, Array]:
        """``(noise [shape], noise_state)``; the state is returned unchanged."""
        noise = self.mu + self.sigma * jax.random.normal(key, shape, jnp.float32)
        return noise, noise_state


class OUNoise(struct.PyTreeNode):
    """Ornstein-Uhlenbeck noise (Tianshou's ``OUNoise``), one process per action component.

    .. math::

        x \\leftarrow x + \\theta\\,dt\\,(\\mu - x) + \\sigma \\sqrt{dt}\\,\\epsilon,
        \\qquad \\epsilon \\sim N(0, 1)

    The new ``x`` is both the noise and the new state, which starts at 0. Its stationary
    variance is ``sigma^2 dt / (1 - (1 - theta dt)^2)`` and its lag-``k`` autocorrelation
    ``(1 - theta dt)^k``.
    """

    sigma: float | Array = hyperparameter(0.3, "scale of the random steps", low=0.0)
    theta: float | Array = hyperparameter(0.15, "rate of reversion to mu", low=0.0)
    dt: float | Array = hyperparameter(0.01, "time step", low=0.0, low_open=True)
    mu: float | Array = hyperparameter(0.0, "mean the process reverts to", low=-math.inf)

    def __post_init__(self) -> None:
        check_bounds(self)

    def sample(self, key: Array, noise_state: Array, shape: tuple[int, ...]) -> tuple[Array, Array]:
        """One OU step from ``noise_state`` (shape ``shape``): ``(x_new, x_new)``."""
        if tuple(noise_state.shape) != tuple(shape):
            raise ValueError(
                f"OU noise state has shape {tuple(noise_state.shape)} but the actions have shape "
                f"{tuple(shape)}; pass num_envs to DDPG.init or call DDPG.reset_noise(state, "
                f"{tuple(shape[:-1])})"
            )
        epsilon = jax.random.normal(key, shape, jnp.float32)
        x = (
            noise_state
            + self.theta * self.dt * (self.mu - noise_state)
            + self.sigma * jnp.sqrt(self.dt) * epsilon
        )
        x = x.astype(noise_state.dtype)
        return x, x


Noise = GaussianNoise | OUNoise

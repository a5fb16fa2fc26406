"""Flax networks with Tianshou's architecture: MLP bodies with orthogonal init.

Actors return distribution parameters (:class:`jaxrl.core.GaussianParams` or
:class:`jaxrl.core.CategoricalParams`) or, for DDPG, deterministic actions in ``[-1, 1]``.
Any ``flax.linen.Module`` with the same call signature can be passed to the algorithms in
their place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.core.distributions import CategoricalParams, GaussianParams

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
}


def check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")


def _dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(
        features,
        kernel_init=nn.initializers.orthogonal(gain),
        bias_init=nn.initializers.zeros,
    )


def _torch_default_dense(features: int, fan_in: int) -> nn.Dense:
    """``torch.nn.Linear``'s default init: kernel and bias uniform in +-1/sqrt(fan_in)
    (kaiming-uniform with a = sqrt(5)), which Tianshou's DDPG networks keep."""
    bound = 1.0 / float(fan_in) ** 0.5

    def bias_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return nn.Dense(
        features,
        kernel_init=nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform"),
        bias_init=bias_init,
    )


class MLP(nn.Module):
    """``len(hidden_sizes)`` dense layers, each followed by the activation (Tianshou's Net).

    ``init="orthogonal"`` (with ``gain``, zero biases; Tianshou's on-policy setting) or
    ``"torch"`` (PyTorch's default ``Linear`` init, as in Tianshou's DDPG).
    """

    hidden_sizes: Sequence[int]
    activation: str = "tanh"
    gain: float = 1.0
    init: str = "orthogonal"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            layer = (
                _torch_default_dense(size, x.shape[-1])
                if self.init == "torch"
                else _dense(size, self.gain)
            )
            x = act(layer(x))
        return x


class GaussianActor(nn.Module):
    """``obs [..., obs_dim] -> GaussianParams(mean [..., A], log_std [..., A])``.

    The mean is unbounded (bounding happens when mapping actions); the log-std is a
    state-independent parameter vector (Tianshou's ``ActorProb`` with ``unbounded=True``).
    """

    action_dim: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    gain: float = 1.0
    output_scale: float = 1.0
    log_std_init: float = 0.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> GaussianParams:
        features = MLP(self.hidden_sizes, self.activation, self.gain)(obs)
        mean = _dense(self.action_dim, self.gain * self.output_scale)(features)
        log_std = self.param(
            "log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,)
        )
        return GaussianParams(mean, jnp.broadcast_to(log_std, mean.shape))


class CategoricalActor(nn.Module):
    """``obs [..., obs_dim] -> CategoricalParams(logits [..., num_actions])``."""

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    gain: float = 1.0
    output_scale: float = 1.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> CategoricalParams:
        features = MLP(self.hidden_sizes, self.activation, self.gain)(obs)
        return CategoricalParams(_dense(self.num_actions, self.gain * self.output_scale)(features))


class ValueCritic(nn.Module):
    """``obs [..., obs_dim] -> V(s) [...]``."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    gain: float = 1.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        features = MLP(self.hidden_sizes, self.activation, self.gain)(obs)
        return _dense(1, self.gain)(features)[..., 0]


class DeterministicActor(nn.Module):
    """``obs [..., obs_dim] -> tanh(.) in [-1, 1]^A`` (DDPG's mu(s)); PyTorch default init."""

    action_dim: int
    hidden_sizes: Sequence[int] = (128, 128)
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        features = MLP(self.hidden_sizes, self.activation, init="torch")(obs)
        return jnp.tanh(_torch_default_dense(self.action_dim, features.shape[-1])(features))


class QCritic(nn.Module):
    """``(obs [..., obs_dim], action [..., A]) -> Q(s, a) [...]`` on the concatenation;
    PyTorch default init."""

    hidden_sizes: Sequence[int] = (128, 128)
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        features = MLP(self.hidden_sizes, self.activation, init="torch")(
            jnp.concatenate([obs, action], -1)
        )
        return _torch_default_dense(1, features.shape[-1])(features)[..., 0]

"""Flax networks with Tianshou's architecture: MLP bodies with orthogonal init.

Actors return distribution parameters (:class:`jaxrl.core.GaussianParams` or
:class:`jaxrl.core.CategoricalParams`) or, for DDPG, deterministic actions in ``[-1, 1]``;
:class:`Ensemble` stacks copies of a network (TD3's twin critics).
Any ``flax.linen.Module`` with the same call signature can be passed to the algorithms in
their place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxrl.core.distributions import CategoricalParams, GaussianParams

Activation = Literal["elu", "gelu", "relu", "silu", "tanh"]
"""The names of the hidden layers' activations (the keys of ``ACTIVATIONS``)."""

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
}


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _orthogonal(key: jax.Array, shape: tuple[int, ...], dtype: Any, scale: float) -> jax.Array:
    """One orthogonal matrix (see :func:`orthogonal`); jitted with static shape, dtype and
    scale so that JAX traces it once per layer shape: flax calls a layer's initializer again
    (under ``jax.eval_shape``) at every ``apply`` to check the parameter's shape, and an
    update applies the networks a dozen times."""

    @jax.custom_batching.custom_vmap
    def one(key: jax.Array) -> jax.Array:
        return nn.initializers.orthogonal(scale)(key, shape, dtype)

    @one.def_vmap
    def _one_at_a_time(axis_size: int, in_batched: list[bool], key: jax.Array):
        return jax.lax.map(one, key), True

    return one(key)


def orthogonal(scale: float = 1.0) -> Callable:
    """``flax.linen.initializers.orthogonal(scale)`` (QR of a Gaussian matrix), whose values
    it returns unchanged, but never batched when vmapped: a batch of keys is mapped one key
    at a time (``lax.map``).

    Why: jaxlib >= 0.10 splits a batched LAPACK QR over XLA's CPU thread pool and waits for
    the parts *on* a pool thread. When as many batched QRs run at once as the pool has
    threads (actor and critic layers initialized side by side, ``vmap`` over seeds, a 2-core
    machine), every thread waits for work that no thread is free to run: the process hangs.
    Initialization runs once per run, so doing it one seed at a time costs nothing.
    """

    def init(key: jax.Array, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
        return _orthogonal(key, tuple(shape), jnp.dtype(dtype), float(scale))

    return init


def _dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(features, kernel_init=orthogonal(gain), bias_init=nn.initializers.zeros)


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


class Ensemble(nn.Module):
    """``size`` independent copies of ``module`` applied to the same inputs, their outputs
    stacked on a new leading axis: twin critics ``Ensemble(QCritic(), 2)`` map ``(obs [B, ...],
    action [B, A])`` to ``Q [2, B]``. The copies' parameters are stacked too (leading axis
    ``size``, under ``"module"``) and initialized from different keys (``flax.linen.vmap``).

    Applied, the copies run as one batched network (``jax.vmap`` over the stacked
    parameters) on accelerators, and one after another on a CPU, where XLA's batched
    products of small matrices are slower than the plain ones: a twin critic's optimizer
    step cost 1.6x one critic's one after another against 2.0x batched (16 vmapped seeds,
    batch 256, [64, 64]; ``benchmarks/offpolicy_breakdown.py``). Both forms compute the same
    function; their float sums may differ in the last bits."""

    module: nn.Module
    size: int = 2

    @nn.compact
    def __call__(self, *inputs: jax.Array) -> jax.Array:
        if self.is_initializing():
            copies = nn.vmap(
                lambda module, *args: module(*args),
                variable_axes={"params": 0},
                split_rngs={"params": True},
                in_axes=None,
                out_axes=0,
                axis_size=self.size,
            )
            return copies(self.module, *inputs)
        apply = self.module.clone(parent=None).apply
        return jax.lax.platform_dependent(
            self.variables["params"]["module"],
            *inputs,
            cpu=functools.partial(apply_copies, apply, batched=False),
            default=functools.partial(apply_copies, apply, batched=True),
        )

    def member(self, variables: Any, index: int) -> Callable[..., jax.Array]:
        """Copy ``index`` alone as a function of the inputs, at the ensemble's ``variables``
        (``Q_1`` of twin critics costs one critic, not the pair)."""
        own = jax.tree_util.tree_map(lambda x: x[index], variables["params"]["module"])
        return functools.partial(self.module.clone(parent=None).apply, {"params": own})


def apply_copies(apply: Callable, stacked: Any, *inputs: jax.Array, batched: bool) -> jax.Array:
    """``[apply({"params": p_k}, *inputs) for k]`` stacked (leading axis ``K``), the copies'
    parameters ``p_k`` stacked in ``stacked`` (leading axis ``K``): one batched network
    (``jax.vmap``) or the copies one after another."""
    if batched:
        return jax.vmap(lambda own: apply({"params": own}, *inputs))(stacked)
    size = jax.tree_util.tree_leaves(stacked)[0].shape[0]
    own = [jax.tree_util.tree_map(lambda x, k=k: x[k], stacked) for k in range(size)]
    return jnp.stack([apply({"params": p}, *inputs) for p in own])


def stable_apply(module: nn.Module) -> Callable:
    """``module.apply``, one and the same function for equal modules.

    ``TrainState.apply_fn`` is a static (non-pytree) field, so it is part of jit's cache key
    and of the tree structure. A bound method compares equal only for the *same* module
    object, so each ``init`` would build a state that jit treats as new (a recompile) and
    that ``jax.tree.map`` refuses to pair with another state. Equal modules (flax modules
    hash and compare by their fields) share the first instance seen here instead.
    """
    try:
        return _first_equal_module(module).apply
    except TypeError:  # an unhashable user module: identity is all we have
        return module.apply


@functools.cache
def _first_equal_module(module: nn.Module) -> nn.Module:
    return module

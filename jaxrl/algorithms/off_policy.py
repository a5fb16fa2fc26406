"""Pieces shared by off-policy actor-critic algorithms with a deterministic actor.

:class:`jaxrl.DDPG` is built from them, and so is a sibling such as TD3 (``examples/td3.py``,
the worked example of adding an algorithm). Each is a small pure function on arrays, Flax
``TrainState`` s or pytrees:

- acting: :func:`add_exploration_noise` (``mu(s)`` plus exploration noise),
  :func:`uniform_actions` and :func:`warmup_actions` (random actions during a warm-up);
- the critic: :func:`check_batch`, :func:`bootstrap_observations`,
  :func:`nstep_critic_targets` (n-step TD targets from any bootstrap value ``Q'(s', .)``),
  :func:`critic_loss` and :func:`critic_step`;
- the actor: :func:`deterministic_policy_loss` and :func:`actor_step` (the deterministic
  policy gradient through :func:`q_function`, one critic of an ensemble);
- bookkeeping: :func:`with_scheduled_lr` and :func:`soft_update_targets` (a delayed step
  runs under :func:`jaxrl.core.apply_if`, as TD3's).

Shapes: ``B`` samples, n-step windows of ``n`` steps, ``A`` action components; an ensemble
of ``K`` critics (:class:`jaxrl.networks.Ensemble`) returns ``Q [K, B]`` where one critic
returns ``Q [B]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax.training.train_state import TrainState

from jaxrl.algorithms._common import (
    Schedule,
    guarded_gradient_step,
    scheduled_learning_rate,
    set_learning_rate,
)
from jaxrl.algorithms.noise import Noise
from jaxrl.algorithms.protocol import ActionSample
from jaxrl.core.polyak import soft_update
from jaxrl.core.returns import nstep_targets
from jaxrl.core.tree import all_finite_by_leaf
from jaxrl.replay import NStepBatch
from jaxrl.rollout import check_dtypes

Array = jax.Array
PyTree = Any
QFunction = Callable[[Array, Array], Array]

# ---------------------------------------------------------------------------------------------
# Acting
# ---------------------------------------------------------------------------------------------


def add_exploration_noise(
    noise: Noise | None,
    noise_state: Array,
    action: Array,
    key: Array,
    deterministic: bool | Array = False,
) -> tuple[Array, Array]:
    """``(action + eps, new noise state)`` with ``eps, state' = noise.sample(key, state)``.

    Args:
      noise: a :class:`jaxrl.GaussianNoise`, an :class:`jaxrl.OUNoise` or None (no noise).
      noise_state: ``[..., A]`` (OU's ``x``; Gaussian noise leaves it as it is).
      action: ``mu(s) [..., A]``.
      key: PRNG key of the noise.
      deterministic: a bool (may be traced): True returns ``(action, noise_state)``
        unchanged.
    """
    if noise is None or (isinstance(deterministic, bool | np.bool_) and bool(deterministic)):
        return action, noise_state
    try:
        eps, advanced = noise.sample(key, noise_state, action.shape)
    except ValueError as error:
        if isinstance(deterministic, bool | np.bool_):
            raise
        # A traced flag compiles the noisy branch too, so its shapes must agree.
        raise ValueError(
            f"{error}; `deterministic` is a traced array, so the noisy branch is "
            "built as well: pass deterministic=True as a Python bool to act without noise"
        ) from None
    action = jnp.where(deterministic, action, action + eps).astype(action.dtype)
    return action, jnp.where(deterministic, noise_state, advanced)


def uniform_actions(key: Array, shape: tuple[int, ...]) -> Array:
    """Uniform raw actions in ``[-1, 1]`` of ``shape`` (``[..., A]``): the warm-up's."""
    return jax.random.uniform(key, shape, jnp.float32, -1.0, 1.0)


def warmup_actions(
    explored: ActionSample, random: ActionSample, env_steps: Array, warmup_steps: int
) -> ActionSample:
    """``random`` while ``env_steps < warmup_steps`` (Tianshou's ``start_timesteps``),
    ``explored`` after; both ``ActionSample`` s of the same shapes."""
    warm = env_steps < warmup_steps
    return jax.tree_util.tree_map(lambda r, s: jnp.where(warm, r, s), random, explored)


# ---------------------------------------------------------------------------------------------
# The critic
# ---------------------------------------------------------------------------------------------


def check_batch(
    batch: NStepBatch, obs_shape: tuple[int, ...], action_shape: tuple[int, ...], horizon: int
) -> None:
    """Raise naming the offending field unless ``batch`` is an :class:`jaxrl.NStepBatch` of
    windows of ``horizon`` steps with these observation and action shapes (static checks,
    so they run under ``jit`` too)."""
    missing = [f for f in NStepBatch._fields if not hasattr(batch, f)]
    if missing:
        raise TypeError(f"batch is missing field(s) {missing}; expected a jaxrl NStepBatch")
    reward_shape = tuple(np.shape(batch.reward))
    if len(reward_shape) != 2 or reward_shape[0] != horizon:
        raise ValueError(
            f"batch.reward must have shape [n_step_return_horizon={horizon}, B], got "
            f"{reward_shape}: a batch DDPG.sample_batch draws, not a rollout ([T, N])"
        )
    size = reward_shape[1]
    expected = {
        "obs": (size, *obs_shape),
        "action": (size, *action_shape),
        "terminated": reward_shape,
        "truncated": reward_shape,
        "next_obs": (*reward_shape, *obs_shape),
    }
    for name, shape in expected.items():
        got = tuple(np.shape(getattr(batch, name)))
        if got != shape:
            raise ValueError(f"batch.{name} must have shape {shape}, got {got}")
    kinds = {"obs": "fiub", "next_obs": "fiub", "action": "f", "reward": "fiu"}
    check_dtypes("batch", batch, {**kinds, "terminated": "biu", "truncated": "biu"})


def bootstrap_observations(batch: NStepBatch) -> tuple[Array, Array]:
    """``(last [B], next_obs [B, ...])``: per sample, the step of its window whose next
    observation its n-step target bootstraps from (its first episode end, or step
    ``n - 1``), and that observation, the only one :func:`jaxrl.core.nstep_targets` reads."""
    horizon, size = batch.reward.shape
    ends = jnp.asarray(batch.terminated, bool) | jnp.asarray(batch.truncated, bool)
    last = jnp.where(jnp.any(ends, axis=0), jnp.argmax(ends, axis=0), horizon - 1)
    return last, jnp.asarray(batch.next_obs, jnp.float32)[last, jnp.arange(size)]


def nstep_critic_targets(
    batch: NStepBatch, next_value: Callable[[Array], Array], gamma: float | Array
) -> Array:
    """n-step TD targets ``y [B]`` (no gradient):

    .. math::

        y = \\sum_{i < n'} \\gamma^i r_{t+i} + \\gamma^{n'} (1 - \\mathrm{term}_{t+n'-1})
            V(s'_{t+n'-1})

    with ``n' <= n`` stopping at the first episode end, and ``V = next_value``: a function
    ``next_obs [B, ...] -> [B]`` evaluated once, at :func:`bootstrap_observations` (DDPG's
    ``Q'(s', mu'(s'))``; TD3's smoothed minimum over twin critics).
    """
    horizon = batch.reward.shape[0]
    if horizon == 1:  # the window's only step is the one bootstrapped from
        next_values = next_value(jnp.asarray(batch.next_obs[0], jnp.float32))[None, :]
    else:
        last, next_obs = bootstrap_observations(batch)
        at_last = jnp.arange(horizon)[:, None] == last[None, :]
        next_values = jnp.where(at_last, next_value(next_obs)[None, :], 0.0)
    targets = nstep_targets(batch.reward, next_values, batch.terminated, batch.truncated, gamma)
    return jax.lax.stop_gradient(targets)


def critic_loss(q: Array, targets: Array) -> Array:
    """Mean squared TD error of each critic: ``mean_b (Q[..., b] - y[b])^2``.

    Args:
      q: ``Q(s, a)``: ``[B]`` for one critic, ``[K, B]`` for an ensemble.
      targets: ``y [B]``.

    Returns:
      ``[]`` for one critic, ``[K]`` for an ensemble (one loss per critic).
    """
    return jnp.mean((q - targets) ** 2, axis=-1)


def critic_step(
    critic: TrainState, obs: Array, action: Array, targets: Array
) -> tuple[TrainState, Array, Array]:
    """One optimizer step of the critic(s) on the sum of :func:`critic_loss` es, refused (and
    counted) where non-finite (``guarded_gradient_step``).

    With an ensemble the parameters are stacked and the losses summed: each critic gets the
    gradient of its own loss, so one Adam takes the steps that one Adam per critic would.

    Returns:
      ``(critic, losses, rejected)``: losses ``[]`` or ``[K]``, measured before the step.
    """

    def loss_fn(params: PyTree) -> tuple[Array, Array]:
        losses = critic_loss(critic.apply_fn(params, obs, action), targets)
        return jnp.sum(losses), losses

    (loss, losses), grads = jax.value_and_grad(loss_fn, has_aux=True)(critic.params)
    critic, rejected = guarded_gradient_step(critic, loss, grads, all_finite_by_leaf)
    return critic, losses, rejected


# ---------------------------------------------------------------------------------------------
# The actor
# ---------------------------------------------------------------------------------------------


def deterministic_policy_loss(
    actor_params: PyTree, actor_apply: Callable, q: QFunction, obs: Array
) -> Array:
    """``-mean_b q(s_b, mu(s_b))``, ``mu = actor_apply(actor_params, .)``; ``q`` maps
    ``(obs [B, ...], action [B, A])`` to ``[B]`` (one critic: the actor's gradient is the
    deterministic policy gradient)."""
    return -jnp.mean(q(obs, actor_apply(actor_params, obs)))


def actor_step(actor: TrainState, q: QFunction, obs: Array) -> tuple[TrainState, Array, Array]:
    """One optimizer step of the actor on :func:`deterministic_policy_loss` through ``q``,
    refused (and counted) where non-finite. Returns ``(actor, loss, rejected)``, the loss
    measured before the step."""

    def loss_fn(params: PyTree) -> Array:
        return deterministic_policy_loss(params, actor.apply_fn, q, obs)

    loss, grads = jax.value_and_grad(loss_fn)(actor.params)
    actor, rejected = guarded_gradient_step(actor, loss, grads, all_finite_by_leaf)
    return actor, loss, rejected


def q_function(critic: TrainState, index: int | None = None) -> QFunction:
    """``(obs, action) -> Q [B]`` of ``critic`` at its current parameters; ``index`` picks
    one critic of an ensemble (``Q [K, B]``)."""

    def q(obs: Array, action: Array) -> Array:
        values = critic.apply_fn(critic.params, obs, action)
        return values if index is None else values[index]

    return q


# ---------------------------------------------------------------------------------------------
# Bookkeeping
# ---------------------------------------------------------------------------------------------


def with_scheduled_lr(
    train_state: TrainState, lr: float | Array, schedule: Schedule | None, count: Array
) -> TrainState:
    """``train_state`` whose Adam (``adam_with_injected_lr``)
    steps with ``lr * schedule(count)`` (``lr`` without a schedule)."""
    rate = scheduled_learning_rate(lr, schedule, count)
    return train_state.replace(opt_state=set_learning_rate(train_state.opt_state, rate))


def soft_update_targets(state: Any, tau: float | Array) -> Any:
    """``state`` with both target networks moved toward the online ones,
    ``theta' <- tau * theta + (1 - tau) * theta'`` leaf by leaf
    (:func:`jaxrl.core.soft_update`); ``state`` has ``actor``, ``critic`` (train states),
    ``actor_target`` and ``critic_target`` (parameters), as :class:`jaxrl.DDPGState`."""
    return state.replace(
        actor_target=soft_update(state.actor_target, state.actor.params, tau),
        critic_target=soft_update(state.critic_target, state.critic.params, tau),
    )

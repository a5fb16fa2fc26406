"""The on-policy pieces of the update NPG and TRPO share, as small pure functions: the state,
the batch and its preparation, the minibatch layout and the critic's steps.

One update (:meth:`jaxrl.algorithms.NaturalGradient.update`) is:

1. :func:`prepare_batch`: the critic's values, GAE advantages and TD(lambda) returns
   (:func:`jaxrl.core.gae`), return scaling, advantage normalization and the collecting
   policy's log-probabilities, over the whole rollout (Tianshou's ``process_fn``);
2. ``repeat`` passes over shuffled minibatches (:func:`minibatch_layout`), each an actor
   step (:func:`jaxrl.algorithms.natural_step.actor_step`: the natural-gradient direction
   by conjugate gradients, then the algorithm's rule along it) and the critic's Adam steps
   (:func:`critic_steps`).

Shapes: a rollout ``[T, N, ...]`` becomes ``B = T * N`` samples, flattened time-major
(sample ``t * N + n``); a minibatch holds ``S`` positions of them with ``weights [S]``
masking its padding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from flax.training.train_state import TrainState
from jax import lax

from jaxrl.algorithms._common import guarded_gradient_step
from jaxrl.core import distributions
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.core.returns import gae
from jaxrl.core.tree import all_finite, tree_select
from jaxrl.rollout import Rollout, check_time_major
from jaxrl.spaces import SpaceSpec

Array = jax.Array
PyTree = Any

RETURN_SCALING_EPS = 1e-8  # Tianshou's epsilon of the return scaling


class OnPolicyState(struct.PyTreeNode):
    """Everything NPG/TRPO learn and carry between updates (a pytree).

    Attributes:
      actor: ``TrainState`` of the policy network (updated by natural-gradient steps, so its
        optimizer is a placeholder); ``actor.step`` counts actor steps.
      critic: ``TrainState`` of the value network with its Adam state.
      return_rms: running statistics of the returns (return scaling).
      action_low: the Box's lower bounds, for action mapping (zeros for Discrete).
      action_high: its upper bounds (zeros for Discrete).
      num_updates: number of ``update`` calls so far (drives the learning-rate schedule).
      observation_space: static description of the observation space.
      action_space: static description of the action space.
    """

    actor: TrainState
    critic: TrainState
    return_rms: RunningMeanStd
    action_low: Array
    action_high: Array
    num_updates: Array
    observation_space: SpaceSpec = struct.field(pytree_node=False)
    action_space: SpaceSpec = struct.field(pytree_node=False)


class OnPolicyBatch(NamedTuple):
    """What the learning passes of an NPG/TRPO update see
    (:func:`~jaxrl.algorithms.on_policy.prepare_batch`): ``B``
    samples of a rollout, flattened time-major.

    Attributes:
      obs: ``[B, *obs_shape]`` float32 observations.
      action: ``[B, *action_shape]`` the collected raw actions.
      advantage: ``[B]`` GAE advantages (normalized with ``advantage_normalization``).
      target: ``[B]`` the critic's regression targets: TD(lambda) returns, divided by the
        running return std with ``return_scaling``.
      log_prob_old: ``[B]`` log-probabilities of the actions under the collecting policy.
    """

    obs: Array
    action: Array
    advantage: Array
    target: Array
    log_prob_old: Array


def weighted_mean(x: Array, weights: Array) -> Array:
    """``sum(x * weights) / sum(weights)`` over a minibatch (``weights`` mask padding)."""
    return jnp.sum(x * weights) / jnp.sum(weights)


# ---------------------------------------------------------------------------------------------
# Batch preparation
# ---------------------------------------------------------------------------------------------


def prepare_batch(
    state: OnPolicyState,
    rollout: Rollout,
    *,
    gamma: float | Array,
    gae_lambda: float | Array,
    return_scaling: bool,
    advantage_normalization: bool,
    max_batchsize: int | None,
) -> tuple[OnPolicyBatch, RunningMeanStd]:
    """The first step of an update (Tianshou's pre-processing of a collected batch).

    The critic's values of ``obs`` and ``next_obs`` (in chunks of ``max_batchsize`` if set),
    GAE advantages and the critic's targets (:func:`returns_and_targets`), advantage
    normalization over the whole batch, and the log-probabilities of the collected actions.

    Args:
      state: the train state.
      rollout: a time-major :class:`jaxrl.Rollout` (``[T, N, ...]``).

    Returns:
      ``(batch, return_rms)``: the :class:`OnPolicyBatch` of ``B = T * N`` samples and the
      return statistics updated with this batch's returns (unchanged without
      ``return_scaling``).
    """
    (num_steps, num_envs), obs, next_obs, actions = flat_rollout(state, rollout)
    total = num_steps * num_envs
    critic, actor = state.critic, state.actor

    def value(o: Array) -> Array:
        return critic.apply_fn(critic.params, o)

    values = in_chunks(value, max_batchsize, obs).reshape(num_steps, num_envs)
    next_values = in_chunks(value, max_batchsize, next_obs).reshape(num_steps, num_envs)
    advantages, targets, return_rms = returns_and_targets(
        state.return_rms, rollout, values, next_values, gamma, gae_lambda, return_scaling
    )
    advantages, targets = advantages.reshape(total), targets.reshape(total)
    if advantage_normalization:
        advantages = normalize_advantages(advantages)

    def old_log_prob(o: Array, a: Array) -> Array:
        return distributions.log_prob(actor.apply_fn(actor.params, o), a)

    batch = OnPolicyBatch(
        obs=obs,
        action=actions,
        advantage=advantages,
        target=targets,
        log_prob_old=in_chunks(old_log_prob, max_batchsize, obs, actions),
    )
    return batch, return_rms


def flat_rollout(
    state: OnPolicyState, rollout: Rollout
) -> tuple[tuple[int, int], Array, Array, Array]:
    """A rollout's shape ``(T, N)`` (checked against the state's spaces) and its
    observations, next observations (float32, ``[B, *obs_shape]``) and actions
    (``[B, *action_shape]``), flattened time-major to ``B = T * N`` samples."""
    discrete = state.action_space.kind == "discrete"
    action_shape = () if discrete else state.action_space.shape
    obs_shape = state.observation_space.shape
    num_steps, num_envs = check_time_major(rollout, obs_shape, action_shape, discrete)
    total = num_steps * num_envs
    obs = jnp.asarray(rollout.obs, jnp.float32).reshape(total, *obs_shape)
    next_obs = jnp.asarray(rollout.next_obs, jnp.float32).reshape(total, *obs_shape)
    actions = jnp.asarray(rollout.action).reshape(total, *action_shape)
    return (num_steps, num_envs), obs, next_obs, actions


def in_chunks(fn: Callable[..., Array], chunk: int | None, *xs: Array) -> Array:
    """``fn(*xs)`` on ``xs [B, ...]``, in chunks of ``chunk`` along ``B`` where that is
    smaller than ``B`` (Tianshou evaluates in chunks to bound memory)."""
    if chunk is None or chunk >= xs[0].shape[0]:
        return fn(*xs)
    return lax.map(lambda x: fn(*x), xs, batch_size=chunk)


def returns_and_targets(
    return_rms: RunningMeanStd,
    rollout: Rollout,
    values: Array,
    next_values: Array,
    gamma: float | Array,
    gae_lambda: float | Array,
    return_scaling: bool,
) -> tuple[Array, Array, RunningMeanStd]:
    """GAE advantages and the critic's targets ``[T, N]`` from the critic's ``values`` and
    ``next_values [T, N]``, and the running return statistics updated.

    With ``return_scaling`` the critic predicts returns divided by the running return std:
    its values are scaled back up for GAE, the targets are the TD(lambda) returns divided
    by that std, and the statistics take in this batch's returns (unless those, or the
    updated statistics, are not finite). Without it the targets are the returns and the
    statistics are ``return_rms`` unchanged."""
    return_std = jnp.sqrt(return_rms.var + RETURN_SCALING_EPS)
    if return_scaling:
        values, next_values = values * return_std, next_values * return_std
    advantages, returns = gae(
        jnp.asarray(rollout.reward, jnp.float32),
        values,
        next_values,
        rollout.terminated,
        rollout.truncated,
        gamma,
        gae_lambda,
    )
    if not return_scaling:
        return advantages, returns, return_rms
    targets = returns / return_std
    # Non-finite returns (bad rewards), or finite ones so large that the variance
    # overflows (1e30**2), must not poison the running statistics.
    updated = return_rms.update(returns.reshape(-1))
    keep = all_finite(returns) & all_finite(updated)
    return_rms = tree_select(keep, updated, return_rms)
    return advantages, targets, return_rms


def normalize_advantages(advantages: Array) -> Array:
    """``advantages [B]`` centered and divided by their unbiased std, as Tianshou does; a
    zero-variance batch (or a single sample) stays centered (0)."""
    total = advantages.shape[0]
    centered = advantages - jnp.mean(advantages)
    std = jnp.std(advantages, ddof=1) if total > 1 else jnp.zeros(())
    return jnp.where(std > 0, centered / jnp.where(std > 0, std, 1.0), centered)


def minibatch_layout(total: int, batch_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``[M, S]`` and validity mask of Tianshou's ``split(batch_size, merge_last)``.

    ``M = total // batch_size`` minibatches of ``batch_size``, the remainder merged into the
    last one; shorter rows are padded (mask False). ``None`` or a size ``>= total`` gives one
    minibatch holding everything.
    """
    if batch_size is None or batch_size >= total:
        return np.arange(total)[None], np.ones((1, total), bool)
    count = total // batch_size
    width = batch_size + total % batch_size
    positions = np.zeros((count, width), np.int32)
    mask = np.zeros((count, width), bool)
    for i in range(count):
        size = width if i == count - 1 else batch_size
        positions[i, :size] = i * batch_size + np.arange(size)
        mask[i, :size] = True
    return positions, mask


# ---------------------------------------------------------------------------------------------
# The critic
# ---------------------------------------------------------------------------------------------


def critic_steps(
    critic: TrainState,
    minibatch: OnPolicyBatch,
    weights: Array,
    passes: int,
    key: Array | None = None,
    batch_size: int | None = None,
) -> tuple[TrainState, Array, Array]:
    """The critic's Adam steps on the mean squared error against ``target`` over
    ``minibatch`` (``weights [S]`` mask its padding): ``passes`` passes, one step per
    minibatch of ``batch_size``, shuffled with ``key`` (the last takes the remainder, as
    :func:`minibatch_layout` lays out the actor's; sb3-contrib's critic), or with
    ``batch_size`` None one step per pass on the whole minibatch (Tianshou's
    ``optim_critic_iters`` steps). Returns the critic, the last step's loss and the number of
    steps refused as non-finite."""
    total = weights.shape[0]
    positions, mask = minibatch_layout(total, batch_size)
    positions, mask = jnp.asarray(positions), jnp.asarray(mask, jnp.float32)

    def loss_fn(params: PyTree, indices: Array, valid: Array) -> Array:
        prediction = critic.apply_fn(params, minibatch.obs[indices])
        error = (minibatch.target[indices] - prediction) ** 2
        return weighted_mean(error, weights[indices] * valid)

    def step(critic: TrainState, inputs: tuple) -> tuple[TrainState, tuple[Array, Array]]:
        loss, grads = jax.value_and_grad(loss_fn)(critic.params, *inputs)
        critic, rejected = guarded_gradient_step(critic, loss, grads)
        return critic, (loss, rejected)

    def one_pass(critic: TrainState, pass_key: Array | None) -> tuple[TrainState, tuple]:
        order = jnp.arange(total) if pass_key is None else jax.random.permutation(pass_key, total)
        return lax.scan(step, critic, (order[positions], mask))

    if passes == 0:
        loss = loss_fn(critic.params, jnp.arange(total), jnp.ones((total,), jnp.float32))
        return critic, loss, jnp.zeros((), jnp.int32)
    keys = None if batch_size is None else jax.random.split(key, passes)
    critic, (losses, rejected) = lax.scan(one_pass, critic, keys, length=passes)
    return critic, losses[-1, -1], jnp.sum(rejected)

"""Return and advantage estimators: GAE for on-policy rollouts, n-step targets for replay.

Conventions (Tianshou's, made explicit):

* ``terminated[t]``: the environment reached a terminal state at step ``t``; the value of the
  next state is zero, so the bootstrap ``V(s'_t)`` is masked out.
* ``truncated[t]``: the episode was cut at step ``t`` (time limit, end of data); the episode
  ends, but ``s'_t`` is a real state whose value is kept as the bootstrap.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.core._checks import check_in_range, check_min_rank, check_same_shape

Array = jax.Array


class GAEResult(NamedTuple):
    """Output of :func:`gae`; both fields have the shape of the rewards."""

    advantages: Array
    returns: Array


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: float | Array,
    gae_lambda: float | Array,
) -> GAEResult:
    """Generalized advantage estimation over a time-major segment.

    All arrays have shape ``[T, ...]`` (typically ``[T, N]`` for ``N`` parallel environments);
    time is the leading axis and any trailing axes are independent streams.

    .. math::

        \\delta_t = r_t + \\gamma (1 - \\mathrm{term}_t) V(s'_t) - V(s_t)

        A_t = \\delta_t + \\gamma \\lambda (1 - \\mathrm{end}_t) A_{t+1}

    with ``end_t = terminated_t | truncated_t``, and ``end`` forced true at the last step
    ``T - 1`` of the segment: an unfinished episode is bootstrapped from ``V(s'_{T-1})`` and
    never leaks into other data. The returned ``returns = A + V(s)`` are the TD(lambda) returns
    (the critic's regression targets). ``gae_lambda = 1`` with zero values gives Monte Carlo
    returns truncated at episode ends.

    Args:
      rewards: ``r_t``, shape ``[T, ...]``.
      values: ``V(s_t)``, same shape.
      next_values: ``V(s'_t)``, the value of the observation that followed step ``t`` (the
        final observation of the episode when it ended there), same shape.
      terminated: boolean (or 0/1) termination flags, same shape.
      truncated: boolean (or 0/1) truncation flags, same shape.
      gamma: discount factor in ``[0, 1]``; may be a traced scalar (vmapped sweeps).
      gae_lambda: GAE parameter in ``[0, 1]``; may be traced.

    Returns:
      ``GAEResult(advantages, returns)``, each of shape ``[T, ...]``.
    """
    names = ("rewards", "values", "next_values", "terminated", "truncated")
    arrays = (rewards, values, next_values, terminated, truncated)
    check_min_rank("rewards", rewards, 1)
    check_same_shape(names, arrays)
    check_in_range("gamma", gamma, 0.0, 1.0)
    check_in_range("gae_lambda", gae_lambda, 0.0, 1.0)

    rewards = jnp.asarray(rewards)
    dtype = jnp.result_type(rewards.dtype, jnp.float32)
    rewards = rewards.astype(dtype)
    values = jnp.asarray(values, dtype)
    next_values = jnp.asarray(next_values, dtype)
    terminated = jnp.asarray(terminated).astype(bool)
    episode_end = terminated | jnp.asarray(truncated).astype(bool)
    episode_end = episode_end.at[-1].set(True)

    deltas = rewards + gamma * jnp.where(terminated, 0.0, next_values) - values
    continuation = gamma * gae_lambda * (1.0 - episode_end.astype(dtype))

    def backward_step(next_advantage: Array, step: tuple[Array, Array]) -> tuple[Array, Array]:
        delta, cont = step
        advantage = delta + cont * next_advantage
        return advantage, advantage

    _, advantages = lax.scan(
        backward_step, jnp.zeros_like(deltas[0]), (deltas, continuation), reverse=True
    )
    return GAEResult(advantages=advantages, returns=advantages + values)


def nstep_targets(
    rewards: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: float | Array,
) -> Array:
    """n-step TD targets from windows of consecutive replay transitions.

    The inputs are windows of ``n`` consecutive transitions of one environment, starting at the
    transition being learned from: shape ``[n, ...]`` with the horizon ``n`` as the leading
    axis (``[n, B]`` for a batch of ``B`` samples). With ``n'`` the number of steps up to and
    including the first terminated or truncated step (``n' = n`` if there is none):

    .. math::

        y = \\sum_{i < n'} \\gamma^i r_i + \\gamma^{n'} (1 - \\mathrm{term}_{n'-1}) V(s'_{n'-1})

    so the sum stops at an episode end, truncation keeps the bootstrap from the final
    observation, and only termination masks it (Tianshou's ``compute_nstep_return``).

    Args:
      rewards: ``r_{t+i}``, shape ``[n, ...]``.
      next_values: bootstrap values of the observation after each step, typically
        ``Q'(s'_{t+i}, mu'(s'_{t+i}))``, same shape.
      terminated: termination flags, same shape.
      truncated: truncation flags (also used to mark the end of valid data), same shape.
      gamma: discount factor in ``[0, 1]``; may be traced.

    Returns:
      The targets, shape ``[...]`` (the window axis reduced).
    """
    names = ("rewards", "next_values", "terminated", "truncated")
    check_min_rank("rewards", rewards, 1)
    check_same_shape(names, (rewards, next_values, terminated, truncated))
    check_in_range("gamma", gamma, 0.0, 1.0)

    rewards = jnp.asarray(rewards)
    dtype = jnp.result_type(rewards.dtype, jnp.float32)
    rewards = rewards.astype(dtype)
    next_values = jnp.asarray(next_values, dtype)
    terminated = jnp.asarray(terminated).astype(bool)
    episode_end = terminated | jnp.asarray(truncated).astype(bool)
    horizon = rewards.shape[0]

    # A step is inside the window if no episode ended strictly before it.
    ends_so_far = jnp.cumsum(episode_end.astype(jnp.int32), axis=0)
    inside = (ends_so_far - episode_end.astype(jnp.int32)) == 0
    # The last step inside the window is where it ends, or the horizon's last step.
    is_last_step = jnp.arange(horizon).reshape((horizon,) + (1,) * (rewards.ndim - 1))
    is_last = inside & (episode_end | (is_last_step == horizon - 1))

    powers = jnp.arange(horizon, dtype=dtype).reshape(is_last_step.shape)
    discounts = jnp.power(jnp.asarray(gamma, dtype), powers)
    discounted_rewards = jnp.sum(jnp.where(inside, discounts * rewards, 0.0), axis=0)
    bootstrap = jnp.where(is_last & ~terminated, gamma * discounts * next_values, 0.0)
    return discounted_rewards + jnp.sum(bootstrap, axis=0)

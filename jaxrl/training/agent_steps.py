"""What a driver does with any agent beyond its protocol (:mod:`jaxrl.algorithms.protocol`):
the off-policy run shape, and the off-policy learning loop, the
same for the jitted and the host driver."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.algorithms.protocol import Agent
from jaxrl.core.stats import SummaryStats
from jaxrl.core.tree import apply_if
from jaxrl.replay import ReplayBuffer

Array = jax.Array


def updates_per_collect(agent: Agent, env_steps_per_collect: int) -> int:
    """Off-policy updates after each collection: ``update_per_step * env steps collected``."""
    updates = agent.update_per_step * env_steps_per_collect
    if updates < 1 or not float(updates).is_integer():
        raise ValueError(
            f"{type(agent).__name__}.update_per_step * env steps per collection must be a "
            "positive integer "
            f"(updates per collection), got {agent.update_per_step} * {env_steps_per_collect}"
            f" = {updates}"
        )
    return int(updates)


def mean_stats(stats: dict[str, Any]) -> dict[str, Array]:
    """Reduce an update's stats to scalars for logging (SummaryStats -> its mean)."""
    return {
        name: (value.mean if isinstance(value, SummaryStats) else value)
        for name, value in stats.items()
    }


def updates_take_effect(agent: Agent, env_steps: Any) -> Any:
    """Whether off-policy updates after a collection that started at ``env_steps`` take
    effect: not inside the random warm-up (Tianshou's ``start_timesteps``). Works on Python
    ints (the host driver skips those updates) and on traced counts (the jitted driver masks
    them)."""
    return env_steps >= agent.warmup_steps


def off_policy_updates(
    agent: Agent,
    state: Any,
    buffer: ReplayBuffer,
    key: Array,
    num_updates: int,
    env_steps: Array | None = None,
) -> tuple[Any, dict[str, Array]]:
    """``num_updates`` off-policy updates on batches sampled from ``buffer`` after a
    collection that started at ``env_steps``; returns the state and the mean of their stats.

    A collection that started inside the ``warmup_steps`` random warm-up runs no update
    (:func:`updates_take_effect`): its stats are NaN (integer ones 0), as on the host
    driver, which decides that on the host and passes ``env_steps=None`` (learn). Seeds in
    one program are in lockstep, so under ``vmap`` the warm-up's collections skip the
    updates for the whole batch (:func:`jaxrl.core.apply_if`).
    """

    def one_update(state: Any, update_key: Array) -> tuple[Any, dict]:
        batch_key, step_key = jax.random.split(update_key)
        return agent.update(state, agent.sample_batch(buffer, batch_key), step_key)

    def learn(state: Any, key: Array) -> tuple[Any, dict[str, Array]]:
        state, stats = lax.scan(one_update, state, jax.random.split(key, num_updates))
        return state, jax.tree_util.tree_map(jnp.mean, stats)

    if agent.warmup_steps == 0 or env_steps is None:
        return learn(state, key)

    skipped = jax.tree_util.tree_map(_no_value, jax.eval_shape(learn, state, key)[1])
    return apply_if(
        updates_take_effect(agent, env_steps), lambda state, _: learn(state, key), state, skipped
    )


def _no_value(shape: jax.ShapeDtypeStruct) -> Array:
    """The stat of updates that did not run: NaN, or 0 for an integer count."""
    inexact = jnp.issubdtype(shape.dtype, jnp.inexact)
    return jnp.full(shape.shape, jnp.nan if inexact else 0, shape.dtype)

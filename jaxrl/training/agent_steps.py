"""What a driver does with any agent beyond its protocol (:mod:`jaxrl.algorithms.protocol`):
whether it learns from replay, the off-policy run shape, and the off-policy learning loop, the
same for the jitted and the host driver."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.algorithms.protocol import learns_from_replay
from jaxrl.core.stats import SummaryStats
from jaxrl.replay import ReplayBuffer

Array = jax.Array


def is_off_policy(agent: Any) -> bool:
    """Whether the agent learns from a replay buffer rather than fresh rollouts
    (:func:`jaxrl.algorithms.protocol.learns_from_replay`)."""
    return learns_from_replay(agent)


def updates_per_collect(agent: Any, env_steps_per_collect: int) -> int:
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


def updates_take_effect(agent: Any, env_steps: Any) -> Any:
    """Whether off-policy updates after a collection that started at ``env_steps`` take
    effect: not inside the random warm-up (Tianshou's ``start_timesteps``). Works on Python
    ints (the host driver skips those updates) and on traced counts (the jitted driver masks
    them)."""
    return env_steps >= agent.warmup_steps


def off_policy_updates(
    agent: Any, state: Any, buffer: ReplayBuffer, key: Array, num_updates: int, env_steps: Array
) -> tuple[Any, dict[str, Array]]:
    """``num_updates`` off-policy updates on batches sampled from ``buffer`` after a
    collection that started at ``env_steps`` (none take effect if it started inside the
    ``warmup_steps`` random warm-up: :func:`updates_take_effect`); returns the state and the
    mean of their stats."""

    def one_update(state: Any, update_key: Array) -> tuple[Any, dict]:
        batch_key, step_key = jax.random.split(update_key)
        new_state, stats = agent.update(state, agent.sample_batch(buffer, batch_key), step_key)
        if agent.warmup_steps > 0:
            learning = updates_take_effect(agent, env_steps)
            new_state = jax.tree_util.tree_map(
                lambda n, o: jnp.where(learning, n, o), new_state, state
            )
        return new_state, stats

    state, stats = lax.scan(one_update, state, jax.random.split(key, num_updates))
    return state, jax.tree_util.tree_map(jnp.mean, stats)

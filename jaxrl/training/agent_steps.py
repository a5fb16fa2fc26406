"""What a driver does with an agent, the same for the jitted and the host driver: initialize
it (and its replay buffer), explore, act for evaluation, and learn off-policy."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.algorithms.ddpg import DDPG
from jaxrl.algorithms.npg import ActionSample
from jaxrl.core.stats import SummaryStats
from jaxrl.replay import ReplayBuffer
from jaxrl.spaces import SpaceSpec

Array = jax.Array


def is_off_policy(agent: Any) -> bool:
    """Whether the agent learns from a replay buffer (DDPG) rather than fresh rollouts."""
    return isinstance(agent, DDPG)


def init_agent(
    agent: Any, key: Array, observation_space: SpaceSpec, action_space: SpaceSpec, num_envs: int
) -> tuple[Any, ReplayBuffer | None]:
    """``(state, buffer)``: the agent's state and, for off-policy agents, an empty buffer."""
    if is_off_policy(agent):
        state = agent.init(key, observation_space, action_space, num_envs)
        return state, agent.init_buffer(state, num_envs)
    return agent.init(key, observation_space, action_space), None


def updates_per_collect(agent: Any, env_steps_per_collect: int) -> int:
    """Off-policy updates after each collection: ``update_per_step * env steps collected``."""
    updates = agent.update_per_step * env_steps_per_collect
    if updates < 1 or not float(updates).is_integer():
        raise ValueError(
            f"DDPG.update_per_step * env steps per collection must be a positive integer "
            f"(updates per collection), got {agent.update_per_step} * {env_steps_per_collect}"
            f" = {updates}"
        )
    return int(updates)


def explore(
    agent: Any, state: Any, obs: Array, key: Array, env_steps: Array
) -> tuple[Any, ActionSample]:
    """Training actions: sampled (on-policy) or noisy, with uniform random actions during
    DDPG's ``warmup_steps`` (counted in env steps)."""
    if not is_off_policy(agent):
        return state, agent.sample_actions(state, obs, key)
    act_key, random_key = jax.random.split(key)
    state, sample = agent.sample_actions(state, obs, act_key)
    if agent.warmup_steps > 0:
        random = agent.sample_random_actions(state, random_key, obs.shape[:1])
        warm = env_steps < agent.warmup_steps
        sample = jax.tree_util.tree_map(lambda r, s: jnp.where(warm, r, s), random, sample)
    return state, sample


def policy_action(agent: Any, state: Any, obs: Array, key: Array, deterministic: Any) -> Array:
    """Environment actions from any agent's ``act`` (DDPG's also returns its noise state)."""
    out = agent.act(state, obs, key, deterministic)
    return out[1] if isinstance(out, tuple) else out


def evaluation_is_deterministic(agent: Any) -> bool:
    """NPG/TRPO follow ``deterministic_eval``; DDPG evaluates without noise (Tianshou's test
    collector does not add exploration noise)."""
    return bool(getattr(agent, "deterministic_eval", True))


def mean_stats(stats: dict[str, Any]) -> dict[str, Array]:
    """Reduce an update's stats to scalars for logging (SummaryStats -> its mean)."""
    return {
        name: (value.mean if isinstance(value, SummaryStats) else value)
        for name, value in stats.items()
    }


def updates_take_effect(agent: Any, env_steps: Any) -> Any:
    """Whether DDPG's updates after a collection that started at ``env_steps`` take effect:
    not inside the random warm-up (Tianshou's ``start_timesteps``). Works on Python ints (the
    host driver skips those updates) and on traced counts (the jitted driver masks them)."""
    return env_steps >= agent.warmup_steps


def off_policy_updates(
    agent: Any, state: Any, buffer: ReplayBuffer, key: Array, num_updates: int, env_steps: Array
) -> tuple[Any, dict[str, Array]]:
    """``num_updates`` DDPG updates on batches sampled from ``buffer`` (none take effect
    before ``warmup_steps`` env steps); returns the state and the mean of their stats."""

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

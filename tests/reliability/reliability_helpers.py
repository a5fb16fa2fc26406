"""Shared tiny agents, data and checks for the reliability tests (small networks: fast
compiles)."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp

import jaxrl

OBS_SPACE = gymnasium.spaces.Box(-1.0, 1.0, (3,))
ACT_SPACE = gymnasium.spaces.Box(-2.0, 2.0, (1,))
T, N = 8, 2


@jax.jit
def on_policy_update(agent, state, rollout, key):
    """One compile per algorithm structure; numeric fields of ``agent`` may change."""
    return agent.update(state, rollout, key)


@jax.jit
def ddpg_update(agent, state, batch, key):
    return agent.update(state, batch, key)


def make_rollout(key: jax.Array, **overrides) -> jaxrl.Rollout:
    keys = jax.random.split(key, 4)
    rollout = jaxrl.Rollout(
        obs=jax.random.normal(keys[0], (T, N, 3)),
        action=jax.random.normal(keys[1], (T, N, 1)),
        reward=jax.random.normal(keys[2], (T, N)),
        terminated=jnp.zeros((T, N), bool).at[3, 0].set(True),
        truncated=jnp.zeros((T, N), bool).at[5, 1].set(True),
        next_obs=jax.random.normal(keys[3], (T, N, 3)),
    )
    return rollout._replace(**overrides)


def all_finite(tree) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(tree))


def trees_equal(a, b) -> bool:
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        bool(jnp.array_equal(x, y)) for x, y in zip(leaves_a, leaves_b, strict=True)
    )


ON_POLICY = {
    "npg": jaxrl.NPG(hidden_sizes=(8,), return_scaling=True),
    "trpo": jaxrl.TRPO(hidden_sizes=(8,), return_scaling=True),
}

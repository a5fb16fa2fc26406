"""Every action of an on-policy rollout comes from the policy the update then learns with, on
both drivers: an agent whose action is its own update count sees, in each update, only
actions taken with that count (none left over from the policy before the last update)."""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import jaxrl
from jaxrl.algorithms.protocol import LearningMode
from jaxrl.training import TrainConfig, make_train
from jaxrl.training.gymnasium_driver import train_gymnasium

SHAPE = TrainConfig(num_envs=2, num_steps=4, total_steps=48, eval_every=16, eval_episodes=1)


class CounterState(struct.PyTreeNode):
    num_updates: jax.Array


class Counter(struct.PyTreeNode):
    """Acts with its update count (a constant action in [-2, 2] * 0: Pendulum stays valid);
    its update reports how many of the rollout's actions came from another count."""

    learning_mode: ClassVar[LearningMode] = "on_policy"

    @property
    def evaluates_deterministically(self) -> bool:
        return True

    def init_training(self, key, observation_space, action_space, num_envs) -> tuple[Any, None]:
        return CounterState(jnp.zeros((), jnp.int32)), None

    def explore(self, state, obs, key, env_steps):
        action = jnp.full((obs.shape[0], 1), state.num_updates, jnp.float32)
        return state, jaxrl.ActionSample(action, jnp.zeros_like(action))

    def policy(self, state, obs, key, deterministic):
        return jnp.zeros((obs.shape[0], 1))

    def update(self, state, rollout, key):
        stale = jnp.sum(rollout.action != state.num_updates.astype(jnp.float32))
        return state.replace(num_updates=state.num_updates + 1), {"stale_actions": stale}


@pytest.mark.parametrize("driver", ["jax", "host"])
def test_each_rollout_is_taken_with_the_policy_that_learns_from_it(driver):
    if driver == "jax":
        _, metrics = jax.jit(make_train(Counter(), "Pendulum-v1", SHAPE))(jax.random.key(0))
    else:
        _, metrics = train_gymnasium(Counter(), "Pendulum-v1", SHAPE, seed=0, num_seeds=2)
    stale = np.asarray(metrics["stale_actions"])
    assert stale.size >= SHAPE.layout.num_collections
    np.testing.assert_array_equal(stale, 0)

"""Every action comes from the policy as it is when the action is taken, on both drivers: an
agent whose action is its own update count sees, in each update, only actions taken with that
count (none left over from the policy before the last update). On-policy: every action of the
rollout it learns from. Off-policy: the newest transitions in the replay buffer, each step
acted after the previous step's updates (Tianshou collects with the policy its last update
left)."""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import jaxrl
from jaxrl.algorithms.protocol import LearningMode
from jaxrl.replay import ReplayBuffer, Transition
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


# Off-policy: one env step per collection, one update per collection.
OFF_POLICY_SHAPE = TrainConfig(
    num_envs=2, num_steps=1, total_steps=24, eval_every=8, eval_episodes=1
)


class ReplayCounter(Counter):
    """The off-policy :class:`Counter`: its batch is the whole buffer, and its update reports
    how many of the newest transition's actions came from another update count."""

    learning_mode: ClassVar[LearningMode] = "off_policy"
    warmup_steps: int = struct.field(pytree_node=False, default=0)
    update_per_step: float = struct.field(pytree_node=False, default=0.5)

    def init_training(self, key, observation_space, action_space, num_envs):
        obs = jnp.zeros((num_envs, *observation_space.shape), jnp.float32)
        flags = jnp.zeros(num_envs, bool)
        example = Transition(obs, jnp.zeros((num_envs, 1)), jnp.zeros(num_envs), flags, flags, obs)
        return CounterState(jnp.zeros((), jnp.int32)), ReplayBuffer.create(64, example)

    def sample_batch(self, buffer, key):
        return buffer

    def update(self, state, buffer, key):
        newest = buffer.data.action[(buffer.position - 1) % buffer.capacity]
        stale = jnp.sum(newest != state.num_updates.astype(jnp.float32))
        return state.replace(num_updates=state.num_updates + 1), {"stale_actions": stale}


@pytest.mark.parametrize("driver", ["jax", "host"])
@pytest.mark.parametrize(
    ("agent", "shape"), [(Counter(), SHAPE), (ReplayCounter(), OFF_POLICY_SHAPE)],
    ids=["on-policy", "off-policy"],
)  # fmt: skip
def test_each_action_comes_from_the_policy_the_last_update_left(agent, shape, driver):
    if driver == "jax":
        _, metrics = jax.jit(make_train(agent, "Pendulum-v1", shape))(jax.random.key(0))
    else:
        _, metrics = train_gymnasium(agent, "Pendulum-v1", shape, seed=0, num_seeds=2)
    stale = np.asarray(metrics["stale_actions"])
    assert stale.size >= shape.layout.num_collections
    np.testing.assert_array_equal(stale, 0)

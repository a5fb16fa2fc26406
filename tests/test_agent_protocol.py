"""A new algorithm needs its own module and a registry entry, nothing else: a tiny one,
defined here, trains through both drivers and the ``jaxrl`` command."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import jaxrl
from jaxrl.algorithms import registry
from jaxrl.algorithms.protocol import Agent, LearningMode, OffPolicyAgent
from jaxrl.core.actions import map_action
from jaxrl.spaces import describe_space
from jaxrl.training import TrainConfig, make_train
from jaxrl.training.gymnasium_driver import train_gymnasium


class TinyState(struct.PyTreeNode):
    mean: jax.Array
    low: jax.Array
    high: jax.Array
    num_updates: jax.Array


class Tiny(struct.PyTreeNode):
    """A state-independent Gaussian policy whose mean follows reward-weighted actions (a
    one-parameter evolution strategy): the smallest on-policy learner.

    Attributes:
      step_size: how far the mean moves per update.
      sigma: exploration standard deviation.
    """

    learning_mode: ClassVar[LearningMode] = "on_policy"

    step_size: float = 0.5
    sigma: float = 0.5

    @property
    def evaluates_deterministically(self) -> bool:
        return True

    def init_training(self, key, observation_space, action_space, num_envs) -> tuple[Any, None]:
        spec = describe_space(action_space, "action_space")
        low, high = jnp.asarray(spec.low), jnp.asarray(spec.high)
        return TinyState(jnp.zeros(spec.shape), low, high, jnp.zeros((), jnp.int32)), None

    def _env_action(self, state: TinyState, action: jax.Array) -> jax.Array:
        return map_action(action, state.low, state.high, True, "clip")

    def explore(self, state, obs, key, env_steps):
        action = state.mean + self.sigma * jax.random.normal(key, (obs.shape[0], *state.mean.shape))
        return state, jaxrl.ActionSample(action, self._env_action(state, action))

    def policy(self, state, obs, key, deterministic):
        action = jnp.broadcast_to(state.mean, (obs.shape[0], *state.mean.shape))
        return self._env_action(state, action)

    def update(self, state, rollout, key):
        reward = rollout.reward
        weight = (reward - reward.mean()) / (reward.std() + 1e-8)
        step = jnp.mean(weight[..., None] * (rollout.action - state.mean), axis=(0, 1))
        state = state.replace(mean=state.mean + self.step_size * step)
        return state.replace(num_updates=state.num_updates + 1), {"reward": reward.mean()}


@pytest.fixture
def tiny():
    info = registry.register(registry.AlgorithmInfo("tiny", Tiny, "Tiny (a test algorithm)"))
    yield info
    registry.unregister("tiny")


def test_the_algorithms_follow_the_protocol():
    for info in registry.algorithms().values():
        agent = info.cls()
        assert isinstance(agent, Agent)
        assert isinstance(agent, OffPolicyAgent) == info.off_policy
    assert isinstance(Tiny(), Agent) and not isinstance(Tiny(), OffPolicyAgent)
    # The drivers name what they were given instead of an agent.
    no_agent = r"agent must be an algorithm object \(jaxrl.NPG\(\), .*got str 'trpo'"
    with pytest.raises(TypeError, match=no_agent):
        make_train("trpo", "Pendulum-v1")
    with pytest.raises(TypeError, match=no_agent):
        train_gymnasium("trpo", "Pendulum-v1")


def test_a_new_algorithm_trains_on_both_drivers(tiny):
    config = TrainConfig(num_envs=4, num_steps=16, total_steps=128, eval_every=64, eval_episodes=2)
    states, metrics = jax.jit(jax.vmap(make_train(Tiny(), "Pendulum-v1", config)))(
        jax.random.split(jax.random.key(0), 2)
    )
    np.testing.assert_array_equal(np.asarray(states.num_updates), [2, 2])
    assert metrics["eval/return"].shape == (2, 2) and np.isfinite(metrics["reward"]).all()
    state, host = train_gymnasium(
        Tiny(),
        "Pendulum-v1",
        num_envs=2,
        num_steps=16,
        total_steps=64,
        eval_every=32,
        eval_episodes=1,
        num_seeds=2,
    )
    np.testing.assert_array_equal(np.asarray(state.num_updates), [2, 2])
    assert host["eval/return"].shape == (2, 2)


def test_a_new_algorithm_is_a_command(tiny, tmp_path, capsys):
    from jaxrl.cli import main
    from jaxrl.runs import load_run

    run_dir = tmp_path / "run"
    args = ["train", "tiny", "--env", "Pendulum-v1", "--step-size", "0.25", "--num-seeds", "2"]
    args += ["--num-envs", "2", "--num-steps", "16", "--total-steps", "64", "--eval-every", "32"]
    assert main([*args, "--eval-episodes", "1", "--run-dir", str(run_dir)]) == 0
    assert "Finished TINY on Pendulum-v1: 2 seeds" in capsys.readouterr().out
    loaded = load_run(run_dir)
    assert loaded.config.hyperparameters == {"step_size": 0.25, "sigma": 0.5}
    np.testing.assert_array_equal(np.asarray(loaded.state.num_updates), [2, 2])


def test_space_descriptions_are_hashable_static_data():
    """A SpaceSpec is static data of the train states and a key of the drivers' programs."""
    box = describe_space(gymnasium.spaces.Box(-np.ones((2, 3)), np.ones((2, 3))))
    assert box.low == ((-1.0,) * 3,) * 2 and box.high == ((1.0,) * 3,) * 2
    same = describe_space(gymnasium.spaces.Box(-1.0, 1.0, (2, 3)))
    assert len({box, same, describe_space(gymnasium.spaces.Discrete(3))}) == 2

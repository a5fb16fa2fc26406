"""Observation normalization in both drivers, checked against a NumPy recomputation of what
the agent must see (Tianshou's running mean/std, clipped to +-10: jaxrl/core/normalization.py).

A deterministic environment with a known observation sequence and a recording agent make
every normalized observation visible:

* the environment's observation after step ``t`` of an episode is ``[1 + t, 2 + a t / 2]``
  with ``a`` the first action component (the agent sends its environment's index, so the
  environments differ), ``[1, 2]`` at reset; episodes are truncated after ``LENGTH`` steps;
  the reward is the second action component;
* the agent records, in its state, every observation handed to ``explore`` and every rollout
  handed to ``update``; its actions send ``(index, summary(obs))``, so an evaluation return is
  the sum of ``summary`` over the normalized observations the policy saw.

The NumPy side replays the same observations in float64 (Chan's merge of batch statistics,
``clip((x - mean) / sqrt(var + eps32), -10, 10)``). Checked for the jitted driver
(:mod:`jaxrl.training.jax_driver`) and the host driver
(:mod:`jaxrl.training.gymnasium_driver`): the observations ``explore`` got, the rollouts'
``obs``/``next_obs`` (final observations normalized with the statistics that saw the step),
the evaluation returns (frozen statistics), and the statistics after each period (training
observations only: evaluation leaves them unchanged).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import spaces

import jaxrl
from jaxrl.algorithms.protocol import LearningMode
from jaxrl.core.normalization import OBS_CLIP, OBS_EPS
from jaxrl.training import TrainConfig, make_train_loop
from jaxrl.training.gymnasium_driver import HostLoop

LENGTH = 3  # steps per episode (truncated)
NUM_ENVS, NUM_STEPS = 4, 2
CONFIG = TrainConfig(
    num_envs=NUM_ENVS,
    num_steps=NUM_STEPS,
    total_steps=32,
    eval_every=16,
    eval_episodes=3,
    normalize_obs=True,
)
VECTOR_STEPS = CONFIG.total_steps // NUM_ENVS  # 8 vector steps, 4 collections, 2 periods
COLLECTIONS = VECTOR_STEPS // NUM_STEPS
RESET_OBS = (1.0, 2.0)
GYM_ID = "jaxrl-test/CountingObservations-v0"


def observation(t: Any, index: Any) -> np.ndarray:
    """The environment's observation at step ``t`` of an episode driven by action ``index``."""
    return np.array([1.0 + t, 2.0 + 0.5 * index * t])


def summary(obs: Any) -> Any:
    """What the agent reports back as its reward: a weighted sum of the (normalized)
    observation's components (weights that cannot cancel)."""
    return obs[..., 0] + 2.0 * obs[..., 1]


# ---------------------------------------------------------------------------------------------
# The environment (jitted and host versions) and the recording agent
# ---------------------------------------------------------------------------------------------


@struct.dataclass
class CountingParams:
    max_steps_in_episode: int = LENGTH


@struct.dataclass
class CountingState:
    t: jax.Array


class CountingEnv:
    """The deterministic environment with gymnax's interface (auto-resets in ``step``)."""

    default_params = CountingParams()

    def _obs(self, t: jax.Array, index: jax.Array) -> jax.Array:
        t = t.astype(jnp.float32)
        return jnp.stack([1.0 + t, 2.0 + 0.5 * index * t]).astype(jnp.float32)

    def reset(self, key: jax.Array, params: CountingParams) -> tuple[jax.Array, CountingState]:
        t = jnp.zeros((), jnp.int32)
        return self._obs(t, jnp.float32(0.0)), CountingState(t)

    def step(self, key, state: CountingState, action: jax.Array, params: CountingParams):
        t = state.t + 1
        final = self._obs(t, action[0])
        truncated = t >= params.max_steps_in_episode
        reset_obs, reset_state = self.reset(key, params)
        obs = jnp.where(truncated, reset_obs, final)
        state = CountingState(jnp.where(truncated, reset_state.t, t))
        info = {"final_observation": final}
        return obs, state, action[1], jnp.asarray(False), truncated, info

    def observation_space(self, params: CountingParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (2,), jnp.float32)

    def action_space(self, params: CountingParams) -> spaces.Box:
        return spaces.Box(-1e3, 1e3, (2,), jnp.float32)


class CountingGymEnv(gym.Env):
    """The same environment for gymnasium (the host driver)."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(-1e3, 1e3, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return observation(0, 0).astype(np.float32), {}

    def step(self, action: np.ndarray):
        self.t += 1
        obs = observation(self.t, float(action[0])).astype(np.float32)
        return obs, float(action[1]), False, self.t >= LENGTH, {}


class RecorderState(struct.PyTreeNode):
    explored: jax.Array  # [VECTOR_STEPS + 1, N, 2] what explore got, by vector step
    rollout_obs: jax.Array  # [COLLECTIONS, T, N, 2] what update got
    rollout_next_obs: jax.Array
    num_updates: jax.Array


class Recorder(struct.PyTreeNode):
    """An on-policy agent that learns nothing and records what it is handed."""

    learning_mode: ClassVar[LearningMode] = "on_policy"

    @property
    def evaluates_deterministically(self) -> bool:
        return True

    def init_training(self, key, observation_space, action_space, num_envs):
        nan = jnp.full((COLLECTIONS, NUM_STEPS, num_envs, 2), jnp.nan, jnp.float32)
        explored = jnp.full((VECTOR_STEPS + 1, num_envs, 2), jnp.nan, jnp.float32)
        return RecorderState(explored, nan, nan, jnp.zeros((), jnp.int32)), None

    def _actions(self, obs: jax.Array) -> jax.Array:
        index = jnp.arange(obs.shape[0], dtype=jnp.float32)
        return jnp.stack([index, summary(obs)], axis=-1)

    def explore(self, state: RecorderState, obs, key, env_steps):
        explored = state.explored.at[env_steps // obs.shape[0]].set(obs, mode="drop")
        action = self._actions(obs)
        return state.replace(explored=explored), jaxrl.ActionSample(action, action)

    def policy(self, state, obs, key, deterministic):
        return self._actions(obs)

    def update(self, state: RecorderState, rollout, key):
        i = state.num_updates
        state = state.replace(
            rollout_obs=state.rollout_obs.at[i].set(rollout.obs),
            rollout_next_obs=state.rollout_next_obs.at[i].set(rollout.next_obs),
            num_updates=i + 1,
        )
        return state, {"reward": jnp.mean(rollout.reward)}


# ---------------------------------------------------------------------------------------------
# The NumPy reference
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class NumpyStats:
    """Tianshou's running mean/std in float64 (initial mean 0, var 1, count 0)."""

    mean: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))
    var: np.ndarray = dataclasses.field(default_factory=lambda: np.ones(2))
    count: float = 0.0

    def update(self, batch: np.ndarray) -> None:
        n = batch.shape[0]
        batch_mean, batch_var = batch.mean(axis=0), batch.var(axis=0)
        total = self.count + n
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean, self.var, self.count = self.mean + delta * n / total, m2 / total, total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        return np.clip((x - self.mean) / np.sqrt(self.var + OBS_EPS), -OBS_CLIP, OBS_CLIP)


@dataclasses.dataclass
class Expected:
    """What the agent must have been handed, and the statistics after each period."""

    explored: np.ndarray  # [VECTOR_STEPS + 1, N, 2]
    rollout_obs: np.ndarray  # [COLLECTIONS, T, N, 2]
    rollout_next_obs: np.ndarray
    eval_returns: list[float]  # per period
    stats: list[NumpyStats]  # per period (copies)


def expected_run() -> Expected:
    """Replay the run: training observations update the statistics as they arrive, final
    observations are normalized with the statistics that saw their step, evaluation uses the
    frozen statistics at the end of each period."""
    n = NUM_ENVS
    index = np.arange(n, dtype=np.float64)
    stats = NumpyStats()
    raw = np.tile(RESET_OBS, (n, 1))
    stats.update(raw)
    explored, next_obs = [stats.normalize(raw)], []
    eval_returns, period_stats = [], []
    steps_per_period = CONFIG.eval_every // n
    t = 0
    for step in range(1, VECTOR_STEPS + 1):
        t += 1
        final = np.stack([observation(t, i) for i in index])
        if t >= LENGTH:
            t, raw = 0, np.tile(RESET_OBS, (n, 1))
        else:
            raw = final
        stats.update(raw)
        explored.append(stats.normalize(raw))
        next_obs.append(stats.normalize(final))
        if step % steps_per_period == 0:
            eval_returns.append(expected_eval_return(stats))
            period_stats.append(dataclasses.replace(stats))
    explored = np.stack(explored)
    shape = (COLLECTIONS, NUM_STEPS, n, 2)
    return Expected(
        explored,
        explored[:VECTOR_STEPS].reshape(shape),
        np.stack(next_obs).reshape(shape),
        eval_returns,
        period_stats,
    )


def expected_eval_return(stats: NumpyStats) -> float:
    """The mean evaluation return: episode ``e`` acts with index ``e``; the reward of each of
    its ``LENGTH`` steps is ``summary`` of the normalized observation it acted on."""
    episodes = CONFIG.eval_episodes
    total = 0.0
    for e in range(episodes):
        for t in range(LENGTH):
            raw = np.asarray(RESET_OBS) if t == 0 else observation(t, e)
            total += summary(stats.normalize(raw))
    return total / episodes


EXPECTED = expected_run()
TOLERANCE = dict(rtol=1e-5, atol=1e-4)  # float32 against float64, values up to 10


def assert_stats(stats: Any, expected: NumpyStats) -> None:
    """The driver's statistics (any leading axes of size 1 dropped) equal NumPy's."""
    assert float(np.squeeze(stats.count)) == expected.count
    np.testing.assert_allclose(np.squeeze(np.asarray(stats.mean)), expected.mean, **TOLERANCE)
    np.testing.assert_allclose(np.squeeze(np.asarray(stats.var)), expected.var, **TOLERANCE)


def assert_recorded(state: RecorderState, explored_rows: int) -> None:
    """The recorded observations equal NumPy's (``explored_rows``: vector steps explore saw)."""
    np.testing.assert_allclose(
        np.asarray(state.explored)[:explored_rows], EXPECTED.explored[:explored_rows], **TOLERANCE
    )
    np.testing.assert_allclose(np.asarray(state.rollout_obs), EXPECTED.rollout_obs, **TOLERANCE)
    np.testing.assert_allclose(
        np.asarray(state.rollout_next_obs), EXPECTED.rollout_next_obs, **TOLERANCE
    )


def test_the_reference_is_not_trivial():
    """The recomputed observations are not the raw ones, reach the clip, and vary."""
    raw_after_reset = np.stack([observation(1, i) for i in range(NUM_ENVS)])
    assert not np.allclose(EXPECTED.explored[1], raw_after_reset)
    assert np.max(np.abs(EXPECTED.explored)) <= OBS_CLIP
    assert len({round(r, 3) for r in EXPECTED.eval_returns}) == 2
    assert EXPECTED.stats[-1].count == (VECTOR_STEPS + 1) * NUM_ENVS


# ---------------------------------------------------------------------------------------------
# The drivers
# ---------------------------------------------------------------------------------------------


def test_jitted_driver_hands_the_agent_normalized_observations():
    """jax_driver: explore's observations, the rollouts, evaluation and the statistics."""
    loop = make_train_loop(Recorder(), CountingEnv(), CONFIG)
    assert loop.num_periods == 2
    carry = jax.jit(loop.init)(jax.random.key(0))
    assert_stats(carry.obs_stats, NumpyStats(np.asarray(RESET_OBS), np.zeros(2), NUM_ENVS))
    run_period = jax.jit(loop.run_period)
    for period in range(loop.num_periods):
        carry, metrics = run_period(carry)
        # The statistics saw the training observations only (evaluation leaves them as
        # they were), and the evaluation policy saw observations normalized by them.
        assert_stats(carry.obs_stats, EXPECTED.stats[period])
        np.testing.assert_allclose(
            float(metrics["eval/return"]), EXPECTED.eval_returns[period], **TOLERANCE
        )
    assert int(carry.state.num_updates) == COLLECTIONS
    assert_recorded(carry.state, VECTOR_STEPS)
    # The observation carried to the next step is the normalized one.
    np.testing.assert_allclose(np.asarray(carry.obs), EXPECTED.explored[-1], **TOLERANCE)


@pytest.fixture(scope="module")
def gym_id():
    gym.register(GYM_ID, entry_point=CountingGymEnv)
    yield GYM_ID
    gym.registry.pop(GYM_ID, None)


def test_host_driver_hands_the_agent_normalized_observations(gym_id):
    """gymnasium_driver: the same checks, for two seeds trained together."""
    settings = dataclasses.replace(CONFIG, seed=0, num_seeds=2, env_backend="gymnasium")
    with HostLoop(Recorder(), gym_id, settings) as loop:
        assert loop.layout.num_periods == 2
        carry = loop.start(loop.init(), 0)
        for period in range(loop.layout.num_periods):
            carry, metrics = loop.run_period(carry)
            for seed in range(2):
                stats = jax.tree_util.tree_map(lambda x, s=seed: x[s], carry.obs_stats)
                assert_stats(stats, EXPECTED.stats[period])
            np.testing.assert_allclose(
                np.asarray(metrics["eval/return"]), [EXPECTED.eval_returns[period]] * 2, **TOLERANCE
            )
    for seed in range(2):
        state = jax.tree_util.tree_map(lambda x, s=seed: x[s], carry.state)
        assert int(state.num_updates) == COLLECTIONS
        # The host driver also acts on the observation after the last collection.
        assert_recorded(state, VECTOR_STEPS + 1)


class ParamsAtResetEnv(CountingEnv):
    """Starts each episode at ``t = max_steps_in_episode - 1``: a reset that reads its
    parameters (as custom environments may)."""

    def reset(self, key: jax.Array, params: CountingParams) -> tuple[jax.Array, CountingState]:
        t = jnp.asarray(params.max_steps_in_episode - 1, jnp.int32)
        return self._obs(t, jnp.float32(0.0)), CountingState(t)


def test_the_jitted_driver_resets_with_the_given_env_params():
    """The first observations (before normalization) come from a reset with the run's
    ``env_params``, not the environment's defaults."""
    params = CountingParams(max_steps_in_episode=7)
    plain = TrainConfig(num_envs=2, num_steps=2, total_steps=4, eval_every=4, eval_episodes=1)
    carry = make_train_loop(Recorder(), ParamsAtResetEnv(), plain, env_params=params).init(
        jax.random.key(0)
    )
    np.testing.assert_array_equal(carry.obs, [[7.0, 2.0], [7.0, 2.0]])

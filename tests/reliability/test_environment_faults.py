"""A gymnasium environment that raises or returns malformed data mid-run: the host driver
stops with an error naming the environment and the step, and the run's checkpoints, written
before the fault, still load (finite parameters, nothing half-written)."""

from __future__ import annotations

import itertools

import gymnasium as gym
import jax
import numpy as np
import pytest
from reliability_helpers import all_finite

from jaxrl.config import RunConfig
from jaxrl.runs import CheckpointStore, RunDir, load_run, read_csv, train_run
from jaxrl.training.gymnasium_driver import EnvironmentError_

# The run first evaluates the initial policy (one 200-step episode), then trains 2 envs x 4
# steps per update, 2 updates per period (16 steps), then evaluates one 200-step episode:
# period 1 ends after 416 calls to `step` over all instances. The fault comes at call 430,
# during period 2's training, after period 1's checkpoint.
FAULT_AT_CALL = 430
STEP_CALLS = itertools.count(1)


class FaultyPendulum(gym.Wrapper):
    """Pendulum that, at the ``FAULT_AT_CALL``-th step over all instances, raises, returns a
    NaN observation or returns an observation of the wrong shape."""

    def __init__(self, fault: str):
        super().__init__(gym.make("Pendulum-v1"))
        self.fault = fault

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if next(STEP_CALLS) == FAULT_AT_CALL:
            if self.fault == "raise":
                raise RuntimeError("simulator exploded")
            if self.fault == "nan":
                obs = np.full_like(obs, np.nan)
            if self.fault == "shape":
                obs = obs[:2]
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("fault", ["raise", "nan", "shape"])
def test_faulty_environment_stops_the_run_and_its_checkpoint_still_loads(fault, tmp_path):
    global STEP_CALLS
    STEP_CALLS = itertools.count(1)
    env_id = f"FaultyPendulum-{fault}-v0"
    gym.register(env_id, entry_point=lambda: FaultyPendulum(fault))
    config = RunConfig(
        algo="trpo",
        env=env_id,
        backend="gymnasium",
        num_envs=2,
        num_steps=4,
        total_steps=64,
        eval_every=16,
        eval_episodes=1,
        seed=0,
        num_seeds=1,
        checkpoint_every=1,
        hyperparameters={"hidden_sizes": [8]},
    )
    run_dir = RunDir.create(tmp_path / "run")
    with pytest.raises(EnvironmentError_, match=rf"{env_id}.*step \d+"):
        train_run(config, run_dir, progress=False)

    # Period 1 was checkpointed before the fault; nothing of period 2 was.
    assert CheckpointStore(run_dir.checkpoints).steps() == [1]
    loaded = load_run(run_dir.path)
    assert loaded.metadata["env_steps"] == 16
    assert all_finite(loaded.state.actor.params) and all_finite(loaded.state.critic.params)
    assert int(loaded.state.num_updates[0]) == 2  # states have a leading seed axis
    # The loaded policy acts.
    state = jax.tree_util.tree_map(lambda x: x[0], loaded.state)
    action = loaded.agent.policy(state, np.zeros((1, 3), np.float32), jax.random.key(0), False)
    assert np.all(np.isfinite(np.asarray(action)))
    assert read_csv(run_dir.evals_csv)["env_steps"].tolist() == [0, 16]

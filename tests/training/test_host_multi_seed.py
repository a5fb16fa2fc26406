"""The host driver with many seeds: seed i of a stacked run is the single run with seed
``seed + i``; a run can start from a given carry; observation statistics live in the carry."""

from __future__ import annotations

import gymnasium as gym
import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.training.gymnasium_driver import init_host_carry, train_gymnasium

ON_POLICY = dict(
    num_envs=2, num_steps=16, total_steps=64, eval_every=32, eval_episodes=2, normalize_obs=True
)
DDPG_RUN = dict(num_envs=2, num_steps=2, total_steps=32, eval_every=16, eval_episodes=1)
# Damping 1.0: a well-conditioned Fisher keeps vmapped-vs-single rounding at rounding (see
# tests/training/test_jax_driver.py).
AGENTS = {
    "trpo": (jaxrl.TRPO(hidden_sizes=(16,), return_scaling=True, damping=1.0), ON_POLICY),
    "npg": (jaxrl.NPG(hidden_sizes=(16,), damping=1.0), ON_POLICY),
    "ddpg": (
        jaxrl.DDPG(
            hidden_sizes=(16,), batch_size=8, buffer_size=64, warmup_steps=8, update_per_step=1.0
        ),
        DDPG_RUN,
    ),
}


def assert_trees_close(a, b, rtol=1e-4, atol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_seed_i_of_a_stacked_run_equals_the_single_run(name):
    agent, run = AGENTS[name]
    states, metrics = train_gymnasium(agent, "Pendulum-v1", seed=5, num_seeds=3, **run)
    assert metrics["eval/return"].shape == (3, 2)
    assert metrics["env_steps"].shape[0] == 3
    for i in (0, 2):
        state, single = train_gymnasium(agent, "Pendulum-v1", seed=5 + i, **run)
        seed_state = jax.tree_util.tree_map(lambda x, i=i: x[i], states)
        # vmap batches the seeds' float reductions differently: float32 rounding.
        assert_trees_close(seed_state.actor.params, state.actor.params, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(metrics["eval/return"][i], single["eval/return"], rtol=1e-3)
        np.testing.assert_array_equal(metrics["env_steps"][i], single["env_steps"])
    # Different seeds learn differently.
    assert not np.allclose(metrics["eval/return"][0], metrics["eval/return"][1])


def test_a_run_starts_from_the_given_carry_and_reports_it():
    agent, run = AGENTS["trpo"]
    seen = []
    train_gymnasium(agent, "Pendulum-v1", num_seeds=2, progress=seen.append, **run)
    first = seen[0]
    assert set(first) >= {"env_steps", "eval_return", "eval_returns", "carry", "metrics"}
    carry = first["carry"]
    # Statistics of every training observation so far: 2 envs x 16 steps x 2 collections
    # (+ the 2 reset observations), per seed.
    np.testing.assert_array_equal(np.asarray(carry.obs_stats.count), [34.0, 34.0])
    assert first["metrics"]["env_steps"].shape == (2, 1)  # one collection per period
    resumed = []
    train_gymnasium(
        agent,
        "Pendulum-v1",
        num_seeds=2,
        initial=carry,
        progress=resumed.append,
        **{**run, "total_steps": 32},
    )
    stats = resumed[0]["carry"].obs_stats
    np.testing.assert_array_equal(np.asarray(stats.count), [34.0 + 34.0, 34.0 + 34.0])
    np.testing.assert_array_equal(
        np.asarray(resumed[0]["carry"].state.num_updates), np.asarray(carry.state.num_updates) + 1
    )


@pytest.mark.parametrize("name", ["trpo", "ddpg"])
def test_other_seeds_and_resumed_runs_call_the_same_programs(name):
    """The seeds' keys are arguments of the jitted programs, not constants in them, and the
    programs are built once per process for the agent and the run's shape: a second run of
    other seeds (a resumed run's are: ``seed + start_steps + i``) traces, lowers and compiles
    nothing. A collection's first observation is placed alike whichever program made it
    (else ``learn`` compiled twice in a run)."""
    from jaxrl.training.gymnasium_driver import _Programs
    from jaxrl.training.sharding import SeedPlacement

    agent, run = AGENTS[name]
    events: list[str] = []

    def count(event: str, duration: float, **_: object) -> None:
        events.append(event.rsplit("/", 1)[-1])

    train_gymnasium(agent, "Pendulum-v1", seed=0, num_seeds=2, **run)
    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        train_gymnasium(agent, "Pendulum-v1", seed=1000, num_seeds=2, **run)
    finally:
        jax.monitoring.unregister_event_duration_listener(count)
    assert not any(e.endswith("_duration") for e in events), events

    box = gym.spaces.Box(-1.0, 1.0, (3,))
    carry = init_host_carry(agent, [0, 1], box, gym.spaces.Box(-2.0, 2.0, (1,)), 2, False)
    raw = np.zeros((2, 2, 3), np.float32)
    programs = _Programs(agent, [0, 1], 1, run["num_steps"])
    carry = SeedPlacement().put(carry)  # as HostLoop places it
    _, _, observed, final = programs.observe(carry, raw, raw, 4)
    _, _, acted, _ = programs.observe_and_act(carry, raw, raw, 4)  # donates the carry
    assert acted.committed and observed.committed and final.committed


def test_off_policy_carry_holds_one_buffer_per_seed():
    agent, run = AGENTS["ddpg"]
    seen = []
    train_gymnasium(agent, "Pendulum-v1", num_seeds=2, progress=seen.append, **run)
    buffer = seen[-1]["carry"].buffer
    np.testing.assert_array_equal(np.asarray(buffer.size), [32 // 2, 32 // 2])  # per env
    env = gym.make("Pendulum-v1")
    spaces = env.observation_space, env.action_space
    template = jax.eval_shape(
        lambda: init_host_carry(agent, [0, 1], *spaces, 2, normalize_obs=False)
    )
    assert jax.tree_util.tree_structure(template) == jax.tree_util.tree_structure(seen[-1]["carry"])


def test_num_seeds_must_be_positive():
    with pytest.raises(ValueError, match="num_seeds must be a positive integer or None"):
        train_gymnasium(jaxrl.TRPO(), "Pendulum-v1", num_seeds=0, **ON_POLICY)


def test_host_checkpoints_keep_the_observation_statistics(tmp_path):
    """A host run stopped after one period and resumed: its statistics hold the observations
    of both processes (restored from the checkpoint, not started afresh)."""
    from jaxrl.config import RunConfig
    from jaxrl.runs import RunDir, load_run, train_run

    config = RunConfig.from_preset(
        "trpo",
        "Pendulum-v1",
        "default",
        hyperparameters={"hidden_sizes": (8,)},
        num_envs=2,
        num_steps=16,
        total_steps=64,
        eval_every=32,
        eval_episodes=1,
        num_seeds=2,
        checkpoint_every=1,
        normalize_obs=True,
    )
    run_dir = RunDir.create(tmp_path / "run")
    train_run(config, run_dir, progress=False, stop_after_periods=1)
    first = load_run(run_dir.path).carry.obs_stats
    np.testing.assert_array_equal(np.asarray(first.count), [2 + 32, 2 + 32])
    train_run(config, run_dir, resume=True, progress=False)
    loaded = load_run(run_dir.path)
    # Each process starts with 2 reset observations, then 32 per period.
    np.testing.assert_array_equal(np.asarray(loaded.carry.obs_stats.count), [68, 68])
    assert loaded.config.normalize_obs and loaded.metadata["env_steps"] == 64

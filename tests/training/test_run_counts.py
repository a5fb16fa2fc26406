"""A run does what its configuration promises: one arithmetic (``RunLayout``) gives the
collections, the env steps, the evaluation points and the learning-rate schedule's length,
and both drivers run exactly those (the agent's own update count included), over a grid of
shapes: whole periods, a budget that leaves a shorter last period and a remainder smaller
than a collection, a one-collection run, and DDPG's warm-up straddling a period."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxrl.config.run_config import RunConfig, linear_schedule
from jaxrl.config.settings import RunLayout, evaluation_interval
from jaxrl.training import make_train
from jaxrl.training.gymnasium_driver import train_gymnasium

TINY_TRPO = {"hidden_sizes": [8], "lr_schedule": "linear", "repeat": 1}
TINY_DDPG = {"hidden_sizes": [8], "batch_size": 8, "buffer_size": 512, "warmup_steps": 56}

# (algo, hyperparameters, num_envs, num_steps, total_steps, eval_every) -> what the run is.
GRID = {
    "whole periods": ("trpo", TINY_TRPO, 2, 8, 96, 32),  # 6 collections, 3 periods of 2
    "shorter last period": ("trpo", TINY_TRPO, 2, 8, 7 * 16 + 5, 48),  # 7 = 3 + 3 + 1
    "one collection": ("trpo", TINY_TRPO, 2, 8, 16, 1000),
    "ddpg warm-up straddles a period": ("ddpg", TINY_DDPG, 2, 8, 12 * 16, 80),  # 5 + 5 + 2
    # The presets' own shapes (pendulum NPG: 16 x 128; mujoco TRPO: 16 x 64, normalized
    # observations) with budgets that leave a remainder; the interval adapts to the budget
    # (about 10 evaluations, at least one collection each).
    "pendulum preset": ("npg", TINY_TRPO, "pendulum", 3 * 2048 + 100),
    "mujoco preset": ("trpo", TINY_TRPO, "mujoco", 5 * 1024 + 1000),
}
EXPECTED = {  # collections, evaluation points, agent updates
    "whole periods": (6, [32, 64, 96], 6),
    "shorter last period": (7, [48, 96, 112], 7),
    "one collection": (1, [16], 1),
    # collections start at 0, 16, ..., 176; those before 56 env steps (4) are warm-up: the
    # updates of 8 collections take effect, update_per_step 0.125 x 16 = 2 each
    "ddpg warm-up straddles a period": (12, [80, 160, 192], 8 * 2),
    "pendulum preset": (3, [2048, 4096, 6144], 3),
    "mujoco preset": (5, [1024, 2048, 3072, 4096, 5120], 5),
}


def _config(case: str, backend: str) -> RunConfig:
    if len(GRID[case]) == 4:
        algo, hyper, preset, total_steps = GRID[case]
        return RunConfig.from_preset(
            algo,
            "Pendulum-v1",
            preset,
            backend=backend,
            hyperparameters=hyper,
            total_steps=total_steps,
            eval_episodes=1,
        )
    algo, hyper, num_envs, num_steps, total_steps, eval_every = GRID[case]
    return RunConfig(
        algo=algo,
        env="Pendulum-v1",
        backend=backend,
        num_envs=num_envs,
        num_steps=num_steps,
        total_steps=total_steps,
        eval_every=eval_every,
        eval_episodes=1,
        seed=0,
        num_seeds=1,
        checkpoint_every=0,
        hyperparameters=hyper,
    )


@pytest.mark.parametrize("case", sorted(GRID))
def test_the_configuration_promises_the_counts(case):
    config = _config(case, "jax")
    collections, evals, updates = EXPECTED[case]
    layout = config.layout
    assert layout.num_collections == collections
    assert list(layout.eval_steps) == evals
    assert layout.total_steps == collections * layout.steps_per_collect
    assert 0 <= config.total_steps - layout.total_steps < layout.steps_per_collect
    assert config.num_agent_updates() == updates
    counts = config.to_dict()["counts"]  # what config.json records
    assert counts["env_steps"] == layout.total_steps and counts["eval_env_steps"] == evals
    assert counts["agent_updates"] == updates


def _driver_run(case: str, backend: str) -> tuple[RunConfig, object, dict]:
    config = _config(case, backend)
    agent = config.make_agent()
    settings = config.driver_settings  # the one configuration, as both drivers take it
    if backend == "jax":
        state, metrics = jax.jit(make_train(agent, "Pendulum-v1", settings))(jax.random.key(0))
    else:
        state, metrics = train_gymnasium(agent, "Pendulum-v1", settings, seed=0)
    return config, state, jax.device_get(metrics)


@pytest.mark.parametrize("backend", ["jax", "gymnasium"])
@pytest.mark.parametrize("case", sorted(GRID))
def test_both_drivers_run_the_promised_counts(case, backend):
    config, state, metrics = _driver_run(case, backend)
    layout = config.layout
    spc = layout.steps_per_collect
    np.testing.assert_array_equal(
        metrics["env_steps"], spc * np.arange(1, layout.num_collections + 1)
    )
    np.testing.assert_array_equal(metrics["eval/env_steps"], layout.eval_steps)
    # The agent's own count of the updates that took effect is the schedule's length.
    assert int(state.num_updates) == config.num_agent_updates() == EXPECTED[case][2]


def test_the_linear_schedule_reaches_zero_on_the_last_update():
    """The mujoco preset at 1M steps: 976 collections of 1,024 env steps (the budget leaves
    576 env steps, less than a collection), 39 periods of 25 and a last one of 1 (40
    evaluations, the last after 999,424 env steps); the learning rate decays over exactly
    those 976 updates: the factor after the last update is 0, before it still positive."""
    config = RunConfig.from_preset("trpo", "Hopper-v5", "mujoco", total_steps=1_000_000)
    layout = config.layout
    assert (layout.num_collections, layout.collections_per_period) == (976, 25)
    assert layout.period_collections == (25,) * 39 + (1,)
    assert layout.eval_steps[-1] == layout.total_steps == 999_424
    assert config.num_agent_updates() == 976
    schedule = linear_schedule(config.num_agent_updates())
    assert float(schedule(976)) == 0.0 and float(schedule(975)) > 0.0


def test_a_short_budget_keeps_about_ten_evaluations():
    """Given a budget and no interval, the interval adapts: a 32,768-step MuJoCo run (the
    preset evaluates every 25,600) evaluates 11 times; a budget the preset itself evaluates
    fewer than 10 times keeps the preset's evaluations; a given interval is kept."""
    short = RunConfig.from_preset("trpo", "Hopper-v5", "mujoco", total_steps=32_768)
    assert short.layout.num_collections == 32 and short.layout.num_periods == 11
    assert short.layout.eval_steps[-1] == 32_768
    kept = RunConfig.from_preset(
        "trpo", "Hopper-v5", "mujoco", total_steps=32_768, eval_every=25_600
    )
    assert kept.layout.eval_steps == (25_600, 32_768)
    assert evaluation_interval(250_000, 2048, 250_000, 50_000) == 50_000  # 5 of its own
    assert evaluation_interval(100_000, 2048, 250_000, 50_000) == 20_000
    assert evaluation_interval(1_000, 1024, 1_000_000, 25_600) == 1024  # one per collection


def test_a_run_extended_after_a_shorter_last_period_keeps_the_period_boundaries():
    first = RunLayout.of(2, 8, 7 * 16, 48)  # 3 + 3 + 1 collections
    extended = RunLayout.of(2, 8, 12 * 16, 48)
    assert first.period_collections == (3, 3, 1)
    assert extended.periods_after(7) == (2, 3)  # to the next boundary (9), then 12
    assert extended.periods_after(0) == (3, 3, 3, 3)
    assert first.describe(2, 8) == (
        "7 collections of 2 x 8 env steps (112 env steps), 3 evaluations every 3 collections; "
        "the last period 1 collection"
    )
    assert RunLayout.of(2, 8, 16, 16).describe(2, 8) == (
        "1 collection of 2 x 8 env steps (16 env steps), 1 evaluation every 1 collection"
    )


def test_a_budget_under_one_collection_is_refused_by_name():
    expected = r"total_steps must be at least one collection \(num_envs x num_steps = 2 x 8"
    with pytest.raises(ValueError, match=expected):
        RunLayout.of(2, 8, 15, 16)


def test_period_by_period_runs_the_shorter_last_period():
    """``train_until`` (what the command runs) takes the layout's periods: whole ones with one
    compiled program, the shorter last one with its own, and equals the whole run."""
    from jaxrl.training import TrainConfig, make_train_loop, train_until
    from jaxrl.training.programs import _PROGRAMS
    from tests.training.test_jax_driver import period_programs

    config = _config("shorter last period", "jax")
    shape = TrainConfig(
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=config.total_steps,
        eval_every=config.eval_every,
        eval_episodes=config.eval_episodes,
    )
    loop = make_train_loop(config.make_agent(), "Pendulum-v1", shape)
    _PROGRAMS.clear()
    _, metrics = train_until(loop, jax.random.key(0)[None], stop=None, seed_axis="vmap")
    np.testing.assert_array_equal(metrics["eval/env_steps"][0], [48, 96, 112])
    np.testing.assert_array_equal(metrics["env_steps"][0], 16 * np.arange(1, 8))
    assert period_programs() == [1, 3]

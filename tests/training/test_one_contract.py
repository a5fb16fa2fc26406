"""Both drivers under one contract: the same run configuration (``TrainConfig``), the same
period loop with one ``stop`` signature and one progress payload, and the host driver cut at
its evaluations like the jitted one (``HostLoop.run_period``)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.training import TrainConfig, make_train_loop, train_until
from jaxrl.training.gymnasium_driver import HostLoop, train_gymnasium
from jaxrl.training.run import join_periods, stop_requested

CONFIG = TrainConfig(num_envs=2, num_steps=16, total_steps=96, eval_every=32, eval_episodes=2)
AGENT = jaxrl.TRPO(hidden_sizes=(16,), damping=1.0)


def test_the_host_loop_period_by_period_is_the_whole_run():
    _, whole = train_gymnasium(AGENT, "Pendulum-v1", CONFIG, seed=3, num_seeds=2)
    settings = dataclasses.replace(CONFIG, seed=3, num_seeds=2)
    with HostLoop(AGENT, "Pendulum-v1", settings) as loop:
        assert loop.layout.num_periods == CONFIG.layout.num_periods == 3
        carry, periods = loop.start(loop.init(), 0), []
        for _ in range(loop.layout.num_periods):
            given = carry
            carry, metrics = loop.run_period(carry)
            jax.block_until_ready(given)  # the loop worked on a copy: the caller's stays valid
            assert metrics["env_steps"].shape == (2, 1) and metrics["eval/return"].shape == (2,)
            periods.append(metrics)
        with pytest.raises(RuntimeError, match="3 evaluation periods are done"):
            loop.run_period(carry)
    joined = join_periods(periods)
    assert sorted(joined) == sorted(whole)
    for name, value in whole.items():
        np.testing.assert_array_equal(joined[name], value, err_msg=name)


def test_both_drivers_take_one_config_stop_and_progress():
    """The same TrainConfig gives the same periods on both drivers; ``stop`` gets the
    returns so far ``[S, P]`` and the progress callbacks get the same payload."""
    host_seen, jax_seen, host_stops, jax_stops = [], [], [], []
    _, host = train_gymnasium(
        AGENT,
        "Pendulum-v1",
        CONFIG,
        num_seeds=2,
        progress=host_seen.append,
        stop=lambda r: host_stops.append(r.shape) or r.shape[1] == 2,
    )
    loop = make_train_loop(AGENT, "Pendulum-v1", CONFIG)
    _, on_jax = train_until(
        loop,
        jax.random.split(jax.random.key(0), 2),
        stop=lambda r: jax_stops.append(r.shape) or r.shape[1] == 2,
        progress=jax_seen.append,
    )
    assert host_stops == jax_stops == [(2, 1), (2, 2)]
    assert host["eval/return"].shape == on_jax["eval/return"].shape == (2, 2)
    np.testing.assert_array_equal(host["eval/env_steps"], on_jax["eval/env_steps"])
    np.testing.assert_array_equal(host["env_steps"], on_jax["env_steps"])
    assert [set(info) for info in host_seen] == [set(info) for info in jax_seen]
    assert [info["env_steps"] for info in host_seen] == [32, 64]
    assert [info["env_steps"] for info in jax_seen] == [32, 64]
    # Without a stop test the jitted driver trains the whole budget.
    _, full = train_until(loop, jax.random.split(jax.random.key(0), 2), stop=None)
    assert full["eval/return"].shape == (2, 3)


def test_the_shape_is_a_train_config_or_its_fields():
    with pytest.raises(TypeError, match=r"unknown keyword 'num_env'.*num_envs"):
        train_gymnasium(AGENT, "Pendulum-v1", num_env=2)
    with pytest.raises(ValueError, match=r"RunSettings\.eval_episodes must be a positive int"):
        train_gymnasium(AGENT, "Pendulum-v1", CONFIG, eval_episodes=0)


def test_one_stop_signature():
    returns = np.array([[-900.0, -200.0]])
    assert stop_requested(lambda r: r >= -250, returns, single=True)
    assert not stop_requested(lambda r: r.shape == (1, 2) and r[0, 0] > 0, returns, single=False)
    assert not stop_requested(None, returns, single=False)


def test_periods_without_a_stat_are_nan_there():
    """DDPG's warm-up collections run no update: their stats are NaN in the joined run."""
    warmup = {"env_steps": np.array([[8]]), "eval/return": np.array([-1.0])}
    learning = {**warmup, "critic_loss": np.array([[0.5]], np.float32)}
    joined = join_periods([warmup, learning])
    np.testing.assert_array_equal(joined["critic_loss"], [[np.nan, 0.5]])
    assert joined["eval/return"].shape == (1, 2)

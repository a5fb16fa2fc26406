"""The same seed gives bitwise-equal parameters and metrics on CPU, for each algorithm and
each driver."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.experimental.compilation_cache import compilation_cache
from reliability_helpers import trees_equal

import jaxrl
from jaxrl.training import TrainConfig, make_train
from jaxrl.training.gymnasium_driver import train_gymnasium

AGENTS = {
    "npg": (jaxrl.NPG(hidden_sizes=(8,)), TrainConfig(4, 16, 128, 64, 2)),
    "trpo": (jaxrl.TRPO(hidden_sizes=(8,)), TrainConfig(4, 16, 128, 64, 2)),
    "ddpg": (
        jaxrl.DDPG(hidden_sizes=(8,), batch_size=8, buffer_size=64, update_per_step=0.25),
        TrainConfig(4, 1, 128, 64, 2),
    ),
}


def assert_metrics_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_jitted_driver_is_deterministic(name):
    agent, config = AGENTS[name]
    train = jax.jit(make_train(agent, "Pendulum-v1", config))
    first_state, first = train(jax.random.key(7))
    # A fresh compilation, not a cached result: the test session's persistent cache is off
    # (and reset, since JAX decides once per process whether to use it).
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    try:
        second_state, second = jax.jit(make_train(agent, "Pendulum-v1", config))(jax.random.key(7))
    finally:
        jax.config.update("jax_enable_compilation_cache", True)
        compilation_cache.reset_cache()
    assert trees_equal(first_state, second_state)
    assert_metrics_equal(first, second)
    _, other = train(jax.random.key(8))
    assert not np.array_equal(np.asarray(first["eval/return"]), np.asarray(other["eval/return"]))


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_host_driver_is_deterministic(name):
    agent, config = AGENTS[name]
    kwargs = dict(
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=64,
        eval_every=64,
        eval_episodes=2,
        seed=3,
    )
    first_state, first = train_gymnasium(agent, "Pendulum-v1", **kwargs)
    second_state, second = train_gymnasium(agent, "Pendulum-v1", **kwargs)
    assert trees_equal(first_state, second_state)
    assert_metrics_equal(first, second)

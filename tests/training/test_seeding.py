"""One seeding rule for both drivers (:func:`jaxrl.training.seeds.seed_keys`): seed ``s`` is
``key(s)`` whatever the number of seeds it trains with, so the same seed gives the same
initial parameters on the jitted and on the host driver, and the command's seeds are those."""

from __future__ import annotations

import gymnasium as gym
import jax
import numpy as np

import jaxrl
from jaxrl.config.run_config import RunConfig
from jaxrl.training import TrainConfig, make_train_loop
from jaxrl.training.gymnasium_driver import init_host_carry
from jaxrl.training.jax_loop import JaxLoop
from jaxrl.training.seeds import seed_keys

AGENTS = {"trpo": jaxrl.TRPO(hidden_sizes=(8,)), "ddpg": jaxrl.DDPG(hidden_sizes=(8,))}
SHAPE = TrainConfig(num_envs=2, num_steps=8, total_steps=16, eval_every=16)


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def test_the_same_seed_initializes_the_same_parameters_on_both_drivers():
    env = gym.make("Pendulum-v1")
    for name, agent in AGENTS.items():
        loop = make_train_loop(agent, "Pendulum-v1", SHAPE)
        host = init_host_carry(agent, [5, 6], env.observation_space, env.action_space, 2, False)
        for index, seed in enumerate((5, 6)):
            jitted = loop.init(seed_keys(seed, 1)[0]).state
            on_host = jax.tree_util.tree_map(lambda x, i=index: x[i], host.state)
            for a, b in zip(_leaves(jitted), _leaves(on_host), strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} seed {seed}")
        other = loop.init(seed_keys(7, 1)[0]).state  # another seed, other parameters
        assert not all(
            np.array_equal(a, b)
            for a, b in zip(_leaves(other.actor.params), _leaves(jitted.actor.params), strict=True)
        )


def test_a_seed_is_the_same_in_any_number_of_seeds():
    keys = jax.random.key_data(seed_keys(3, 4))
    np.testing.assert_array_equal(keys[2], jax.random.key_data(seed_keys(5, 1))[0])
    np.testing.assert_array_equal(keys[0], jax.random.key_data(jax.random.key(3)))
    config = RunConfig.from_preset("trpo", "Pendulum-v1", seed=3, num_seeds=4)
    run_keys = JaxLoop([config.make_agent()], config.env, [config]).keys()  # the run's
    np.testing.assert_array_equal(jax.random.key_data(run_keys), keys)

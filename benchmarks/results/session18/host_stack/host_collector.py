"""The research collector on gymnasium's Pendulum (the README's loop: 16 envs x 128 steps):
the first collect (its programs compiled) and the later ones. PYTHONPATH at the code."""

import os
import time

import gymnasium as gym
import jax
import numpy as np

import jaxrl
from jaxrl.training import make_collector

envs = gym.make_vec(
    "Pendulum-v1",
    num_envs=16,
    vectorization_mode="sync",
    vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
)
agent = jaxrl.TRPO(gamma=0.95, max_kl=0.005, return_scaling=True, repeat=2)
state = agent.init(jax.random.key(0), envs.single_observation_space, envs.single_action_space)
collector = make_collector(agent, envs, num_steps=128)
env_state = collector.init(seed=0)
times, total = [], 0.0
for i in range(11):
    start = time.perf_counter()
    rollout, env_state = collector.collect(state, env_state, jax.random.key(i))
    jax.block_until_ready(rollout)
    times.append(time.perf_counter() - start)
    total += float(np.asarray(rollout.reward).sum())
print(
    f"collect: first {times[0]:.2f} s, later {1e3 * np.median(times[1:]):.0f} ms (median of 10); "
    f"reward sum {total:.4f}; load {os.getloadavg()[0]:.2f}"
)

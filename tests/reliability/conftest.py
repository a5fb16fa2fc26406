"""Fixtures of the reliability tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from reliability_helpers import ACT_SPACE, OBS_SPACE, ON_POLICY, N

import jaxrl


@pytest.fixture(params=sorted(ON_POLICY))
def on_policy(request):
    agent = ON_POLICY[request.param]
    return agent, agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)


@pytest.fixture
def ddpg():
    agent = jaxrl.DDPG(hidden_sizes=(8,), batch_size=8, buffer_size=64, n_step_return_horizon=2)
    state = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE, N)
    buffer = agent.init_buffer(state, N)
    for i in range(6):
        k = jax.random.split(jax.random.key(i), 3)
        buffer = buffer.add(
            jaxrl.Transition(
                obs=jax.random.normal(k[0], (N, 3)),
                action=jax.random.uniform(k[1], (N, 1), minval=-1, maxval=1),
                reward=jax.random.normal(k[2], (N,)),
                terminated=jnp.zeros(N, bool),
                truncated=jnp.zeros(N, bool),
                next_obs=jax.random.normal(k[0], (N, 3)) + 0.1,
            )
        )
    return agent, state, buffer

"""Numerical faults: NaN/inf data never becomes non-finite parameters silently.

Before the guards, an NPG/TRPO update on a rollout with one NaN reward wrote NaN critic
parameters (Adam on a NaN loss) and NaN return statistics; DDPG's critic did the same on a
batch with a NaN reward. Now such steps are refused (parameters and optimizer state kept) and
counted in ``rejected_steps``; the checked mode names the field and env step.
"""

from __future__ import annotations

import dataclasses

import gymnax
import jax
import jax.numpy as jnp
import pytest
from jax.experimental import checkify
from reliability_helpers import all_finite, ddpg_update, make_rollout, on_policy_update, trees_equal

import jaxrl
from jaxrl.training import TrainConfig, checked_call, make_train


@pytest.mark.parametrize(
    "fault",
    [
        {"reward": jnp.nan},
        {"reward": jnp.inf},
        {"obs": jnp.nan},
        {"next_obs": -jnp.inf},
    ],
    ids=["nan-reward", "inf-reward", "nan-obs", "inf-next-obs"],
)
def test_on_policy_update_refuses_non_finite_steps(on_policy, fault):
    agent, state = on_policy
    rollout = make_rollout(jax.random.key(1))
    ((field, value),) = fault.items()
    bad = getattr(rollout, field)
    rollout = rollout._replace(**{field: bad.at[2, 0].set(value)})
    new_state, stats = on_policy_update(agent, state, rollout, jax.random.key(2))
    assert all_finite(new_state.actor.params) and all_finite(new_state.critic.params)
    assert all_finite(new_state.critic.opt_state)
    assert all_finite(new_state.return_rms)
    assert int(stats["rejected_steps"]) > 0
    # A refused actor step keeps the parameters exactly.
    assert trees_equal(new_state.actor.params, state.actor.params)


def test_on_policy_return_statistics_not_poisoned(on_policy):
    agent, state = on_policy
    rollout = make_rollout(jax.random.key(3))
    rollout = rollout._replace(reward=rollout.reward.at[0, 0].set(jnp.nan))
    new_state, _ = on_policy_update(agent, state, rollout, jax.random.key(4))
    assert trees_equal(new_state.return_rms, state.return_rms)


def test_ddpg_update_refuses_non_finite_losses(ddpg):
    agent, state, buffer = ddpg
    batch = agent.sample_batch(buffer, jax.random.key(5))
    bad = batch._replace(reward=batch.reward.at[0, 0].set(jnp.nan))
    new_state, stats = ddpg_update(agent, state, bad, jax.random.key(6))
    assert int(stats["rejected_steps"]) >= 1
    assert trees_equal(new_state.critic.params, state.critic.params)
    assert all_finite(new_state)
    good_state, good_stats = ddpg_update(agent, state, batch, jax.random.key(6))
    assert int(good_stats["rejected_steps"]) == 0
    assert not trees_equal(good_state.critic.params, state.critic.params)


def test_zero_rewards_zero_variance_advantages_and_zero_gradients(on_policy):
    agent, state = on_policy
    zeros = make_rollout(
        jax.random.key(7),
        obs=jnp.zeros((8, 2, 3)),
        next_obs=jnp.zeros((8, 2, 3)),
        reward=jnp.zeros((8, 2)),
    )
    new_state, stats = on_policy_update(agent.replace(gamma=0.0), state, zeros, jax.random.key(8))
    assert all_finite(new_state) and all_finite(stats)
    assert int(stats["rejected_steps"]) == 0


class NaNRewardPendulum:
    """gymnax Pendulum whose reward turns NaN at the 7th step of each episode."""

    def __init__(self):
        self.env, self.default_params = gymnax.make("Pendulum-v1")

    def reset(self, key, params):
        return self.env.reset(key, params)

    def step(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self.env.step(key, state, action, params)
        return obs, state, jnp.where(state.time == 7, jnp.nan, reward), terminated, truncated, info

    def observation_space(self, params):
        return self.env.observation_space(params)

    def action_space(self, params):
        return self.env.action_space(params)


CHECKED = TrainConfig(
    num_envs=2, num_steps=16, total_steps=64, eval_every=32, eval_episodes=2, check_finite=True
)


def test_checked_mode_names_field_and_step():
    train = make_train(jaxrl.TRPO(hidden_sizes=(8,)), NaNRewardPendulum(), CHECKED)
    with pytest.raises(checkify.JaxRuntimeError, match=r"non-finite reward .* env step 12"):
        checked_call(train, jax.random.split(jax.random.key(0), 2))


def test_unchecked_run_with_faulty_rewards_keeps_parameters_finite():
    config = dataclasses.replace(CHECKED, check_finite=False)
    state, metrics = jax.jit(
        make_train(jaxrl.TRPO(hidden_sizes=(8,)), NaNRewardPendulum(), config)
    )(jax.random.key(0))
    assert int(metrics["rejected_steps"][0]) > 0
    assert all_finite(state.actor.params) and all_finite(state.critic.params)

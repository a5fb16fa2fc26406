"""Bad input is refused with the offending field named: hyperparameters, spaces, rollouts
and batches."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reliability_helpers import ACT_SPACE, OBS_SPACE, make_rollout, on_policy_update

import jaxrl

UNSUPPORTED = [
    gymnasium.spaces.MultiDiscrete([2, 3]),
    gymnasium.spaces.MultiBinary(3),
    gymnasium.spaces.Dict({"a": gymnasium.spaces.Discrete(2)}),
    gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2),)),
]


@pytest.mark.parametrize("space", UNSUPPORTED, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("cls", [jaxrl.NPG, jaxrl.TRPO, jaxrl.DDPG])
def test_unsupported_action_spaces_list_what_is_supported(cls, space):
    with pytest.raises(TypeError, match=rf"action_space of type {type(space).__name__}.*Box"):
        cls().init(jax.random.key(0), OBS_SPACE, space)


@pytest.mark.parametrize("space", UNSUPPORTED, ids=lambda s: type(s).__name__)
def test_unsupported_observation_spaces_are_refused(space):
    with pytest.raises(TypeError, match="observation_space"):
        jaxrl.TRPO().init(jax.random.key(0), space, ACT_SPACE)


def test_ddpg_refuses_discrete_actions():
    with pytest.raises(TypeError, match="Discrete"):
        jaxrl.DDPG().init(jax.random.key(0), OBS_SPACE, gymnasium.spaces.Discrete(3))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 2.0])
@pytest.mark.parametrize(
    ("cls", "field"),
    [
        (jaxrl.NPG, "gamma"),
        (jaxrl.NPG, "gae_lambda"),
        (jaxrl.TRPO, "backtrack_coeff"),
        (jaxrl.DDPG, "tau"),
        (jaxrl.DDPG, "gamma"),
    ],
)
def test_unit_interval_fields_are_range_checked(cls, field, value):
    with pytest.raises(ValueError, match=field):
        cls(**{field: value})


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (jaxrl.NPG, "trust_region_size", -0.5),
        (jaxrl.NPG, "lr", float("nan")),
        (jaxrl.NPG, "damping", -1.0),
        (jaxrl.TRPO, "max_kl", float("inf")),
        (jaxrl.TRPO, "max_kl", -0.01),
        (jaxrl.DDPG, "actor_lr", -1e-4),
        (jaxrl.DDPG, "critic_lr", float("nan")),
        (jaxrl.DDPG, "batch_size", 0),
        (jaxrl.DDPG, "n_step_return_horizon", 0),
    ],
)
def test_other_fields_are_range_checked(cls, field, value):
    with pytest.raises((ValueError, TypeError), match=field):
        cls(**{field: value})


def test_replace_is_validated_too():
    with pytest.raises(ValueError, match="max_kl"):
        jaxrl.TRPO().replace(max_kl=-1.0)


def test_rollout_with_wrong_shapes_dtypes_or_missing_fields():
    agent = jaxrl.TRPO(hidden_sizes=(8,))
    state = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)
    good = make_rollout(jax.random.key(1))
    cases = [
        (good._replace(obs=good.obs[..., :2]), ValueError, r"rollout\.obs"),
        (good._replace(action=good.action[..., 0]), ValueError, r"rollout\.action"),
        (good._replace(terminated=good.terminated[:4]), ValueError, r"rollout\.terminated"),
        (good._replace(reward=good.reward.astype(jnp.complex64)), TypeError, r"rollout\.reward"),
        (
            good._replace(truncated=good.truncated.astype(jnp.float32)),
            TypeError,
            r"rollout\.truncated",
        ),
    ]
    for rollout, error, match in cases:
        with pytest.raises(error, match=match):
            on_policy_update(agent, state, rollout, jax.random.key(2))
    with pytest.raises(TypeError, match="missing"):
        agent.update(state, {"obs": good.obs}, jax.random.key(2))


def test_ddpg_batch_with_wrong_shapes_or_dtypes(ddpg):
    agent, state, buffer = ddpg
    batch = agent.sample_batch(buffer, jax.random.key(0))
    with pytest.raises(ValueError, match=r"batch\.next_obs"):
        agent.update(state, batch._replace(next_obs=batch.next_obs[0]), jax.random.key(1))
    with pytest.raises(TypeError, match=r"batch\.action"):
        agent.update(
            state, batch._replace(action=batch.action.astype(jnp.int32)), jax.random.key(1)
        )
    with pytest.raises(TypeError, match="missing"):
        agent.update(state, (np.zeros(3),), jax.random.key(1))

"""Property-based fuzzing: random shapes, dtypes, NaN/inf and extreme hyperparameters thrown
at the core functions and the updates. Each test decides from its inputs, before the call,
whether they are valid: valid inputs must give finite results of the right shape (any error
fails the test), invalid ones must raise a clear error (ValueError/TypeError naming the
argument); no update returns non-finite parameters.

Each test counts its cases in ``CASES``; ``test_report_case_count`` prints the total.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reliability_helpers import (
    ACT_SPACE,
    OBS_SPACE,
    ON_POLICY,
    all_finite,
    ddpg_update,
    make_rollout,
    on_policy_update,
)

import jaxrl
from jaxrl import core

T = TypeVar("T")
CASES: collections.Counter = collections.Counter()
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
SPECIALS = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1e30, -1e30, 1e-30])
DTYPES = st.sampled_from([np.float32, np.float64, np.int32, np.bool_, np.float16])


@functools.cache
def initial_state(name: str):
    """One initial state per algorithm (initialization does not depend on the leaves)."""
    return ON_POLICY[name].init(jax.random.key(0), OBS_SPACE, ACT_SPACE)


def call_checked(call: Callable[[], T], invalid: str | None) -> T | None:
    """``call()`` for valid inputs (``invalid`` None): any error it raises fails the test.
    For invalid inputs the call must raise ValueError/TypeError naming ``invalid`` (the
    offending argument); returns None then."""
    if invalid is None:
        return call()
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert invalid in str(info.value), info.value
    return None


def in_unit_interval(x: float) -> bool:
    """Whether ``x`` is a valid discount/lambda: in ``[0, 1]`` (NaN is not)."""
    return 0.0 <= x <= 1.0


def gae_invalid_argument(t: int, mismatch: str | None, gamma: float, lam: float) -> str | None:
    """The argument :func:`core.gae` must reject for these inputs (the first check that
    fails, in its order), or None when they are valid."""
    if t == 0:
        return "rewards"  # an empty time axis
    if mismatch:
        return mismatch
    if not in_unit_interval(gamma):
        return "gamma"
    if not in_unit_interval(lam):
        return "gae_lambda"
    return None


@FUZZ
@given(
    t=st.integers(0, 5),
    n=st.integers(1, 3),
    extra=st.integers(0, 2),
    gamma=st.floats(-0.5, 1.5) | st.just(float("nan")),
    lam=st.floats(-0.5, 1.5) | st.just(float("nan")),
    dtype=DTYPES,
    mismatch=st.sampled_from([None, "values", "next_values", "terminated", "truncated"]),
)
def test_gae_fuzz(t, n, extra, gamma, lam, dtype, mismatch):
    CASES["gae"] += 1
    shape = (t, n)
    arrays = {
        "rewards": np.ones(shape, dtype),
        "values": np.zeros(shape, dtype),
        "next_values": np.zeros(shape, dtype),
        "terminated": np.zeros(shape, bool),
        "truncated": np.zeros(shape, bool),
    }
    if mismatch:
        arrays[mismatch] = np.zeros((t, n + extra + 1), arrays[mismatch].dtype)
    # Validity decided from the inputs alone (every dtype drawn is accepted).
    invalid = gae_invalid_argument(t, mismatch, gamma, lam)
    result = call_checked(lambda: core.gae(**arrays, gamma=gamma, gae_lambda=lam), invalid)
    if invalid is None:
        assert result.advantages.shape == shape and result.returns.shape == shape
        assert bool(jnp.all(jnp.isfinite(result.advantages)))
        assert bool(jnp.all(jnp.isfinite(result.returns)))
        # Rewards 1, values 0, no episode end inside the segment: the last step's return is 1.
        np.testing.assert_allclose(np.asarray(result.returns[-1]), 1.0)


@FUZZ
@given(
    n=st.integers(1, 6),
    gamma=st.floats(-1.0, 2.0) | st.just(float("nan")),
    special=SPECIALS,
    horizon=st.integers(1, 4),
)
def test_nstep_targets_fuzz(n, gamma, special, horizon):
    CASES["nstep_targets"] += 1
    rewards = np.full((horizon, n), special, np.float32)
    flags = np.zeros((horizon, n), bool)
    invalid = None if in_unit_interval(gamma) else "gamma"
    targets = call_checked(
        lambda: core.nstep_targets(rewards, np.zeros_like(rewards), flags, flags, gamma), invalid
    )
    if invalid is None:
        assert targets.shape == (n,)
        if np.isfinite(special) and abs(special) < 1e29:
            assert bool(jnp.all(jnp.isfinite(targets)))
            expected = special * sum(gamma**i for i in range(horizon))
            np.testing.assert_allclose(np.asarray(targets), expected, rtol=1e-5, atol=1e-30)


@FUZZ
@given(
    size=st.integers(1, 8),
    seed=st.integers(0, 2**16),
    kind=st.sampled_from(["spd", "indefinite", "zero", "negative", "nan"]),
    zero_b=st.booleans(),
    max_iters=st.integers(0, 12),
)
def test_conjugate_gradient_fuzz(size, seed, kind, zero_b, max_iters):
    CASES["conjugate_gradient"] += 1
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(size, size))
    matrix = {
        "spd": x @ x.T + np.eye(size),
        "indefinite": x + x.T,
        "zero": np.zeros((size, size)),
        "negative": -np.eye(size),
        "nan": np.full((size, size), np.nan),
    }[kind].astype(np.float32)
    b = np.zeros(size, np.float32) if zero_b else rng.normal(size=size).astype(np.float32)
    result = core.conjugate_gradient(lambda v: matrix @ v, jnp.asarray(b), max_iters, 1e-10)
    assert bool(jnp.all(jnp.isfinite(result.x))), (kind, result)
    assert int(result.iterations) <= max_iters


@FUZZ
@given(
    verdicts=st.lists(st.sampled_from([0.0, 1.0, np.nan]), min_size=1, max_size=6),
    step=st.floats(0.0, 1e3),
    coeff=st.floats(-0.5, 1.5),
)
def test_line_search_fuzz(verdicts, step, coeff):
    CASES["backtracking_line_search"] += 1
    table = jnp.asarray(verdicts, jnp.float32)
    params = {"w": jnp.zeros(2)}

    def accept(candidate):
        index = jnp.round(jnp.log(jnp.maximum(candidate["w"][0], 1e-30) / step) / jnp.log(coeff))
        return table[jnp.clip(index.astype(jnp.int32), 0, len(verdicts) - 1)]

    invalid = None if 0.0 < coeff <= 1.0 else "backtrack_coeff"
    result = call_checked(
        lambda: core.backtracking_line_search(
            accept, params, {"w": jnp.ones(2)}, step, coeff, len(verdicts)
        ),
        invalid,
    )
    if invalid is not None:
        return
    assert result.params["w"].shape == (2,)
    assert bool(jnp.all(jnp.isfinite(result.params["w"])))
    if not bool(result.accepted):
        assert float(result.step_size) == 0.0 and bool(jnp.all(result.params["w"] == 0))


@FUZZ
@given(
    name=st.sampled_from(sorted(ON_POLICY)),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
    step=st.floats(1e-8, 1e3),
    max_kl=st.floats(1e-8, 1e3),
    lr=st.floats(0.0, 1e3),
    damping=st.floats(0.0, 1e3),
    faults=st.lists(
        st.tuples(st.sampled_from(["reward", "obs", "next_obs"]), st.integers(0, 7), SPECIALS),
        max_size=3,
    ),
    reward_scale=st.sampled_from([0.0, 1.0, 1e6]),
)
# Found by CI: a finite 1e30 reward overflowed the return variance to NaN.
@example("npg", 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, [("reward", 0, 1e30)], 0.0)
def test_on_policy_update_fuzz(name, gamma, lam, step, max_kl, lr, damping, faults, reward_scale):
    CASES["npg/trpo update"] += 1
    agent = ON_POLICY[name].replace(
        gamma=gamma, gae_lambda=lam, trust_region_size=step, lr=lr, damping=damping
    )
    if isinstance(agent, jaxrl.TRPO):
        agent = agent.replace(max_kl=max_kl)
    state = initial_state(name)
    rollout = make_rollout(jax.random.key(1))
    rollout = rollout._replace(reward=rollout.reward * reward_scale)
    for field, t, value in faults:
        data = getattr(rollout, field)
        rollout = rollout._replace(**{field: data.at[t, 0].set(value)})
    for i in range(2):
        state, _ = on_policy_update(agent, state, rollout, jax.random.key(2 + i))
        assert all_finite(state.actor.params) and all_finite(state.critic.params)
        assert all_finite(state.return_rms)


@FUZZ
@given(
    tau=st.floats(0.0, 1.0),
    gamma=st.floats(0.0, 1.0),
    actor_lr=st.floats(0.0, 1e3),
    critic_lr=st.floats(0.0, 1e3),
    special=SPECIALS,
    field=st.sampled_from(["reward", "obs", "next_obs", "action"]),
)
def test_ddpg_update_fuzz(ddpg, tau, gamma, actor_lr, critic_lr, special, field):
    CASES["ddpg update"] += 1
    agent, state, buffer = ddpg
    agent = agent.replace(tau=tau, gamma=gamma, actor_lr=actor_lr, critic_lr=critic_lr)
    batch = agent.sample_batch(buffer, jax.random.key(3))
    data = getattr(batch, field)
    batch = batch._replace(**{field: data.at[(0,) * (data.ndim - 1)].set(special)})
    for i in range(2):
        state, _ = ddpg_update(agent, state, batch, jax.random.key(i))
        assert all_finite(state.actor.params) and all_finite(state.critic.params)
        assert all_finite(state.actor_target) and all_finite(state.critic_target)


def test_report_case_count(capsys):
    total = sum(CASES.values())
    with capsys.disabled():
        print(f"\nfuzz cases tried (this process): {total} {dict(CASES)}")

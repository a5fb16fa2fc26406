"""Tests for jaxrl.core.returns: GAE and n-step targets against plain Python-loop references."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.core import GAEResult, gae, nstep_targets

# Eager calls compile every primitive once per new shape (about a second for gae), jitted calls
# compile once per shape: tests that are not about jit/no-jit use these, on few shapes.
gae_jit = jax.jit(gae)
nstep_jit = jax.jit(nstep_targets)

SMALL = (16, 32)  # the [T, N] shape shared by the smaller gae tests


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


# ---------------------------------------------------------------------------------------------
# References: scalar Python loops, one segment (or one window) at a time, in float64.
# ---------------------------------------------------------------------------------------------


def gae_reference_1d(rewards, values, next_values, terminated, truncated, gamma, lam):
    """GAE of a single segment [T] by a backward Python loop."""
    num_steps = len(rewards)
    advantages = np.zeros(num_steps)
    next_advantage = 0.0
    for t in reversed(range(num_steps)):
        bootstrap = 0.0 if terminated[t] else float(next_values[t])
        delta = float(rewards[t]) + gamma * bootstrap - float(values[t])
        end = bool(terminated[t]) or bool(truncated[t]) or t == num_steps - 1
        next_advantage = delta + gamma * lam * (0.0 if end else 1.0) * next_advantage
        advantages[t] = next_advantage
    return advantages, advantages + np.asarray(values, np.float64)


def gae_reference(rewards, values, next_values, terminated, truncated, gamma, lam):
    """GAE of [T, N] segments, column by column."""
    advantages = np.zeros(rewards.shape)
    returns = np.zeros(rewards.shape)
    for n in range(rewards.shape[1]):
        advantages[:, n], returns[:, n] = gae_reference_1d(
            rewards[:, n],
            values[:, n],
            next_values[:, n],
            terminated[:, n],
            truncated[:, n],
            gamma,
            lam,
        )
    return advantages, returns


def monte_carlo_reference(rewards, ends, gamma):
    """Forward sums: G_t = sum_{k=t}^{e} gamma^(k-t) r_k, e = first end at or after t (or T-1)."""
    num_steps, num_envs = rewards.shape
    returns = np.zeros(rewards.shape)
    for n in range(num_envs):
        for t in range(num_steps):
            total, discount = 0.0, 1.0
            for k in range(t, num_steps):
                total += discount * float(rewards[k, n])
                discount *= gamma
                if ends[k, n]:
                    break
            returns[t, n] = total
    return returns


def nstep_reference_1d(rewards, next_values, terminated, truncated, gamma):
    """n-step target of one window [n] by a forward Python loop."""
    horizon = len(rewards)
    target, discount = 0.0, 1.0
    for i in range(horizon):
        target += discount * float(rewards[i])
        discount *= gamma
        if terminated[i]:
            return target
        if truncated[i] or i == horizon - 1:
            return target + discount * float(next_values[i])
    raise AssertionError("unreachable")


def nstep_reference(rewards, next_values, terminated, truncated, gamma):
    return np.array(
        [
            nstep_reference_1d(
                rewards[:, b], next_values[:, b], terminated[:, b], truncated[:, b], gamma
            )
            for b in range(rewards.shape[1])
        ]
    )


def random_segments(rng, num_steps, num_envs, end_prob=0.1):
    """Random [T, N] rollouts mixing four kinds of segments, by column index modulo 4.

    0: no flag at all (the episode runs past the segment end), 1: terminations only,
    2: truncations only, 3: both (sometimes on the same step).
    """
    kind = np.arange(num_envs) % 4
    p_term = np.where((kind == 1) | (kind == 3), end_prob, 0.0)
    p_trunc = np.where((kind == 2) | (kind == 3), end_prob, 0.0)
    return dict(
        rewards=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        values=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        next_values=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        terminated=rng.random((num_steps, num_envs)) < p_term,
        truncated=rng.random((num_steps, num_envs)) < p_trunc,
    )


def as_args(data):
    return (
        data["rewards"],
        data["values"],
        data["next_values"],
        data["terminated"],
        data["truncated"],
    )


# ---------------------------------------------------------------------------------------------
# gae
# ---------------------------------------------------------------------------------------------

NUM_SEGMENTS = 1000
SEGMENT_LENGTH = 64


@pytest.fixture(scope="module")
def segments():
    data = random_segments(np.random.default_rng(0), SEGMENT_LENGTH, NUM_SEGMENTS)
    # All four kinds of segments are really present.
    ends = data["terminated"] | data["truncated"]
    assert np.any(~ends.any(axis=0))  # episodes running past the segment end
    assert np.any(data["terminated"] & data["truncated"])
    assert data["terminated"].sum() > 100 and data["truncated"].sum() > 100
    return data


@pytest.fixture(scope="module")
def segments_reference(segments):
    return gae_reference(*as_args(segments), 0.99, 0.95)


def test_gae_matches_loop_on_1000_segments(variant, segments, segments_reference):
    result = variant(gae)(*as_args(segments), 0.99, 0.95)
    assert isinstance(result, GAEResult)
    ref_advantages, ref_returns = segments_reference
    assert result.advantages.shape == (SEGMENT_LENGTH, NUM_SEGMENTS)
    assert result.advantages.dtype == jnp.float32
    np.testing.assert_allclose(result.advantages, ref_advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.returns, ref_returns, rtol=1e-5, atol=1e-5)


def test_gae_vmapped_over_segments(segments, segments_reference):
    # One segment [T] per lane; the batch of 1,000 segments is the vmapped axis.
    vmapped = jax.vmap(lambda *a: gae(*a, 0.99, 0.95), in_axes=1, out_axes=1)
    result = jax.jit(vmapped)(*as_args(segments))
    ref_advantages, ref_returns = segments_reference
    np.testing.assert_allclose(result.advantages, ref_advantages, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.returns, ref_returns, rtol=1e-5, atol=1e-5)


def test_gae_vmapped_over_gamma_and_lambda():
    data = random_segments(np.random.default_rng(1), *SMALL)
    gammas = np.array([0.0, 0.5, 0.9, 0.99, 1.0], np.float32)
    lambdas = np.array([1.0, 0.0, 0.95, 0.5, 0.8], np.float32)

    over_gamma = jax.vmap(lambda g: gae(*as_args(data), g, 0.95))
    over_both = jax.vmap(lambda g, lam: gae(*as_args(data), g, lam))
    result_gamma = jax.jit(over_gamma)(gammas)
    result_both = jax.jit(over_both)(gammas, lambdas)
    assert result_gamma.advantages.shape == (5, *SMALL)
    for i, (gamma, lam) in enumerate(zip(gammas, lambdas, strict=True)):
        ref_adv, ref_ret = gae_reference(*as_args(data), float(gamma), 0.95)
        np.testing.assert_allclose(result_gamma.advantages[i], ref_adv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result_gamma.returns[i], ref_ret, rtol=1e-5, atol=1e-5)
        ref_adv, ref_ret = gae_reference(*as_args(data), float(gamma), float(lam))
        np.testing.assert_allclose(result_both.advantages[i], ref_adv, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result_both.returns[i], ref_ret, rtol=1e-5, atol=1e-5)


def test_gae_lambda_one_zero_values_is_monte_carlo(variant):
    data = random_segments(np.random.default_rng(2), *SMALL, end_prob=0.15)
    zeros = np.zeros_like(data["rewards"])
    gamma = 0.9
    result = variant(gae)(
        data["rewards"], zeros, zeros, data["terminated"], data["truncated"], gamma, 1.0
    )
    expected = monte_carlo_reference(data["rewards"], data["terminated"] | data["truncated"], gamma)
    np.testing.assert_allclose(result.returns, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.advantages, expected, rtol=1e-5, atol=1e-5)


def test_gae_monte_carlo_hand_computed():
    rewards = np.ones(5, np.float32)
    zeros = np.zeros(5, np.float32)
    terminated = np.array([False, False, True, False, False])
    result = gae_jit(rewards, zeros, zeros, terminated, np.zeros(5, bool), 0.5, 1.0)
    np.testing.assert_allclose(result.returns, [1.75, 1.5, 1.0, 1.5, 1.0], rtol=1e-6)


@pytest.mark.parametrize(
    ("terminated", "truncated", "expected"),
    [
        (True, False, 1.0),  # termination: V(s') = 10 is masked out
        (False, True, 1.0 + 0.9 * 10.0),  # truncation keeps the bootstrap V(s')
        (True, True, 1.0),  # both: termination wins
        (False, False, 1.0 + 0.9 * 10.0),  # no end: A_1 flows back (added below)
    ],
)
def test_gae_termination_masks_bootstrap_truncation_keeps_it(
    variant, terminated, truncated, expected
):
    # Step 0 ends (or not) the episode; step 1 belongs to the next episode and must not leak
    # into step 0 when the episode ended there.
    rewards = np.array([1.0, 100.0], np.float32)
    values = np.array([0.0, 0.0], np.float32)
    next_values = np.array([10.0, 0.0], np.float32)
    result = variant(gae)(
        rewards,
        values,
        next_values,
        np.array([terminated, False]),
        np.array([truncated, False]),
        0.9,
        0.5,
    )
    if not (terminated or truncated):
        # No end at step 0: A_0 = delta_0 + gamma * lambda * A_1, A_1 = 100.
        expected += 0.9 * 0.5 * 100.0
    np.testing.assert_allclose(result.advantages[0], expected, rtol=1e-6)
    np.testing.assert_allclose(result.advantages[1], 100.0, rtol=1e-6)


def test_gae_last_step_is_always_an_episode_end():
    # Whatever the flags, A_{T-1} = delta_{T-1}: the unfinished episode is bootstrapped and
    # nothing leaks across the segment end.
    rng = np.random.default_rng(3)
    data = random_segments(rng, *SMALL)
    result = gae_jit(*as_args(data), 0.99, 0.95)
    last_bootstrap = np.where(data["terminated"][-1], 0.0, data["next_values"][-1])
    expected = data["rewards"][-1] + 0.99 * last_bootstrap - data["values"][-1]
    np.testing.assert_allclose(result.advantages[-1], expected, rtol=1e-6, atol=1e-6)


def test_gae_returns_are_advantages_plus_values(segments):
    result = gae_jit(*as_args(segments), 0.99, 0.95)
    np.testing.assert_allclose(
        result.returns, result.advantages + segments["values"], rtol=1e-6, atol=1e-6
    )


def test_gae_accepts_01_float_flags_and_trailing_axes():
    data = random_segments(np.random.default_rng(4), *SMALL)
    as_bool = gae_jit(*as_args(data), 0.9, 0.8)
    as_float = gae_jit(
        data["rewards"],
        data["values"],
        data["next_values"],
        data["terminated"].astype(np.float32),
        data["truncated"].astype(np.int32),
        0.9,
        0.8,
    )
    np.testing.assert_array_equal(as_bool.advantages, as_float.advantages)
    # [T, N] and [T, 4, 8] are the same independent streams.
    reshaped = gae_jit(*(x.reshape(16, 4, 8) for x in as_args(data)), 0.9, 0.8)
    np.testing.assert_allclose(
        reshaped.advantages.reshape(SMALL), as_bool.advantages, rtol=1e-6, atol=1e-6
    )


def test_gae_integer_rewards_are_promoted_to_float():
    rewards = np.array([1, 2, 3], np.int32)
    zeros = np.zeros(3, np.float32)
    flags = np.zeros(3, bool)
    result = gae_jit(rewards, zeros, zeros, flags, flags, 0.5, 1.0)
    assert jnp.issubdtype(result.advantages.dtype, jnp.floating)
    np.testing.assert_allclose(result.advantages, [1 + 1 + 0.75, 2 + 1.5, 3], rtol=1e-6)


def test_gae_integer_rewards_keep_fractional_values():
    # The values are cast to the computation type, float32 for integer rewards: not to the
    # rewards' integer type, which would truncate them.
    rewards = np.array([1, 2, 3], np.int32)
    values = np.array([0.25, 0.5, 0.75], np.float32)
    next_values = np.array([0.5, 0.75, 1.5], np.float32)
    flags = np.zeros(3, bool)
    result = gae_jit(rewards, values, next_values, flags, flags, 0.5, 0.5)
    expected_adv, expected_ret = gae_reference_1d(
        rewards, values, next_values, flags, flags, 0.5, 0.5
    )
    assert result.advantages.dtype == jnp.float32 and result.returns.dtype == jnp.float32
    np.testing.assert_allclose(result.advantages, expected_adv, rtol=1e-6)
    np.testing.assert_allclose(result.returns, expected_ret, rtol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    num_steps=st.sampled_from([1, 7, 16]),
    num_envs=st.just(4),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
    end_prob=st.sampled_from([0.0, 0.2, 0.6]),
    seed=st.integers(0, 2**31 - 1),
)
def test_gae_property_matches_loop(num_steps, num_envs, gamma, lam, end_prob, seed):
    data = random_segments(np.random.default_rng(seed), num_steps, num_envs, end_prob)
    result = gae_jit(*as_args(data), gamma, lam)  # traced gamma/lambda: one compile per T
    ref_adv, ref_ret = gae_reference(*as_args(data), gamma, lam)
    np.testing.assert_allclose(result.advantages, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.returns, ref_ret, rtol=1e-5, atol=1e-5)


def _gae_args(**overrides):
    args = dict(
        rewards=np.zeros(SMALL, np.float32),
        values=np.zeros(SMALL, np.float32),
        next_values=np.zeros(SMALL, np.float32),
        terminated=np.zeros(SMALL, bool),
        truncated=np.zeros(SMALL, bool),
        gamma=0.99,
        gae_lambda=0.95,
    )
    args.update(overrides)
    return args


@pytest.mark.parametrize("gamma", [-0.01, 1.01, float("nan"), 2])
def test_gae_rejects_gamma_outside_unit_interval(gamma):
    with pytest.raises(ValueError, match=r"^gamma must be in \[0\.0, 1\.0\], got "):
        gae(**_gae_args(gamma=gamma))


@pytest.mark.parametrize("gae_lambda", [-0.5, 1.5, float("nan")])
def test_gae_rejects_lambda_outside_unit_interval(gae_lambda):
    with pytest.raises(ValueError, match=r"^gae_lambda must be in \[0\.0, 1\.0\], got "):
        gae(**_gae_args(gae_lambda=gae_lambda))


def test_gae_rejects_non_numeric_gamma():
    with pytest.raises(TypeError, match=r"^gamma must be a number, got '0\.99'$"):
        gae(**_gae_args(gamma="0.99"))


@pytest.mark.parametrize("name", ["values", "next_values", "terminated", "truncated"])
def test_gae_rejects_mismatched_shapes(name):
    message = f"{name} must have the shape of rewards {SMALL}, got (16, 31)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        gae(**_gae_args(**{name: np.zeros((16, 31), np.float32)}))


def test_gae_rejects_scalar_rewards():
    scalar = np.float32(0.0)
    message = r"^rewards must have at least 1 dimension\(s\), got shape \(\)$"
    with pytest.raises(ValueError, match=message):
        gae(scalar, scalar, scalar, False, False, 0.9, 0.9)
    with pytest.raises(ValueError, match=message):
        nstep_targets(scalar, scalar, False, False, 0.9)


def test_gae_accepts_boundary_hyperparameters():
    """gamma and lambda at 0 and 1 are accepted and give the closed forms (values 0, reward
    1, no episode end): gamma=0 or lambda=0 gives A_t = r_t = 1; gamma=lambda=1 gives the
    undiscounted reward-to-go T - t."""
    rewards = np.ones(SMALL, np.float32)
    steps = SMALL[0]
    to_go = (steps - np.arange(steps, dtype=np.float32))[:, None] * np.ones(SMALL, np.float32)
    for gamma in (0.0, 1.0):
        for lam in (0.0, 1.0):
            result = gae(**_gae_args(rewards=rewards, gamma=gamma, gae_lambda=lam))
            expected = to_go if gamma == lam == 1.0 else rewards
            np.testing.assert_allclose(np.asarray(result.advantages), expected, rtol=1e-6)
            np.testing.assert_allclose(np.asarray(result.returns), expected, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# nstep_targets
# ---------------------------------------------------------------------------------------------


def random_windows(rng, horizon, batch, end_prob=0.2):
    return (
        rng.normal(size=(horizon, batch)).astype(np.float32),
        rng.normal(size=(horizon, batch)).astype(np.float32),
        rng.random((horizon, batch)) < end_prob,
        rng.random((horizon, batch)) < end_prob,
    )


@pytest.mark.parametrize(
    ("variant", "horizon"),
    [(jax.jit, 1), (jax.jit, 3), (jax.jit, 5), (lambda f: f, 3)],
    ids=["jit-1", "jit-3", "jit-5", "nojit-3"],
)
def test_nstep_matches_loop(variant, horizon):
    args = random_windows(np.random.default_rng(horizon), horizon, 500)
    terminated, truncated = args[2], args[3]
    if horizon > 1:  # ends inside the horizon, of both kinds, really occur
        assert terminated[:-1].any() and truncated[:-1].any()
    targets = variant(nstep_targets)(*args, 0.95)
    assert targets.shape == (500,)
    np.testing.assert_allclose(targets, nstep_reference(*args, 0.95), rtol=1e-5, atol=1e-5)


def test_nstep_vmapped_over_batch_and_gamma():
    args = random_windows(np.random.default_rng(7), 3, 500)
    per_sample = jax.vmap(lambda *a: nstep_targets(*a, 0.9), in_axes=1)
    np.testing.assert_allclose(
        jax.jit(per_sample)(*args), nstep_reference(*args, 0.9), rtol=1e-5, atol=1e-5
    )
    gammas = np.array([0.0, 0.5, 0.99, 1.0], np.float32)
    over_gamma = jax.vmap(lambda g: nstep_targets(*args, g))
    targets = jax.jit(over_gamma)(gammas)
    for i, gamma in enumerate(gammas):
        np.testing.assert_allclose(
            targets[i], nstep_reference(*args, float(gamma)), rtol=1e-5, atol=1e-5
        )


def test_nstep_hand_computed():
    gamma = 0.5
    rewards = np.array([1.0, 2.0, 4.0], np.float32)
    next_values = np.array([8.0, 16.0, 32.0], np.float32)
    no = np.zeros(3, bool)
    step1 = np.array([False, True, False])
    # No end: 1 + 0.5 * 2 + 0.25 * 4 + 0.125 * 32.
    np.testing.assert_allclose(nstep_jit(rewards, next_values, no, no, gamma), 7.0)
    # Terminated at step 1: the sum stops and the bootstrap is masked.
    np.testing.assert_allclose(nstep_jit(rewards, next_values, step1, no, gamma), 2.0)
    # Truncated at step 1: the sum stops, the bootstrap gamma^2 * V(s'_1) is kept.
    np.testing.assert_allclose(nstep_jit(rewards, next_values, no, step1, gamma), 6.0)
    # Both at step 1: termination masks.
    np.testing.assert_allclose(nstep_jit(rewards, next_values, step1, step1, gamma), 2.0)
    # Terminated at step 0: just r_0.
    step0 = np.array([True, False, False])
    np.testing.assert_allclose(nstep_jit(rewards, next_values, step0, no, gamma), 1.0)
    # gamma = 0 is the one-step reward.
    np.testing.assert_allclose(nstep_jit(rewards, next_values, no, no, 0.0), 1.0)


def test_nstep_ignores_data_after_the_first_end():
    rng = np.random.default_rng(8)
    rewards, next_values, terminated, truncated = random_windows(rng, 5, 500, end_prob=0.3)
    ends = terminated | truncated
    after_end = (np.cumsum(ends, axis=0) - ends) > 0
    assert after_end.any()
    noise = rng.normal(size=rewards.shape).astype(np.float32) * 1e3
    base = nstep_jit(rewards, next_values, terminated, truncated, 0.9)
    changed = nstep_jit(
        np.where(after_end, noise, rewards),
        np.where(after_end, noise, next_values),
        terminated | (after_end & (noise > 0)),
        truncated | (after_end & (noise < 0)),
        0.9,
    )
    np.testing.assert_array_equal(base, changed)


def test_nstep_one_step_is_td_target():
    rewards, next_values, terminated, truncated = random_windows(np.random.default_rng(9), 1, 500)
    expected = rewards[0] + 0.99 * np.where(terminated[0], 0.0, next_values[0])
    np.testing.assert_allclose(
        nstep_jit(rewards, next_values, terminated, truncated, 0.99), expected, rtol=1e-6
    )


@settings(max_examples=30, deadline=None)
@given(
    horizon=st.sampled_from([1, 3, 5]),
    gamma=st.floats(0.0, 1.0),
    end_prob=st.sampled_from([0.0, 0.3, 0.8]),
    seed=st.integers(0, 2**31 - 1),
)
def test_nstep_property_matches_loop(horizon, gamma, end_prob, seed):
    args = random_windows(np.random.default_rng(seed), horizon, 8, end_prob)
    np.testing.assert_allclose(
        nstep_jit(*args, gamma), nstep_reference(*args, gamma), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("gamma", [-0.1, 1.1, float("nan")])
def test_nstep_rejects_gamma_outside_unit_interval(gamma):
    args = random_windows(np.random.default_rng(0), 3, 2)
    with pytest.raises(ValueError, match=r"^gamma must be in \[0\.0, 1\.0\], got "):
        nstep_targets(*args, gamma)


@pytest.mark.parametrize("index,name", [(1, "next_values"), (2, "terminated"), (3, "truncated")])
def test_nstep_rejects_mismatched_shapes(index, name):
    args = list(random_windows(np.random.default_rng(0), 3, 2))
    args[index] = args[index][:, :1]
    message = f"{name} must have the shape of rewards (3, 2), got (3, 1)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        nstep_targets(*args, 0.9)


def test_empty_segment_is_a_clear_error():
    empty = np.zeros((0, 3), np.float32)
    message = r"^rewards must have at least one step, got shape \(0, 3\)$"
    with pytest.raises(ValueError, match=message):
        gae(empty, empty, empty, empty.astype(bool), empty.astype(bool), 0.9, 0.9)
    with pytest.raises(ValueError, match=message):
        nstep_targets(empty, empty, empty.astype(bool), empty.astype(bool), 0.9)


def test_nstep_integer_rewards_are_promoted_to_float32():
    rewards = np.array([[1], [2], [3]], np.int32)
    next_values = np.array([[0.5], [0.5], [4.0]], np.float32)
    flags = np.zeros((3, 1), bool)
    target = nstep_targets(rewards, next_values, flags, flags, 0.5)
    assert target.dtype == jnp.float32
    np.testing.assert_allclose(target, [1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4.0], rtol=1e-6)


@pytest.mark.parametrize("fn", ["gae", "nstep_targets"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_rewards_keep_their_precision_with_x64(fn, dtype):
    # With 64-bit types enabled the computation is in the rewards' float type: float32 rewards
    # are not widened to the x64 default, float64 rewards are not narrowed to float32, and
    # values of the other float type are cast to it.
    rng = np.random.default_rng(11)
    other = np.float64 if dtype == np.float32 else np.float32
    rewards = rng.normal(size=(4, 2)).astype(dtype)
    values = rng.normal(size=(4, 2)).astype(other)
    flags = np.zeros((4, 2), bool)
    with jax.enable_x64(True):
        if fn == "gae":
            out = gae(rewards, values, values, flags, flags, 0.9, 0.8)
        else:
            out = [nstep_targets(rewards, values, flags, flags, 0.9)]
    assert all(x.dtype == dtype for x in out)

"""Tests for jaxrl.core.distributions against closed-form NumPy formulas."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.core import (
    CategoricalParams,
    GaussianParams,
    entropy,
    kl_divergence,
    log_prob,
    mode,
    sample,
)


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


BATCH, ACTION_DIM, NUM_ACTIONS = 8, 3, 5
LOG_2PI = np.log(2.0 * np.pi)


# ---------------------------------------------------------------------------------------------
# NumPy references (float64)
# ---------------------------------------------------------------------------------------------


def np_gaussian_log_prob(mean, log_std, action):
    log_std = np.broadcast_to(log_std, mean.shape)
    z = (action - mean) / np.exp(log_std)
    return np.sum(-0.5 * z**2 - log_std - 0.5 * LOG_2PI, axis=-1)


def np_gaussian_kl(mean_p, log_std_p, mean_q, log_std_q):
    log_std_p = np.broadcast_to(log_std_p, mean_p.shape)
    log_std_q = np.broadcast_to(log_std_q, mean_q.shape)
    var_p, var_q = np.exp(2 * log_std_p), np.exp(2 * log_std_q)
    terms = log_std_q - log_std_p + (var_p + (mean_p - mean_q) ** 2) / (2 * var_q) - 0.5
    return np.sum(terms, axis=-1)


def np_gaussian_entropy(mean, log_std):
    log_std = np.broadcast_to(log_std, mean.shape)
    return np.sum(0.5 + 0.5 * LOG_2PI + log_std, axis=-1)


def np_log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def np_categorical_log_prob(logits, action):
    return np.take_along_axis(np_log_softmax(logits), action[..., None], axis=-1)[..., 0]


def np_categorical_kl(logits_p, logits_q):
    log_p, log_q = np_log_softmax(logits_p), np_log_softmax(logits_q)
    return np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)


def np_categorical_entropy(logits):
    log_p = np_log_softmax(logits)
    return -np.sum(np.exp(log_p) * log_p, axis=-1)


def f64(x):
    return np.asarray(x, np.float64)


@pytest.fixture(scope="module")
def gaussians():
    rng = np.random.default_rng(0)

    def make():
        return GaussianParams(
            mean=rng.normal(size=(BATCH, ACTION_DIM)).astype(np.float32),
            log_std=rng.uniform(-1.0, 0.5, size=(ACTION_DIM,)).astype(np.float32),
        )

    p, q = make(), make()
    action = rng.normal(size=(BATCH, ACTION_DIM)).astype(np.float32) * 2
    return p, q, action


@pytest.fixture(scope="module")
def categoricals():
    rng = np.random.default_rng(1)
    p = CategoricalParams(rng.normal(size=(BATCH, NUM_ACTIONS)).astype(np.float32) * 2)
    q = CategoricalParams(rng.normal(size=(BATCH, NUM_ACTIONS)).astype(np.float32) * 2)
    action = rng.integers(0, NUM_ACTIONS, size=(BATCH,)).astype(np.int32)
    return p, q, action


# ---------------------------------------------------------------------------------------------
# Diagonal Gaussian
# ---------------------------------------------------------------------------------------------


def test_gaussian_log_prob_with_broadcast_log_std(variant, gaussians):
    p, _, action = gaussians
    got = variant(log_prob)(p, action)
    assert got.shape == (BATCH,)
    expected = np_gaussian_log_prob(f64(p.mean), f64(p.log_std), f64(action))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_gaussian_log_prob_with_full_log_std(variant, gaussians):
    p, _, action = gaussians
    full = GaussianParams(p.mean, np.broadcast_to(p.log_std, p.mean.shape) + 0.1 * p.mean)
    expected = np_gaussian_log_prob(f64(full.mean), f64(full.log_std), f64(action))
    np.testing.assert_allclose(variant(log_prob)(full, action), expected, rtol=1e-5, atol=1e-5)


def test_gaussian_kl(variant, gaussians):
    p, q, _ = gaussians
    got = variant(kl_divergence)(p, q)
    assert got.shape == (BATCH,)
    expected = np_gaussian_kl(f64(p.mean), f64(p.log_std), f64(q.mean), f64(q.log_std))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(variant(kl_divergence)(p, p), np.zeros(BATCH), atol=1e-6)


def test_gaussian_entropy(variant, gaussians):
    p, _, _ = gaussians
    got = variant(entropy)(p)
    assert got.shape == (BATCH,)
    np.testing.assert_allclose(
        got, np_gaussian_entropy(f64(p.mean), f64(p.log_std)), rtol=1e-5, atol=1e-5
    )


def test_gaussian_sample_shape_and_moments(variant, gaussians):
    p, _, _ = gaussians
    # Row 0's parameters broadcast to 20,000 rows: the sample shape, and its moments.
    many = GaussianParams(np.broadcast_to(p.mean[0], (20_000, ACTION_DIM)), p.log_std)
    draw = variant(sample)(jax.random.key(0), many)
    assert draw.shape == (20_000, ACTION_DIM)
    assert jnp.issubdtype(draw.dtype, jnp.floating)
    draws = np.asarray(draw, np.float64)
    std = np.exp(f64(p.log_std))
    assert np.all(np.abs(draws.mean(0) - p.mean[0]) < 5 * std / np.sqrt(20_000))
    np.testing.assert_allclose(draws.std(0), std, rtol=0.03)
    # Same key, same sample; another key, another sample.
    np.testing.assert_array_equal(draw, variant(sample)(jax.random.key(0), many))
    assert not np.allclose(draw, variant(sample)(jax.random.key(1), many))


def test_gaussian_mode_is_mean(gaussians):
    p, _, _ = gaussians
    np.testing.assert_array_equal(mode(p), p.mean)
    np.testing.assert_array_equal(jax.jit(mode)(p), p.mean)


# ---------------------------------------------------------------------------------------------
# Categorical
# ---------------------------------------------------------------------------------------------


def test_categorical_log_prob(variant, categoricals):
    p, _, action = categoricals
    got = variant(log_prob)(p, action)
    assert got.shape == (BATCH,)
    np.testing.assert_allclose(
        got, np_categorical_log_prob(f64(p.logits), action), rtol=1e-5, atol=1e-5
    )


def test_categorical_kl(variant, categoricals):
    p, q, _ = categoricals
    got = variant(kl_divergence)(p, q)
    assert got.shape == (BATCH,)
    np.testing.assert_allclose(
        got, np_categorical_kl(f64(p.logits), f64(q.logits)), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(variant(kl_divergence)(p, p), np.zeros(BATCH), atol=1e-6)


def test_categorical_entropy(variant, categoricals):
    p, _, _ = categoricals
    np.testing.assert_allclose(
        variant(entropy)(p), np_categorical_entropy(f64(p.logits)), rtol=1e-5, atol=1e-5
    )


def test_categorical_is_shift_invariant_and_stable_for_large_logits(categoricals):
    p, q, action = categoricals
    big_p = CategoricalParams(p.logits * 30 + 100)
    big_q = CategoricalParams(q.logits * 30 - 100)
    np.testing.assert_allclose(
        log_prob(big_p, action),
        np_categorical_log_prob(f64(big_p.logits), action),
        rtol=1e-5,
        atol=1e-4,
    )
    np.testing.assert_allclose(
        kl_divergence(big_p, big_q),
        np_categorical_kl(f64(big_p.logits), f64(big_q.logits)),
        rtol=1e-4,
        atol=1e-3,
    )
    shifted = CategoricalParams(p.logits + 7.0)
    np.testing.assert_allclose(log_prob(shifted, action), log_prob(p, action), atol=1e-5)


def test_categorical_sample_shape_and_frequencies(variant, categoricals):
    p, _, _ = categoricals
    # Row 0's logits broadcast to 20,000 rows: the sample shape, and its frequencies.
    many = CategoricalParams(np.broadcast_to(p.logits[0], (20_000, NUM_ACTIONS)))
    draw = variant(sample)(jax.random.key(0), many)
    assert draw.shape == (20_000,)
    assert jnp.issubdtype(draw.dtype, jnp.integer)
    draws = np.asarray(draw)
    assert np.all((draws >= 0) & (draws < NUM_ACTIONS))
    frequencies = np.bincount(draws, minlength=NUM_ACTIONS) / len(draws)
    probs = np.exp(np_log_softmax(f64(p.logits[0])))
    np.testing.assert_allclose(frequencies, probs, atol=0.015)


def test_categorical_mode_is_argmax(categoricals):
    p, _, _ = categoricals
    expected = np.argmax(p.logits, axis=-1)
    np.testing.assert_array_equal(mode(p), expected)
    np.testing.assert_array_equal(jax.jit(mode)(p), expected)


def test_categorical_mode_of_two_batch_axes_is_argmax_over_actions():
    # Logits [2, 3, 4]: the argmax is over the last (action) axis, not the second batch axis.
    logits = np.random.default_rng(7).normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(mode(CategoricalParams(logits)), np.argmax(logits, axis=-1))


# ---------------------------------------------------------------------------------------------
# vmap, properties and errors
# ---------------------------------------------------------------------------------------------


def test_vmapped_over_the_batch_equals_batched(gaussians, categoricals):
    @jax.jit
    def both(p, q, action, cp, cq, caction):
        gaussian_axes = GaussianParams(0, None)  # state-independent log_std is not mapped
        vmapped = (
            jax.vmap(log_prob, in_axes=(gaussian_axes, 0))(p, action),
            jax.vmap(kl_divergence, in_axes=(gaussian_axes, gaussian_axes))(p, q),
            jax.vmap(entropy, in_axes=(gaussian_axes,))(p),
            jax.vmap(log_prob)(cp, caction),
            jax.vmap(kl_divergence)(cp, cq),
            jax.vmap(entropy)(cp),
        )
        batched = (
            log_prob(p, action),
            kl_divergence(p, q),
            entropy(p),
            log_prob(cp, caction),
            kl_divergence(cp, cq),
            entropy(cp),
        )
        return vmapped, batched

    vmapped, batched = both(*gaussians, *categoricals)
    for v, b in zip(vmapped, batched, strict=True):
        assert v.shape == b.shape == (BATCH,)
        np.testing.assert_allclose(v, b, rtol=1e-6, atol=1e-6)


@jax.jit
def _kls(p, q, cp, cq):
    return kl_divergence(p, q), kl_divergence(cp, cq)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(0.01, 5.0))
def test_kl_is_non_negative_and_matches_closed_form(seed, scale):
    rng = np.random.default_rng(seed)

    def gaussian():
        return GaussianParams(
            (rng.normal(size=(4, 2)) * scale).astype(np.float32),
            rng.uniform(-2, 1, size=(2,)).astype(np.float32),
        )

    def categorical():
        return CategoricalParams((rng.normal(size=(4, 3)) * scale).astype(np.float32))

    p, q, cp, cq = gaussian(), gaussian(), categorical(), categorical()
    kl, ckl = (np.asarray(x) for x in _kls(p, q, cp, cq))
    assert np.all(kl >= -1e-5) and np.all(ckl >= -1e-6)
    expected = np_gaussian_kl(f64(p.mean), f64(p.log_std), f64(q.mean), f64(q.log_std))
    np.testing.assert_allclose(kl, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        ckl, np_categorical_kl(f64(cp.logits), f64(cq.logits)), rtol=1e-4, atol=1e-5
    )


def test_kl_between_different_kinds_raises(gaussians, categoricals):
    message = (
        "p and q must be the same kind of distribution, "
        f"got {GaussianParams} and {CategoricalParams}"
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        kl_divergence(gaussians[0], categoricals[0])


@pytest.mark.parametrize("fn", [entropy, mode, lambda params: log_prob(params, 0)])
def test_unknown_params_type_raises(fn):
    with pytest.raises(
        TypeError, match=r"^params must be GaussianParams or CategoricalParams, got tuple$"
    ):
        fn((np.zeros(2), np.zeros(2)))

"""Tests for jaxrl.core.SummaryStats (mean, population std, max, min of per-step metrics)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxrl.core import SummaryStats


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def assert_matches_numpy(stats, values):
    values = np.asarray(values, np.float64)
    np.testing.assert_allclose(stats.mean, values.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.std, values.std(axis=0, ddof=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.max, values.max(axis=0), rtol=1e-6)
    np.testing.assert_allclose(stats.min, values.min(axis=0), rtol=1e-6)


@pytest.mark.parametrize("shape", [(1,), (17,), (9, 3)])
def test_from_sequence_matches_numpy(variant, shape):
    values = np.random.default_rng(0).normal(size=shape).astype(np.float32) * 3 + 1
    stats = variant(SummaryStats.from_sequence)(values)
    assert isinstance(stats, SummaryStats)
    assert stats.mean.shape == shape[1:]
    assert_matches_numpy(stats, values)


def test_single_value_has_zero_std():
    stats = SummaryStats.from_sequence(np.array([2.5], np.float32))
    assert float(stats.std) == 0.0
    assert float(stats.mean) == float(stats.max) == float(stats.min) == 2.5


def test_std_is_population_std():
    stats = SummaryStats.from_sequence([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(stats.std, np.sqrt(1.25), rtol=1e-6)  # ddof=1 would be 1.29


def test_from_sequence_inside_a_jitted_update():
    # The typical use: summarize the per-minibatch losses collected by a scan.
    def update(losses):
        def step(carry, loss):
            return carry, loss * 2.0

        _, doubled = jax.lax.scan(step, None, losses)
        return SummaryStats.from_sequence(doubled).to_dict("actor_loss")

    losses = np.random.default_rng(1).normal(size=(6,)).astype(np.float32)
    logged = jax.jit(update)(losses)
    assert set(logged) == {
        "actor_loss/mean",
        "actor_loss/std",
        "actor_loss/max",
        "actor_loss/min",
    }
    doubled = 2.0 * losses.astype(np.float64)
    np.testing.assert_allclose(logged["actor_loss/mean"], doubled.mean(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logged["actor_loss/std"], doubled.std(), rtol=1e-5)
    np.testing.assert_allclose(logged["actor_loss/max"], doubled.max(), rtol=1e-6)
    np.testing.assert_allclose(logged["actor_loss/min"], doubled.min(), rtol=1e-6)


def test_from_sequence_vmapped_over_seeds():
    values = np.random.default_rng(2).normal(size=(4, 10)).astype(np.float32)
    stats = jax.vmap(SummaryStats.from_sequence)(values)
    assert stats.mean.shape == (4,)
    assert_matches_numpy(stats, values.T)


def test_to_dict_keys():
    stats = SummaryStats.from_sequence([1.0, 3.0])
    assert set(stats.to_dict()) == {"mean", "std", "max", "min"}
    logged = stats.to_dict("kl")
    assert set(logged) == {"kl/mean", "kl/std", "kl/max", "kl/min"}
    assert float(logged["kl/mean"]) == 2.0 and float(logged["kl/std"]) == 1.0


EMPTY_MESSAGE = r"^values must be a non-empty sequence \(shape \[K, \.\.\.\], K >= 1\)"


@pytest.mark.parametrize(
    "values", [[], np.zeros((0,), np.float32), np.zeros((0, 3)), np.float32(1.0)]
)
def test_empty_or_scalar_input_raises(values):
    with pytest.raises(ValueError, match=EMPTY_MESSAGE):
        SummaryStats.from_sequence(values)


def test_empty_input_raises_under_jit():
    with pytest.raises(ValueError, match=EMPTY_MESSAGE + r", got \(0,\)"):
        jax.jit(SummaryStats.from_sequence)(jnp.zeros((0,)))


@settings(max_examples=30, deadline=None)
@given(
    values=hnp.arrays(
        np.float32,
        st.sampled_from([(1,), (5,), (12,)]),
        elements=st.floats(-1e3, 1e3, width=32, allow_subnormal=False),
    )
)
def test_from_sequence_property(values):
    stats = SummaryStats.from_sequence(values)
    assert float(stats.min) <= float(stats.mean) + 1e-3
    assert float(stats.mean) <= float(stats.max) + 1e-3
    assert float(stats.max) == values.max() and float(stats.min) == values.min()
    np.testing.assert_allclose(stats.mean, values.astype(np.float64).mean(), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(stats.std, values.astype(np.float64).std(), rtol=1e-4, atol=1e-2)

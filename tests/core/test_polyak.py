"""Tests for jaxrl.core.soft_update (Polyak averaging of target networks)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.core import soft_update


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def nested_params(rng, dtype=np.float32):
    """A nested pytree: dicts, a list and a tuple, leaves of several shapes."""
    return {
        "actor": {
            "w": rng.normal(size=(3, 4)).astype(dtype),
            "b": rng.normal(size=(4,)).astype(dtype),
        },
        "critic": [rng.normal(size=(2, 2)).astype(dtype), rng.normal(size=()).astype(dtype)],
        "extra": (rng.normal(size=(5,)).astype(dtype),),
    }


def reference(target, online, tau):
    return jax.tree.map(
        lambda t, o: tau * np.asarray(o, np.float64) + (1.0 - tau) * np.asarray(t, np.float64),
        target,
        online,
    )


def assert_trees_close(actual, expected, **kwargs):
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(np.asarray(a, np.float64), e, **kwargs)


@pytest.mark.parametrize("tau", [0.005, 0.3, 0.77])
def test_soft_update_matches_formula(variant, tau):
    rng = np.random.default_rng(0)
    target, online = nested_params(rng), nested_params(rng)
    result = variant(soft_update)(target, online, tau)  # tau traced under jit
    assert_trees_close(result, reference(target, online, tau), rtol=1e-6, atol=1e-6)
    for leaf in jax.tree.leaves(result):
        assert leaf.dtype == jnp.float32


def test_soft_update_tau_zero_keeps_target_and_tau_one_copies_online(variant):
    rng = np.random.default_rng(1)
    target, online = nested_params(rng), nested_params(rng)
    kept = variant(soft_update)(target, online, 0.0)
    copied = variant(soft_update)(target, online, 1.0)
    jax.tree.map(np.testing.assert_array_equal, kept, target)
    jax.tree.map(np.testing.assert_array_equal, copied, online)


def test_soft_update_vmapped_over_tau():
    rng = np.random.default_rng(2)
    target, online = nested_params(rng), nested_params(rng)
    taus = np.array([0.0, 0.005, 0.1, 0.5, 1.0], np.float32)
    stacked = jax.jit(jax.vmap(lambda tau: soft_update(target, online, tau)))(taus)
    for i, tau in enumerate(taus):
        lane = jax.tree.map(lambda x, i=i: x[i], stacked)
        assert_trees_close(lane, reference(target, online, float(tau)), rtol=1e-6, atol=1e-6)


def test_soft_update_vmapped_over_seeds():
    # A stack of target/online networks (one per seed) with a per-seed tau.
    rng = np.random.default_rng(3)
    targets = [nested_params(rng) for _ in range(3)]
    onlines = [nested_params(rng) for _ in range(3)]
    taus = np.array([0.2, 0.5, 0.9], np.float32)

    def stack(trees):
        return jax.tree.map(lambda *xs: np.stack(xs), *trees)

    result = jax.jit(jax.vmap(soft_update))(stack(targets), stack(onlines), taus)
    for i in range(3):
        lane = jax.tree.map(lambda x, i=i: x[i], result)
        assert_trees_close(
            lane, reference(targets[i], onlines[i], float(taus[i])), rtol=1e-6, atol=1e-6
        )


def test_soft_update_keeps_target_dtype():
    target = {"w": jnp.ones((3,), jnp.bfloat16)}
    online = {"w": jnp.zeros((3,), jnp.bfloat16)}
    result = soft_update(target, online, 0.25)
    assert result["w"].dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(result["w"], np.float32), 0.75)


@settings(max_examples=40, deadline=None)
@given(
    tau=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_soft_update_is_a_convex_combination(tau, seed):
    rng = np.random.default_rng(seed)
    target, online = nested_params(rng), nested_params(rng)
    result = soft_update(target, online, tau)
    for r, t, o in zip(
        jax.tree.leaves(result), jax.tree.leaves(target), jax.tree.leaves(online), strict=True
    ):
        r = np.asarray(r)
        slack = 1e-6 * np.maximum(np.abs(t), np.abs(o))  # float32 rounding
        assert np.all(r >= np.minimum(t, o) - slack)
        assert np.all(r <= np.maximum(t, o) + slack)
        # The distance to the target is a fraction tau of the distance to the online network.
        np.testing.assert_allclose(r - t, tau * (o - t), rtol=1e-5, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(a=st.floats(0.0, 1.0), b=st.floats(0.0, 1.0))
def test_soft_update_composes(a, b):
    # Two averaging steps towards a fixed online network are one step with 1 - (1-a)(1-b).
    rng = np.random.default_rng(4)
    target, online = nested_params(rng), nested_params(rng)
    twice = soft_update(soft_update(target, online, a), online, b)
    once = soft_update(target, online, 1.0 - (1.0 - a) * (1.0 - b))
    assert_trees_close(
        twice, jax.tree.map(lambda x: np.asarray(x, np.float64), once), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan")])
def test_soft_update_rejects_tau_outside_unit_interval(tau):
    params = {"w": np.zeros(2, np.float32)}
    with pytest.raises(ValueError, match=r"^tau must be in \[0\.0, 1\.0\], got "):
        soft_update(params, params, tau)


def test_soft_update_rejects_mismatched_structure():
    target = {"w": np.zeros(2)}
    for online in ({"v": np.zeros(2)}, {"w": np.zeros(2), "b": np.zeros(1)}):
        message = (
            f"online must have the tree structure of target: {jax.tree.structure(online)} "
            f"vs {jax.tree.structure(target)}"
        )
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            soft_update(target, online, 0.5)


def test_soft_update_rejects_mismatched_leaf_shapes():
    message = "online leaf of shape (3, 2) does not match target leaf of shape (2, 3)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        soft_update({"w": np.zeros((2, 3))}, {"w": np.zeros((3, 2))}, 0.5)


def test_soft_update_accepts_python_scalar_leaves():
    out = soft_update({"a": 1.0, "b": np.ones(2)}, {"a": 3.0, "b": np.zeros(2)}, 0.5)
    np.testing.assert_allclose(out["a"], 2.0)
    np.testing.assert_allclose(out["b"], 0.5)


def test_soft_update_keeps_the_target_dtype_when_online_differs():
    # Each new target leaf has its target leaf's dtype, whatever the online leaf's dtype.
    target = {"half": np.ones(3, np.float16), "single": np.ones(2, np.float32)}
    online = {"half": np.zeros(3, np.float32), "single": np.zeros(2, np.float16)}
    out = soft_update(target, online, 0.25)
    assert out["half"].dtype == jnp.float16 and out["single"].dtype == jnp.float32
    np.testing.assert_array_equal(out["half"], np.full(3, 0.75, np.float16))
    np.testing.assert_array_equal(out["single"], np.full(2, 0.75, np.float32))

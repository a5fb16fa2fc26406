"""Tests for jaxrl.core.tree: whole-pytree finiteness, selection and uniform_cond, against NumPy."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core.tree import all_finite, all_finite_by_leaf, tree_select, uniform_cond


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def mixed_tree(rng):
    """Leaves of several shapes and dtypes: float32, float16, int32, bool and a scalar."""
    return {
        "w": rng.normal(size=(3, 4)).astype(np.float32),
        "b": [rng.normal(size=(4,)).astype(np.float32), np.float32(rng.normal())],
        "half": rng.normal(size=(2, 2)).astype(np.float16),
        "count": np.arange(5, dtype=np.int32),
        "flag": np.array([True, False]),
    }


def numpy_all_finite(tree) -> bool:
    return all(
        bool(np.all(np.isfinite(leaf)))
        for leaf in jax.tree.leaves(tree)
        if np.issubdtype(np.asarray(leaf).dtype, np.inexact)
    )


@pytest.fixture(params=[all_finite, all_finite_by_leaf], ids=["concatenated", "by-leaf"])
def finite_test(request):
    return request.param


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["w", "b1", "half"])
def test_all_finite_finds_a_single_bad_element_in_any_leaf(variant, finite_test, bad, where):
    all_finite = finite_test
    tree = mixed_tree(np.random.default_rng(0))
    assert bool(variant(all_finite)(tree)) and numpy_all_finite(tree)
    if where == "w":
        tree["w"][2, 1] = bad
    elif where == "b1":
        tree["b"][1] = np.float32(bad)
    else:
        tree["half"][0, 1] = bad
    assert not numpy_all_finite(tree)
    assert not bool(variant(all_finite)(tree))


def test_all_finite_of_large_finite_values_and_of_no_floats(variant, finite_test):
    all_finite = finite_test
    # Finite values whose sum would overflow are still finite (their own sum is never taken).
    big = {"a": np.full((8,), 3e38, np.float32), "b": np.float32(-3e38)}
    assert bool(variant(all_finite)(big))
    assert bool(variant(all_finite)({"n": np.arange(3), "empty": []}))
    assert bool(variant(all_finite)({"empty": np.zeros((0, 3), np.float32)}))


def test_all_finite_under_vmap_is_per_row(finite_test):
    all_finite = finite_test
    rows = np.ones((4, 3), np.float32)
    rows[2, 1] = np.nan
    finite = jax.vmap(lambda row: all_finite({"x": row, "y": row[:1] * 2}))(rows)
    np.testing.assert_array_equal(np.asarray(finite), [True, True, False, True])


@pytest.mark.parametrize("pred", [True, False])
def test_tree_select_picks_a_whole_tree(variant, pred):
    rng = np.random.default_rng(1)
    a, b = mixed_tree(rng), mixed_tree(rng)
    chosen = variant(tree_select)(jnp.asarray(pred), a, b)
    expected = jax.tree.map(lambda x, y: np.where(pred, x, y), a, b)
    assert jax.tree.structure(chosen) == jax.tree.structure(expected)
    for got, want in zip(jax.tree.leaves(chosen), jax.tree.leaves(expected), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_tree_select_under_vmap_selects_per_row():
    on_true = {"x": np.arange(6.0, dtype=np.float32).reshape(3, 2)}
    on_false = {"x": -np.ones((3, 2), np.float32)}
    pred = jnp.asarray([True, False, True])
    chosen = jax.vmap(tree_select)(pred, on_true, on_false)
    np.testing.assert_array_equal(np.asarray(chosen["x"]), [[0, 1], [-1, -1], [4, 5]])


def test_tree_select_refuses_trees_that_differ():
    # JAX's own message names the leaf and both types.
    with pytest.raises(TypeError, match=re.escape("path ['x'] has type float32[2]")):
        tree_select(jnp.asarray(True), {"x": jnp.zeros(2)}, {"x": jnp.zeros(3)})


# ---------------------------------------------------------------------------------------------
# uniform_cond: lax.cond's values; under vmap one branch when the batch agrees
# ---------------------------------------------------------------------------------------------


def _branches(calls: dict, scale: jax.Array):
    """Two branches that count their runs (host callbacks) and close over a traced value."""

    def count(name):
        jax.debug.callback(lambda: calls.__setitem__(name, calls[name] + 1))

    def on_true(x, y):
        count("true")
        return {"out": x * scale + y, "n": jnp.int32(1)}

    def on_false(x, y):
        count("false")
        return {"out": x - y, "n": jnp.int32(0)}

    return on_true, on_false


def _numpy_cond(pred, x, y, scale):
    return {"out": np.where(pred, x * scale + y, x - y), "n": np.where(pred, 1, 0)}


@pytest.mark.parametrize("pred", [True, False])
def test_uniform_cond_is_lax_cond_unbatched(variant, pred):
    calls = {"true": 0, "false": 0}
    x, y, scale = np.float32(1.5), np.float32(2.0), np.float32(3.0)

    def fn(pred, x, y, scale):
        return uniform_cond(pred, *_branches(calls, scale), x, y)

    got = variant(fn)(pred, x, y, scale)
    jax.effects_barrier()
    want = _numpy_cond(pred, x, y, scale)
    np.testing.assert_array_equal(got["out"], want["out"])
    assert int(got["n"]) == int(want["n"]) and calls["true" if pred else "false"] >= 1
    assert calls["false" if pred else "true"] == 0


@pytest.mark.parametrize(
    "pred, runs",
    [
        ([True, True, True, True], {"true"}),
        ([False, False, False, False], {"false"}),
        ([True, False, False, True], {"true", "false"}),
    ],
)
def test_uniform_cond_under_vmap_runs_only_the_branch_the_batch_takes(variant, pred, runs):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    scale = rng.normal(size=(4, 1)).astype(np.float32)  # a batched value the branches close over
    pred = np.asarray(pred)
    calls = {"true": 0, "false": 0}

    def fn(pred, x, y, scale):
        return uniform_cond(pred, *_branches(calls, scale), x, y)

    batched = variant(jax.vmap(fn))
    batched(pred, x, y, scale)  # compiled (jit) or traced once
    jax.effects_barrier()
    calls.update(true=0, false=0)
    got = batched(pred, x, y, scale)
    jax.effects_barrier()
    want = _numpy_cond(pred[:, None], x, y, scale)
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-6)
    np.testing.assert_array_equal(got["n"], want["n"][:, 0])
    assert {name for name, count in calls.items() if count} == runs


def test_uniform_cond_under_nested_vmap_and_scan_with_unbatched_operands():
    """Settings x seeds (two vmaps), an unbatched operand, inside a scan: lax.cond's values."""

    def run(x, scale):
        def body(carry, _):
            value, step = carry
            value = uniform_cond(step >= 2, lambda v, s: v * s, lambda v, s: v + s, value, 0.5)
            return (value * scale, step + 1), value

        return jax.lax.scan(body, (x, 0), None, length=4)[1]

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    scale = np.array([1.0, 2.0], np.float32)
    got = jax.jit(jax.vmap(jax.vmap(run, in_axes=(0, None)), in_axes=(0, 0)))(x, scale)
    want = np.empty((2, 3, 4), np.float32)
    for i, j in np.ndindex(2, 3):
        value = x[i, j]
        for step in range(4):
            value = value * 0.5 if step >= 2 else value + 0.5
            want[i, j, step] = value
            value = value * scale[i]
    np.testing.assert_allclose(got, want, rtol=1e-6)

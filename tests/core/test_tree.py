"""Tests for jaxrl.core.tree: whole-pytree finiteness, selection and apply_if, against NumPy."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core.tree import all_finite, all_finite_by_leaf, apply_if, tree_select


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
# apply_if: lax.cond(pred, fun, identity)'s values; under vmap fun once when the batch agrees
# ---------------------------------------------------------------------------------------------


def _counted_step(calls: dict, scale: jax.Array):
    """A step that counts its runs (a host callback) and closes over a traced value."""

    def step(x, n):
        jax.debug.callback(lambda: calls.__setitem__("runs", calls["runs"] + 1))
        return x * scale + 1.0, n + 1

    return step


def _numpy_apply_if(pred, x, n, scale):
    return np.where(pred, x * scale + 1.0, x), np.where(pred, n + 1, n)


@pytest.mark.parametrize("pred", [True, False])
def test_apply_if_is_lax_cond_unbatched(variant, pred):
    calls = {"runs": 0}
    x, n, scale = np.float32(1.5), np.int32(3), np.float32(3.0)

    def fn(pred, x, n, scale):
        return apply_if(pred, _counted_step(calls, scale), x, n)

    got = variant(fn)(pred, x, n, scale)
    jax.effects_barrier()
    want = _numpy_apply_if(pred, x, n, scale)
    np.testing.assert_array_equal(got[0], want[0])
    assert int(got[1]) == int(want[1]) and got[1].dtype == np.int32
    assert (calls["runs"] >= 1) == pred


def test_apply_if_with_one_operand_returns_it_not_a_tuple():
    out = jax.jit(lambda p, x: apply_if(p, lambda x: {"a": x["a"] * 2}, x))(True, {"a": 2.0})
    assert float(out["a"]) == 4.0


@pytest.mark.parametrize(
    "pred, runs",
    [
        ([True, True, True, True], 1),
        ([False, False, False, False], 0),
        ([True, False, True, True], 1),
    ],
)
def test_apply_if_under_vmap_runs_the_step_once_or_not_at_all(variant, pred, runs):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    n = np.arange(4, dtype=np.int32)
    scale = rng.normal(size=(4, 1)).astype(np.float32)  # a batched value the step closes over
    pred = np.asarray(pred)
    calls = {"runs": 0}

    def fn(pred, x, n, scale):
        return apply_if(pred, _counted_step(calls, scale), x, n)

    batched = variant(jax.vmap(fn))
    batched(pred, x, n, scale)  # compiled (jit) or traced once
    jax.effects_barrier()
    calls["runs"] = 0
    got = batched(pred, x, n, scale)
    jax.effects_barrier()
    want = _numpy_apply_if(pred[:, None], x, n[:, None], scale)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], want[1][:, 0])
    assert calls["runs"] == runs  # one batched step (a callback call), or none


def test_apply_if_under_nested_vmap_and_scan_with_unbatched_operands():
    """Settings x seeds (two vmaps), an unbatched operand, inside a scan: lax.cond's values."""

    def run(x, scale):
        def body(carry, _):
            value, step = carry
            value, half = apply_if(step >= 2, lambda v, h: (v * h, h), value, 0.5)
            return (value * scale + half, step + 1), value

        return jax.lax.scan(body, (x, 0), None, length=4)[1]

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    scale = np.array([1.0, 2.0], np.float32)
    got = jax.jit(jax.vmap(jax.vmap(run, in_axes=(0, None)), in_axes=(0, 0)))(x, scale)
    want = np.empty((2, 3, 4), np.float32)
    for i, j in np.ndindex(2, 3):
        value = x[i, j]
        for step in range(4):
            value = value * 0.5 if step >= 2 else value
            want[i, j, step] = value
            value = value * scale[i] + 0.5
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_apply_if_refuses_a_step_that_changes_its_operands_types():
    with pytest.raises(TypeError, match="fun must return its operands' structure"):
        apply_if(jnp.asarray(True), lambda x: x.astype(jnp.int32), jnp.zeros(2))
    with pytest.raises(TypeError, match="fun must return its operands' structure"):
        apply_if(jnp.asarray(True), lambda x, y: x, jnp.zeros(2), jnp.zeros(2))


def test_apply_if_takes_operands_with_array_valued_static_fields():
    # MuJoCo XLA's Data and Model carry NumPy arrays as static (non-pytree) fields; the check
    # of fun's result compares leaves, never those fields (an array's truth is ambiguous).
    from flax import struct

    @struct.dataclass
    class Data:
        x: jax.Array
        table: np.ndarray = struct.field(pytree_node=False)

    data = Data(jnp.ones(3), np.arange(4))
    out = jax.jit(lambda p: apply_if(p, lambda d: d.replace(x=d.x * 2), data))(True)
    np.testing.assert_array_equal(out.x, 2 * np.ones(3))
    with pytest.raises(TypeError, match="fun must return its operands' structure"):
        apply_if(jnp.asarray(True), lambda d: d.replace(x=d.x[:2]), data)

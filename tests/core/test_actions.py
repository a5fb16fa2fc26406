"""Tests for jaxrl.core.actions: bounding and scaling policy outputs to a Box action space."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.core import bound_action, map_action, scale_action, unscale_action


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def np_map_action(action, low, high, action_scaling, method):
    action = np.asarray(action, np.float64)
    if method == "clip":
        action = np.clip(action, -1.0, 1.0)
    elif method == "tanh":
        action = np.tanh(action)
    if action_scaling:
        action = low + (high - low) * (action + 1.0) / 2.0
    return action


def random_box(rng, batch=64, dim=3):
    low = rng.uniform(-3.0, 1.0, size=(dim,)).astype(np.float32)
    high = (low + rng.uniform(0.1, 4.0, size=(dim,))).astype(np.float32)
    # Raw actions well inside and well outside [-1, 1].
    action = (rng.normal(size=(batch, dim)) * 2.0).astype(np.float32)
    return action, low, high


@pytest.mark.parametrize("method", ["clip", "tanh", None])
@pytest.mark.parametrize("action_scaling", [True, False])
def test_map_action_matches_numpy(variant, method, action_scaling):
    action, low, high = random_box(np.random.default_rng(0))
    fn = functools.partial(map_action, action_scaling=action_scaling, action_bound_method=method)
    got = variant(fn)(action, low, high)  # low/high traced under jit
    assert got.shape == action.shape
    expected = np_map_action(action, low, high, action_scaling, method)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["clip", "tanh"])
def test_map_action_stays_in_bounds_up_to_rounding(variant, method):
    rng = np.random.default_rng(1)
    action, low, high = random_box(rng, batch=2000)
    action[:10] = np.array([1e6, -1e6, 30.0])  # saturating inputs
    fn = functools.partial(map_action, action_bound_method=method)
    out = np.asarray(variant(fn)(action, low, high))
    slack = 4 * np.finfo(np.float32).eps * np.maximum(np.abs(low), np.abs(high))
    assert np.all(out >= low - slack) and np.all(out <= high + slack)
    bounded = np.asarray(
        variant(functools.partial(bound_action, action_bound_method=method))(action)
    )
    assert np.all((bounded >= -1.0) & (bounded <= 1.0))


@pytest.mark.parametrize("method", ["clip", "tanh"])
def test_map_action_stays_exactly_in_bounds(method):
    low, high = np.float32(-1.0), np.float32(0.1)
    out = np.asarray(map_action(np.float32(50.0), low, high, True, method))
    assert low <= out <= high


def test_map_action_vmapped_over_envs():
    # One Box per environment (vmapped low/high), a batch of actions each.
    rng = np.random.default_rng(2)
    boxes = [random_box(rng, batch=8) for _ in range(4)]
    actions, lows, highs = (np.stack(parts) for parts in zip(*boxes, strict=True))
    got = jax.jit(jax.vmap(map_action))(actions, lows, highs)
    for i in range(4):
        expected = np_map_action(actions[i], lows[i], highs[i], True, "clip")
        np.testing.assert_allclose(got[i], expected, rtol=1e-5, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    action=st.floats(-10.0, 10.0),
    low=st.floats(-100.0, 99.0),
    width=st.floats(0.01, 100.0),
    method=st.sampled_from(["clip", "tanh", None]),
)
def test_scale_unscale_roundtrip_and_map_action_property(action, low, width, method):
    action = np.float32(action)
    low = np.float32(low)
    high = np.float32(low + width)
    bounded = np.asarray(bound_action(np.float32(action), method), np.float64)
    expected_bounded = np_map_action(action, low, high, False, method)
    np.testing.assert_allclose(bounded, expected_bounded, rtol=1e-6, atol=1e-6)
    scaled = np.asarray(scale_action(np.float32(bounded), low, high), np.float64)
    scale = max(abs(float(low)), abs(float(high)))
    np.testing.assert_allclose(
        scaled, np_map_action(action, low, high, True, method), atol=1e-5 * scale
    )
    # unscale(scale(a)) == a, up to float32 rounding relative to the box width.
    roundtrip = np.asarray(unscale_action(np.float32(scaled), low, high), np.float64)
    np.testing.assert_allclose(roundtrip, bounded, atol=1e-5 * scale / (high - low) + 1e-6)
    if method is not None:
        assert -1.0 <= bounded <= 1.0


def test_scale_action_endpoints():
    low, high = np.array([-2.0, 0.0], np.float32), np.array([2.0, 4.0], np.float32)
    np.testing.assert_allclose(scale_action(-np.ones(2, np.float32), low, high), low)
    np.testing.assert_allclose(scale_action(np.ones(2, np.float32), low, high), high)
    np.testing.assert_allclose(scale_action(np.zeros(2, np.float32), low, high), [0.0, 2.0])
    np.testing.assert_allclose(unscale_action(high, low, high), np.ones(2))
    np.testing.assert_allclose(unscale_action(low, low, high), -np.ones(2))


def test_no_scaling_ignores_the_bounds():
    # Without action_scaling, low/high are not used (not even checked).
    action = np.array([0.5, -3.0], np.float32)
    out = map_action(action, np.float32(np.nan), np.float32(np.nan), False, "clip")
    np.testing.assert_array_equal(out, [0.5, -1.0])


@pytest.mark.parametrize("method", ["sigmoid", "Clip", "", 0])
def test_unknown_bound_method_raises(method):
    action = np.zeros(2, np.float32)
    message = re.escape(
        f"action_bound_method must be one of 'clip', 'tanh' or None, got {method!r}"
    )
    with pytest.raises(ValueError, match=f"^{message}$"):
        map_action(action, -np.ones(2), np.ones(2), True, method)
    with pytest.raises(ValueError, match=f"^{message}$"):
        map_action(action, -np.ones(2), np.ones(2), False, method)
    with pytest.raises(ValueError, match=f"^{message}$"):
        bound_action(action, method)


def test_scaling_needs_finite_increasing_bounds():
    action = np.zeros(2, np.float32)
    finite = "^action_scaling needs a Box action space with finite low and high bounds$"
    with pytest.raises(ValueError, match=finite):
        map_action(action, np.array([-np.inf, -1.0]), np.ones(2))
    with pytest.raises(ValueError, match=finite):
        map_action(action, -np.ones(2), np.array([1.0, np.nan]))
    with pytest.raises(
        ValueError, match=r"^action space bounds need low < high, got low=\[ 1\. -1\.\]"
    ):
        map_action(action, np.array([1.0, -1.0]), np.ones(2))
    with pytest.raises(
        ValueError, match=r"^low and high must broadcast together, got shapes \(2,\) and \(3,\)$"
    ):
        map_action(action, -np.ones(2), np.ones(3))


def test_map_action_jit_with_static_method():
    action, low, high = random_box(np.random.default_rng(3))
    jitted = jax.jit(map_action, static_argnames=("action_scaling", "action_bound_method"))
    got = jitted(action, low, high, action_scaling=True, action_bound_method="tanh")
    np.testing.assert_allclose(
        got, np_map_action(action, low, high, True, "tanh"), rtol=1e-5, atol=1e-5
    )
    assert got.dtype == jnp.float32


def test_map_action_accepts_broadcastable_bounds():
    out = map_action(jnp.array([1.0, -1.0]), -1.0, np.array([2.0, 3.0]))
    np.testing.assert_allclose(out, [2.0, -1.0])


def test_default_bound_method_is_clip():
    # Tianshou's default action_bound_method: raw actions clipped to [-1, 1], then scaled.
    action = np.array([-3.0, -0.5, 0.25, 2.0], np.float32)
    np.testing.assert_array_equal(bound_action(action), [-1.0, -0.5, 0.25, 1.0])
    low, high = np.float32(-2.0), np.float32(2.0)
    np.testing.assert_array_equal(map_action(action, low, high), [-2.0, -1.0, 0.5, 2.0])

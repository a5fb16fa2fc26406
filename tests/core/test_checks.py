"""Tests for jaxrl.core._checks: the argument checks every core function shares.

Each message is matched in full: the messages name the offending argument and the expected
range or shape, and the algorithm objects surface them to users unchanged.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core._checks import (
    check_bool,
    check_in_range,
    check_int,
    check_key,
    check_min_rank,
    check_same_shape,
    concrete_value,
)


def test_concrete_value_of_concrete_and_traced_values():
    np.testing.assert_array_equal(concrete_value(jnp.arange(3)), [0, 1, 2])
    assert isinstance(concrete_value(0.5), np.ndarray)
    seen = []
    jax.jit(lambda x: seen.append(concrete_value(x)) or x)(1.0)
    jax.vmap(lambda x: seen.append(concrete_value(x)) or x)(jnp.ones(2))
    assert seen == [None, None]


@pytest.mark.parametrize(
    "value", [0.0, 0.5, 1.0, np.float32(1.0), np.array([0.0, 1.0]), 1, np.uint8(1), True]
)
def test_closed_interval_accepts_its_bounds(value):
    check_in_range("gamma", value, 0.0, 1.0)


@pytest.mark.parametrize(
    "value,low_open,high_open,interval",
    [
        (0.0, True, False, "(0.0, 1.0]"),
        (1.0, False, True, "[0.0, 1.0)"),
        (-0.5, False, False, "[0.0, 1.0]"),
        (1.5, False, False, "[0.0, 1.0]"),
        (float("nan"), False, False, "[0.0, 1.0]"),
        (np.array([0.5, 2.0]), False, False, "[0.0, 1.0]"),
    ],
)
def test_out_of_range_message(value, low_open, high_open, interval):
    message = f"gamma must be in {interval}, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_in_range("gamma", value, 0.0, 1.0, low_open=low_open, high_open=high_open)


def test_open_interval_accepts_its_interior():
    check_in_range("x", 0.5, 0.0, 1.0, low_open=True, high_open=True)
    check_in_range("x", np.nextafter(0.0, 1.0), 0.0, 1.0, low_open=True)
    check_in_range("x", np.nextafter(1.0, 0.0), 0.0, 1.0, high_open=True)


def test_infinite_bounds_are_open():
    check_in_range("x", 1e30, 0.0, float("inf"))
    check_in_range("x", -1e30, float("-inf"), 0.0)
    with pytest.raises(ValueError, match=re.escape("x must be in [0.0, inf), got inf")):
        check_in_range("x", float("inf"), 0.0, float("inf"))
    with pytest.raises(ValueError, match=re.escape("x must be in (-inf, 0.0], got -inf")):
        check_in_range("x", float("-inf"), float("-inf"), 0.0)


def test_non_numeric_value_is_a_type_error():
    with pytest.raises(TypeError, match=r"^gamma must be a number, got '0\.9'$"):
        check_in_range("gamma", "0.9", 0.0, 1.0)


def test_traced_values_are_skipped():
    jax.jit(lambda x: check_in_range("x", x, 0.0, 1.0) or x)(5.0)


def test_same_shape():
    check_same_shape(("a", "b", "c"), (np.zeros((2, 3)), np.ones((2, 3)), jnp.zeros((2, 3))))
    message = "c must have the shape of a (2, 3), got (3, 2)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_same_shape(("a", "b", "c"), (np.zeros((2, 3)), np.ones((2, 3)), np.zeros((3, 2))))
    message = "b must have the shape of a (2,), got ()"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_same_shape(("a", "b"), (np.zeros(2), 0.0))


def test_min_rank():
    check_min_rank("rewards", np.zeros(1), 1)
    check_min_rank("rewards", np.zeros((1, 2)), 2)
    message = "rewards must have at least 2 dimension(s), got shape (3,)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_min_rank("rewards", np.zeros(3), 2)
    message = "rewards must have at least one step, got shape (0, 4)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_min_rank("rewards", np.zeros((0, 4)), 1)


def test_check_key_takes_typed_and_raw_keys_concrete_or_traced():
    keys = [jax.random.key(0), jax.random.PRNGKey(0), jax.random.split(jax.random.key(0), 3)]
    for key in keys:
        check_key("key", key)
    jax.jit(lambda k: check_key("key", k) or 0)(jax.random.key(1))
    jax.vmap(lambda k: check_key("key", k) or 0)(jax.random.split(jax.random.PRNGKey(1), 2))


@pytest.mark.parametrize(
    "value, got",
    [
        (0, "int 0"),
        (None, "NoneType None"),
        (np.int32(3), "int32[]"),
        (jnp.zeros(2), "float32[2]"),
        (np.uint32(7), "uint32[]"),
    ],
)
def test_check_key_refuses_what_is_not_a_key(value, got):
    message = f"TRPO.init: key must be a PRNG key (jax.random.key(seed)), got {got}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        check_key("TRPO.init: key", value)


def test_check_key_refuses_a_traced_integer():
    with pytest.raises(
        TypeError, match=re.escape("key must be a PRNG key (jax.random.key(seed)), got int32[]")
    ):
        jax.jit(lambda k: check_key("key", k) or 0)(0)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.array(False)[()]])
def test_check_bool_accepts_python_and_numpy_bools(value):
    check_bool("flag", value)
    check_bool("flag", value, optional=True)


@pytest.mark.parametrize(
    "value,optional,message",
    [
        ("yes", False, "flag must be True or False, got 'yes'"),
        (1, False, "flag must be True or False, got 1"),
        (None, False, "flag must be True or False, got None"),
        (0, True, "flag must be True, False or None, got 0"),
        ("x" * 100, False, f"flag must be True or False, got {('x' * 100)!r:.60}"),
    ],
)
def test_check_bool_refuses_truthy_values_by_name(value, optional, message):
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        check_bool("flag", value, optional=optional)
    check_bool("flag", None, optional=True)


@pytest.mark.parametrize("value", [0, 7, np.int64(3), np.uint8(2), np.array(4), jnp.int32(5)])
def test_check_int_accepts_python_numpy_and_0d_integers(value):
    check_int("n", value)
    check_int("n", value, low=0, optional=True)


@pytest.mark.parametrize(
    "value,low,optional,error,message",
    [
        (True, None, False, TypeError, "n must be an integer, got True"),
        (np.bool_(False), None, False, TypeError, "n must be an integer, got np.False_"),
        (2.0, None, False, TypeError, "n must be an integer, got 2.0"),
        ("3", 1, False, TypeError, "n must be a positive integer, got '3'"),
        (np.arange(2), None, False, TypeError, "n must be an integer, got array([0, 1])"),
        (None, 1, False, TypeError, "n must be a positive integer, got None"),
        ("x", 1, True, TypeError, "n must be a positive integer or None, got 'x'"),
        (0, 1, False, ValueError, "n must be a positive integer, got 0"),
        (-1, 0, True, ValueError, "n must be an integer >= 0 or None, got -1"),
        (np.int64(2), 3, False, ValueError, "n must be an integer >= 3, got np.int64(2)"),
    ],
)
def test_check_int_refuses_by_name(value, low, optional, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        check_int("n", value, low=low, optional=optional)


def test_check_int_allows_none_only_when_optional():
    check_int("n", None, low=1, optional=True)

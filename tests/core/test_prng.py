"""Tests for jaxrl.core.prng: Threefry's numbers bit for bit, compiled as fewer kernels."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core import prng
from jaxrl.core.prng import BUCKETED_THREEFRY, bucket_size, bucketed_keys, to_bucketed, to_threefry

# Shapes below, at and above each bucket, and above the largest (hashed at their own size).
SHAPES = [(), (1,), (2,), (3,), (16,), (17,), (5, 7), (2, 3, 4), (256,), (257,), (64, 64)]


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def pair(seed: int) -> tuple[jax.Array, jax.Array]:
    """The same key data as a Threefry key and a bucketed one."""
    return jax.random.key(seed), jax.random.key(seed, impl=BUCKETED_THREEFRY)


def same(a, b) -> None:
    a, b = to_threefry(a), to_threefry(b)
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
        assert jax.random.key_impl(a) == jax.random.key_impl(b) == "threefry2x32"
        a, b = jax.random.key_data(a), jax.random.key_data(b)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert a.dtype == b.dtype and a.shape == b.shape


def test_bucket_size():
    sizes = [bucket_size(n) for n in (1, 2, 3, 16, 17, 256, 257, 4096)]
    assert sizes == [2, 2, 16, 16, 256, 256, 257, 4096]


def test_more_values_than_the_counters_hold_are_refused():
    """2**32 values would need Threefry's high counter words: refused, not wrapped around."""
    _, bucketed = pair(0)
    with pytest.raises(ValueError, match=r"fewer than 2\*\*32 values per call, got 4294967296"):
        jax.jit(lambda key: jax.random.bits(key, (2**16, 2**16))).lower(bucketed)


DRAWS = {
    "split": lambda key, shape: jax.random.split(key, shape),
    "normal": lambda key, shape: jax.random.normal(key, shape),
    "uniform": lambda key, shape: jax.random.uniform(key, shape),
    "bits32": lambda key, shape: jax.random.bits(key, shape),
    "bits8": lambda key, shape: jax.random.bits(key, shape, jnp.uint8),
    "bits16": lambda key, shape: jax.random.bits(key, shape, jnp.uint16),
    "randint": lambda key, shape: jax.random.randint(key, shape, -5, 1000),
}


@pytest.mark.parametrize("draw", list(DRAWS))
def test_same_numbers_as_threefry(variant, draw):
    """Each shape drawn eagerly (a program per shape), or all of them in one jitted program
    (one compilation per key type, not one per shape)."""
    threefry, bucketed = pair(123_456_789)
    draws = variant(lambda key: [DRAWS[draw](key, shape) for shape in SHAPES])
    for a, b in zip(draws(threefry), draws(bucketed), strict=True):
        same(a, b)


def test_same_64_bit_numbers_and_fold_ins(variant):
    threefry, bucketed = pair(7)
    with jax.enable_x64(True):
        for shape in [(), (3,), (300,)]:
            same(
                jax.random.bits(threefry, shape, jnp.uint64),
                jax.random.bits(bucketed, shape, jnp.uint64),
            )
    fold = variant(jax.random.fold_in)
    for data in (0, 1, 5, 2**31 + 3, 2**32 - 1):
        same(fold(threefry, np.uint32(data)), fold(bucketed, np.uint32(data)))
    same(jax.random.permutation(threefry, 100), jax.random.permutation(bucketed, 100))
    same(jax.random.choice(threefry, 50, (7,)), jax.random.choice(bucketed, 50, (7,)))


def test_same_numbers_under_vmap_and_chains():
    """Batched keys (the drivers vmap environments and seeds), and keys split from keys."""
    threefry, bucketed = pair(11)

    def chain(key):
        key, sub = jax.random.split(key)
        keys = jax.random.split(jax.random.fold_in(key, 3), 10)
        return jax.vmap(lambda k: jax.random.normal(k, (2, 3)))(keys) + jax.random.uniform(sub)

    for fn in (chain, jax.jit(chain)):
        same(fn(threefry), fn(bucketed))
    batched = jax.vmap(chain)
    for fn in (batched, jax.jit(batched)):
        same(fn(jax.random.split(threefry, 4)), fn(jax.random.split(bucketed, 4)))


def test_rewrapping_touches_only_threefry_keys():
    threefry, bucketed = pair(3)
    rbg = jax.random.key(3, impl="rbg")
    raw = jax.random.PRNGKey(3)
    tree = {"k": threefry, "ks": jax.random.split(threefry, 5), "rbg": rbg, "raw": raw, "x": 1.5}
    out = to_bucketed(tree)
    assert jax.random.key_impl(out["k"]) == BUCKETED_THREEFRY
    assert jax.random.key_impl(out["ks"]) == BUCKETED_THREEFRY
    assert out["rbg"] is rbg and out["raw"] is raw and out["x"] == 1.5
    back = to_threefry(out)
    assert jax.random.key_impl(back["ks"]) == "threefry2x32"
    same(back["ks"], tree["ks"])
    assert to_threefry(tree)["k"] is threefry  # Threefry keys pass through unchanged
    assert jax.random.key_impl(to_threefry(bucketed)) == "threefry2x32"


def test_is_key_only_for_typed_key_arrays():
    for key in (jax.random.key(0), jax.random.key(0, impl="rbg"), pair(1)[1]):
        assert prng.is_key(key) and prng.is_key(jax.random.split(key, 3))
    for other in (jax.random.PRNGKey(0), np.zeros(2, np.uint32), 1.5, None, "key"):
        assert not prng.is_key(other)


def test_bucketed_keys_wrapper():
    """Inside: bucketed keys; outside: Threefry keys and the same numbers."""
    seen = []

    def step(key, x):
        seen.append(jax.random.key_impl(key) == BUCKETED_THREEFRY)
        key, sub = jax.random.split(key)
        return key, x + jax.random.normal(sub, (4,))

    key = jax.random.key(5)
    plain = jax.jit(step)(key, jnp.zeros(4))
    wrapped = jax.jit(bucketed_keys(step))(key, jnp.zeros(4))
    assert seen == [False, True]
    same(plain[0], wrapped[0])
    same(plain[1], wrapped[1])


def test_bucketed_keys_is_a_no_op_off_cpu_and_for_the_other_counter_layout(monkeypatch):
    seen = []

    def fn(key):
        seen.append(jax.random.key_impl(key) == BUCKETED_THREEFRY)
        return jax.random.normal(key, (3,))

    with jax.threefry_partitionable(False):
        bucketed_keys(fn)(jax.random.key(0))
    monkeypatch.setattr(prng.jax, "default_backend", lambda: "gpu")
    bucketed_keys(fn)(jax.random.key(0))
    assert seen == [False, False]


def _canonical_fusions(hlo: str) -> set[str]:
    """The distinct fused computations of optimized HLO (names and metadata taken out): XLA
    compiles one kernel for all the fusions with the same computation."""
    bodies = re.findall(r"^%?([\w.\-]+) (\(.*?\)) -> (.*?) \{\n(.*?)^\}", hlo, re.M | re.S)
    computations = {name: (params, result, body) for name, params, result, body in bodies}
    called = re.findall(r" fusion\(.*calls=%?([\w.\-]+)", hlo)
    out = set()
    for name in called:
        params, result, body = computations[name]
        body = re.sub(r", metadata=\{[^}]*\}", "", body)
        body = re.sub(r"%[\w.\-]+", "%v", body)
        out.add(re.sub(r"[\w.\-]+:", "p:", params) + result + body)
    return out


def test_fewer_distinct_kernels_on_cpu():
    """Draws at six shapes of one bucket: Threefry compiles its hash for each shape, the
    bucketed keys once."""
    if jax.default_backend() != "cpu":
        pytest.skip("bucketing applies on CPU backends")

    def draws(key):
        keys = jax.random.split(key, 6)
        return [jax.random.normal(k, (n,)) for k, n in zip(keys, (3, 5, 7, 9, 11, 13), strict=True)]

    def distinct(fn):
        return len(_canonical_fusions(jax.jit(fn).lower(jax.random.key(0)).compile().as_text()))

    threefry, bucketed = distinct(draws), distinct(bucketed_keys(draws))
    assert bucketed + 10 <= threefry, (bucketed, threefry)

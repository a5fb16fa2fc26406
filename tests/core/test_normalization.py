"""Tests for jaxrl.core.RunningMeanStd (Chan et al. parallel mean/variance merge)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.core import RunningMeanStd
from jaxrl.core.normalization import OBS_CLIP, OBS_EPS, normalize_observations


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


def update(stats, batch):
    return stats.update(batch)


# Batches of samples of shape (3,): several sizes and one with two leading batch axes.
BATCH_SHAPES = [(7, 3), (1, 3), (32, 3), (4, 5, 3)]


def random_batches(rng, shapes=BATCH_SHAPES):
    return [rng.normal(loc=2.0, scale=3.0, size=shape).astype(np.float32) for shape in shapes]


def test_create_initial_state():
    stats = RunningMeanStd.create((3,))
    np.testing.assert_array_equal(stats.mean, np.zeros(3))
    np.testing.assert_array_equal(stats.var, np.ones(3))
    np.testing.assert_array_equal(stats.std, np.ones(3))
    assert stats.count.shape == () and float(stats.count) == 0.0
    assert stats.mean.dtype == jnp.float32
    scalar = RunningMeanStd.create()
    assert scalar.mean.shape == () and scalar.var.shape == ()


def test_batch_by_batch_equals_concatenation(variant):
    batches = random_batches(np.random.default_rng(0))
    stats = RunningMeanStd.create((3,))
    step = variant(update)
    seen = []
    for batch in batches:
        stats = step(stats, batch)
        seen.append(batch.reshape(-1, 3).astype(np.float64))
        everything = np.concatenate(seen)
        np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats.var, everything.var(axis=0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats.std, everything.std(axis=0), rtol=1e-5, atol=1e-5)
        assert float(stats.count) == len(everything)


def test_first_batch_replaces_the_initial_state():
    batch = np.random.default_rng(1).normal(size=(10, 2)).astype(np.float32)
    stats = RunningMeanStd.create((2,)).update(batch)
    np.testing.assert_allclose(stats.mean, batch.mean(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(stats.var, batch.var(axis=0), rtol=1e-5, atol=1e-6)


def test_scalar_statistics_for_return_scaling():
    # Return scaling keeps scalar statistics over a stream of [T, N] returns.
    rng = np.random.default_rng(2)
    batches = [rng.normal(size=(8, 4)).astype(np.float32) * 5 for _ in range(3)]
    stats = RunningMeanStd.create()
    for batch in batches:
        stats = stats.update(batch)
    everything = np.concatenate([b.ravel() for b in batches]).astype(np.float64)
    np.testing.assert_allclose(stats.mean, everything.mean(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.var, everything.var(), rtol=1e-5)
    assert float(stats.count) == 96


def test_empty_batch_leaves_statistics_unchanged():
    stats = RunningMeanStd.create((3,)).update(np.ones((4, 3), np.float32))
    unchanged = stats.update(np.zeros((0, 3), np.float32))
    jax.tree.map(np.testing.assert_array_equal, unchanged, stats)


def test_vmapped_over_independent_streams():
    rng = np.random.default_rng(3)
    batches = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)  # [update, stream, B, 3]
    stats = jax.vmap(lambda _: RunningMeanStd.create((3,)))(jnp.arange(5))
    step = jax.jit(jax.vmap(update))
    for batch in batches:
        stats = step(stats, batch)
    for lane in range(5):
        everything = batches[:, lane].reshape(-1, 3).astype(np.float64)
        np.testing.assert_allclose(stats.mean[lane], everything.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stats.var[lane], everything.var(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(stats.count, np.full(5, 12.0))


def test_normalize(variant):
    rng = np.random.default_rng(4)
    stats = RunningMeanStd.create((3,)).update(rng.normal(size=(50, 3)).astype(np.float32) * 4)
    x = rng.normal(size=(6, 3)).astype(np.float32) * 10
    mean, var = np.asarray(stats.mean, np.float64), np.asarray(stats.var, np.float64)
    expected = (x - mean) / np.sqrt(var + 1e-8)
    np.testing.assert_allclose(
        variant(lambda s, x: s.normalize(x))(stats, x), expected, rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        variant(lambda s, x: s.normalize(x, epsilon=0.5, clip=1.5))(stats, x),
        np.clip((x - mean) / np.sqrt(var + 0.5), -1.5, 1.5),
        rtol=1e-5,
        atol=1e-5,
    )


def test_normalize_initial_state_is_identity():
    x = np.array([[-2.0, 0.5, 3.0]], np.float32)
    np.testing.assert_allclose(RunningMeanStd.create((3,)).normalize(x), x, rtol=1e-6)


def test_normalize_constant_stream_is_finite():
    stats = RunningMeanStd.create((2,)).update(np.full((5, 2), 3.0, np.float32))
    np.testing.assert_array_equal(stats.var, np.zeros(2))
    out = stats.normalize(np.array([3.0, 4.0], np.float32))
    assert np.all(np.isfinite(out))


update_jit = jax.jit(update)


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(4)), seed=st.integers(0, 2**31 - 1))
def test_merge_order_invariance(order, seed):
    batches = random_batches(np.random.default_rng(seed))
    in_order = RunningMeanStd.create((3,))
    for batch in batches:
        in_order = update_jit(in_order, batch)
    permuted = RunningMeanStd.create((3,))
    for i in order:
        permuted = update_jit(permuted, batches[i])
    np.testing.assert_allclose(permuted.mean, in_order.mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(permuted.var, in_order.var, rtol=1e-5, atol=1e-5)
    assert float(permuted.count) == float(in_order.count) == 7 + 1 + 32 + 20


@pytest.mark.parametrize("split", [1, 30])
def test_two_pieces_equal_one_batch(split):
    flat = np.concatenate([b.reshape(-1, 3) for b in random_batches(np.random.default_rng(5))])
    once = RunningMeanStd.create((3,)).update(flat)
    twice = RunningMeanStd.create((3,)).update(flat[:split]).update(flat[split:])
    np.testing.assert_allclose(twice.mean, once.mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(twice.var, once.var, rtol=1e-5, atol=1e-5)
    assert float(twice.count) == float(once.count) == len(flat)


def test_update_rejects_batch_with_wrong_sample_shape():
    stats = RunningMeanStd.create((3,))
    trailing = r" \(trailing axes equal to the statistics' shape\), got "
    with pytest.raises(ValueError, match=r"^batch must have shape \[\.\.\., 3\]" + trailing):
        stats.update(np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"^batch must have shape \[\.\.\., 2, 3\]" + trailing):
        RunningMeanStd.create((2, 3)).update(np.zeros((3,), np.float32))


def _normalized_reference(obs, mean, var):
    """Tianshou's ``VectorEnvNormObs`` in float64: clip((obs - mean) / sqrt(var + eps), +-10)."""
    eps = np.finfo(np.float32).eps
    return np.clip((obs - mean) / np.sqrt(var + eps), -10.0, 10.0)


def test_observation_constants_are_tianshous():
    assert OBS_EPS == float(np.finfo(np.float32).eps)
    assert OBS_CLIP == 10.0


@pytest.mark.parametrize("update_stats", [True, False], ids=["update", "frozen"])
def test_normalize_observations_against_numpy(variant, update_stats):
    rng = np.random.default_rng(6)
    seen = rng.normal(loc=1.0, scale=0.5, size=(20, 3)).astype(np.float32)
    stats = RunningMeanStd.create((3,)).update(seen)
    obs = rng.normal(loc=1.0, scale=0.5, size=(2, 4, 3)).astype(np.float32)
    obs[0, 0] = [50.0, -50.0, 1.0]  # frozen statistics: beyond +-10 std, clipped both sides
    fn = variant(lambda s, o: normalize_observations(s, o, update_stats))
    new_stats, normalized = fn(stats, obs)

    merged = seen.astype(np.float64)
    if update_stats:
        merged = np.concatenate([merged, obs.reshape(-1, 3).astype(np.float64)])
    mean, var = merged.mean(axis=0), merged.var(axis=0)
    np.testing.assert_allclose(new_stats.mean, mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(new_stats.var, var, rtol=1e-5, atol=1e-5)
    assert float(new_stats.count) == len(merged)
    assert normalized.dtype == jnp.float32 and normalized.shape == obs.shape
    expected = _normalized_reference(obs.astype(np.float64), mean, var)
    np.testing.assert_allclose(normalized, expected, rtol=1e-5, atol=1e-5)
    if not update_stats:
        np.testing.assert_array_equal(normalized[0, 0, :2], [10.0, -10.0])


def test_normalize_observations_epsilon_is_float32s():
    # A constant stream has zero variance: the result is (obs - mean) / sqrt(eps), clipped.
    stats = RunningMeanStd.create((1,)).update(np.zeros((4, 1), np.float32))
    _, normalized = normalize_observations(stats, np.full((1, 1), 1e-4, np.float32), False)
    np.testing.assert_allclose(normalized, [[1e-4 / np.sqrt(np.finfo(np.float32).eps)]], rtol=1e-5)


def test_normalize_observations_without_statistics_casts_to_float32():
    obs = np.arange(6, dtype=np.int32).reshape(2, 3)
    stats, out = normalize_observations(None, obs, True)
    assert stats is None
    assert out.dtype == jnp.float32
    np.testing.assert_array_equal(out, obs.astype(np.float32))


def test_update_keeps_the_statistics_dtype():
    # A batch of another float type is cast to the statistics' dtype (with x64 a float64 batch
    # would otherwise turn float32 statistics into float64, changing a scan carry's type).
    batch = np.random.default_rng(8).normal(size=(6, 2))
    with jax.enable_x64(True):
        stats = RunningMeanStd.create((2,)).update(batch)
        assert stats.mean.dtype == stats.var.dtype == stats.count.dtype == jnp.float32
        wide = RunningMeanStd.create((2,), jnp.float64).update(batch.astype(np.float16))
        assert wide.mean.dtype == wide.var.dtype == jnp.float64
    np.testing.assert_allclose(stats.mean, batch.mean(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.var, batch.var(axis=0), rtol=1e-5, atol=1e-6)


def test_update_with_one_unbatched_sample():
    # Zero leading batch axes: a batch of shape S is one sample.
    sample = np.array([1.0, -2.0, 4.0], np.float32)
    stats = RunningMeanStd.create((3,)).update(np.zeros((2, 3), np.float32))
    one = stats.update(sample)
    batched = stats.update(sample[None])
    jax.tree.map(np.testing.assert_array_equal, one, batched)
    assert float(one.count) == 3.0
    np.testing.assert_allclose(one.mean, sample / 3, rtol=1e-6)

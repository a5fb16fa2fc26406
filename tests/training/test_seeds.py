"""How seeds run together: ``over_seeds`` batches them (vmap) or runs them one after another
(lax.map) in one program, with the same outputs up to float rounding."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxrl
from jaxrl.training import make_train_loop, over_seeds, resolve_seed_axis, train_until
from tests.training.test_jax_driver import TINY, WELL_CONDITIONED_TRPO, assert_trees_close


def halvings(x: jax.Array, limit: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A per-seed while_loop whose trip count depends on the seed's data (as CG's does)."""

    def body(state):
        value, count = state
        return value / 2.0, count + 1

    return lax.while_loop(lambda s: s[0] > limit, body, (x, jnp.zeros((), jnp.int32)))


@pytest.mark.parametrize("how", ["vmap", "map"])
def test_both_ways_give_every_seed_its_own_result(how):
    xs = jnp.asarray([1.0, 100.0, 3.0, 1e6])
    limits = jnp.asarray([0.5, 0.5, 2.0, 1.0])
    values, counts = jax.jit(over_seeds(halvings, how))(xs, limits)
    for i in range(4):
        value, count = halvings(xs[i], limits[i])
        assert float(values[i]) == float(value)
        assert int(counts[i]) == int(count)


def on_policy_auto_axis(backend: str) -> str:
    """What "auto" must pick for on-policy seeds on ``backend``: one after another on a CPU,
    batched on an accelerator."""
    return "map" if backend == "cpu" else "vmap"


@pytest.mark.parametrize("backend", ["host", "cpu", "gpu", "tpu"])
def test_auto_maps_on_policy_seeds_on_a_cpu_and_batches_the_others(monkeypatch, backend):
    """ "auto" on this host's backend ("host") and, with the default backend patched, on each
    kind: on-policy seeds mapped on a CPU and batched elsewhere, off-policy always batched."""
    if backend == "host":
        backend = jax.default_backend()
    else:
        monkeypatch.setattr(jax, "default_backend", lambda: backend)
    expected = on_policy_auto_axis(backend)
    assert resolve_seed_axis("auto", jaxrl.TRPO()) == expected
    assert resolve_seed_axis("auto", jaxrl.NPG()) == expected
    assert resolve_seed_axis("auto", jaxrl.DDPG()) == "vmap"
    assert resolve_seed_axis("auto") == "vmap"
    assert resolve_seed_axis("vmap", jaxrl.TRPO()) == "vmap"
    assert resolve_seed_axis("map", jaxrl.DDPG()) == "map"


def test_an_unknown_way_is_refused_by_name():
    with pytest.raises(
        ValueError, match=r"^over_seeds: how must be one of \['auto', 'vmap', 'map'\], got 'pmap'"
    ):
        over_seeds(lambda x: x, "pmap")
    loop = make_train_loop(WELL_CONDITIONED_TRPO, "Pendulum-v1", TINY)
    with pytest.raises(ValueError, match="seed_axis"):
        train_until(loop, jax.random.split(jax.random.key(0), 2), None, seed_axis="serial")


def test_mapped_and_batched_training_agree():
    """Two seeds of the driver trained mapped and batched: the same run up to float32 rounding
    (the well-conditioned agent of the vmapped-seed test, see there)."""
    loop = make_train_loop(WELL_CONDITIONED_TRPO, "Pendulum-v1", TINY)
    keys = jax.random.split(jax.random.key(0), 2)
    mapped_state, mapped = train_until(loop, keys, None, seed_axis="map")
    batched_state, batched = train_until(loop, keys, None, seed_axis="vmap")
    assert set(mapped) == set(batched)
    for name in mapped:
        assert mapped[name].shape == batched[name].shape, name
    np.testing.assert_array_equal(mapped["env_steps"], batched["env_steps"])
    np.testing.assert_allclose(mapped["eval/return"], batched["eval/return"], rtol=1e-3)
    assert_trees_close(mapped_state.actor.params, batched_state.actor.params, rtol=1e-3, atol=1e-4)


def test_auto_batches_the_seeds_of_environments_that_ask_for_it():
    class BatchFriendly:
        batches_seeds = True

    assert resolve_seed_axis("auto", jaxrl.TRPO(), BatchFriendly()) == "vmap"
    assert resolve_seed_axis("map", jaxrl.TRPO(), BatchFriendly()) == "map"
    loop = make_train_loop(WELL_CONDITIONED_TRPO, "Pendulum-v1", TINY)
    assert loop.env is not None and not getattr(loop.env, "batches_seeds", False)
    assert resolve_seed_axis("auto", loop.agent, loop.env) == on_policy_auto_axis(
        jax.default_backend()
    )


@pytest.mark.parametrize("how", ["vmap", "map"])
def test_seeds_draw_threefry_numbers_through_bucketed_keys_on_a_cpu(how):
    """On a CPU the programs over seeds see :data:`jaxrl.core.prng.BUCKETED_THREEFRY` keys
    (fewer distinct kernels); what they return is what Threefry gives, keys as Threefry keys."""
    from jaxrl.core.prng import BUCKETED_THREEFRY

    seen = []

    def one(key):
        seen.append(jax.random.key_impl(key) == BUCKETED_THREEFRY)
        key, sub = jax.random.split(key)
        return key, jax.random.normal(sub, (3,))

    keys = jax.random.split(jax.random.key(4), 3)
    key_out, draws = jax.jit(over_seeds(one, how))(keys)
    expected_keys, expected = jax.vmap(one)(keys)
    assert seen == [jax.default_backend() == "cpu", False]
    assert jax.random.key_impl(key_out) == "threefry2x32"
    np.testing.assert_array_equal(jax.random.key_data(key_out), jax.random.key_data(expected_keys))
    np.testing.assert_array_equal(draws, expected)

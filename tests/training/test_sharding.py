"""Sharding the seed axis over 4 forced CPU devices gives the unsharded results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    import jaxrl
    from jaxrl.training import TrainConfig, make_train, over_seeds, train_sharded

    def compare(sharded_state, sharded, plain_state, plain):
        # A program partitioned over 4 devices compiles to other float reduction orders
        # than one over 8 seeds on one device, so results agree to float32 rounding, not
        # bitwise; over a long run the rounding differences grow (training is chaotic), so
        # this compares the first two updates. CG's iteration count is a threshold test
        # (r.r < 1e-10) that rounding can move by one.
        for name in plain:
            a, b = np.asarray(sharded[name]), np.asarray(plain[name])
            if name == "cg_iterations":
                assert np.max(np.abs(a - b)) <= 1.0, name
            else:
                np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg=name)
        leaves = jax.tree_util.tree_leaves
        for a, b in zip(leaves(sharded_state), leaves(plain_state)):
            # CG amplifies rounding in the natural-gradient direction: ~1e-5 on O(0.1)
            # weights.
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-4)

    assert len(jax.devices()) == 4, jax.devices()
    agent = jaxrl.TRPO(gamma=0.95, max_kl=0.005, return_scaling=True, hidden_sizes=(16, 16),
                       deterministic_eval=True)
    config = TrainConfig(num_envs=4, num_steps=32, total_steps=256, eval_every=128,
                         eval_episodes=2)
    train = make_train(agent, "Pendulum-v1", config)
    keys = jax.random.split(jax.random.key(0), 8)
    # Each device's block of seeds batched (the default without an agent) or one seed after
    # another (lax.map: what "auto" picks for NPG/TRPO on a CPU), against the same on one
    # device.
    for axis in ("vmap", "map"):
        plain_state, plain = jax.jit(over_seeds(train, axis))(keys)
        sharded_state, sharded = train_sharded(train, keys, seed_axis=axis)
        assert len(sharded["eval/return"].sharding.device_set) == 4
        compare(sharded_state, sharded, plain_state, plain)
    # The same program twice: the same numbers, bitwise.
    _, again = train_sharded(train, keys, seed_axis="map")
    for a, b in zip(jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(sharded)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    try:
        train_sharded(train, keys[:6])
    except ValueError as error:
        assert "multiple of the number of devices" in str(error)
    else:
        raise AssertionError("6 seeds on 4 devices must be refused")
    print("OK")
    """
)


def test_sharded_equals_unsharded_on_four_cpu_devices():
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()
    # The four devices are CPU ones: on a GPU machine the default platform would be the GPU.
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0 and "OK" in result.stdout, result.stdout + result.stderr[-3000:]

"""The benchmark scripts of the jitted driver, in their ``--quick`` mode (see conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.conftest import default_emitters

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.mark.slow
def test_update_latency_quick(tmp_path, run_quick):
    output = run_quick("update_latency.py", tmp_path)
    data = json.loads((tmp_path / "update_latency.json").read_text())
    assert {(r["shape"], r["algo"]) for r in data["rows"]} == {
        ("pendulum", "trpo"),
        ("pendulum", "ddpg"),
    }
    for row in data["rows"]:
        assert row["jaxrl_median"] > 0 and row["jaxrl_compile_s"] > 0
    assert "| shape | algo |" in output
    assert (tmp_path / "update_latency.csv").exists()


@pytest.mark.slow
def test_pendulum_wall_time_quick(tmp_path, run_quick):
    run_quick("pendulum_wall_time.py", tmp_path)
    data = json.loads((tmp_path / "pendulum_wall_time_trpo.json").read_text())
    (row,) = data["jaxrl"]
    assert row["algo"] == "trpo" and row["num_seeds"] == 2
    assert row["env_steps_per_seed"] == 2048 and len(row["final_returns"]) == 2
    assert data["tianshou"] == []


def test_pendulum_wall_time_on_two_cpu_devices(tmp_path, run_quick):
    """--devices 2: the seeds split over two CPU devices (one program, train_sharded's),
    each seed's numbers its own: equal to the one-device run to float rounding (both runs
    are one update long here). Both runs on the CPU, also where a GPU is the default backend
    (``--devices`` splits over the default backend's devices; a machine with one GPU has one)."""
    # The 1e-3 below is how far the two programs' rounding carries, measured as XLA's
    # default CPU emitters compile them (its legacy ones: 1.4e-3).
    cpu = {"JAX_PLATFORMS": "cpu", **default_emitters()}
    one = run_quick("pendulum_wall_time.py", tmp_path / "one", env=cpu)
    two = run_quick("pendulum_wall_time.py", tmp_path / "two", "--devices", "2", env=cpu)
    assert "2 seeds on 2 device(s)" in two and "2 seeds on 1 device(s)" in one
    rows = [
        json.loads((tmp_path / side / "pendulum_wall_time_trpo.json").read_text())["jaxrl"][0]
        for side in ("one", "two")
    ]
    assert [row["devices"] for row in rows] == [1, 2]
    np.testing.assert_allclose(rows[1]["eval_returns"], rows[0]["eval_returns"], rtol=1e-3)


def test_random_numbers_are_attributed_to_their_call_site():
    """compile_time's attribution: a program that draws normals inside a named scope has
    random-number instructions there; one without randomness has none."""
    import compile_time

    def draws(key):
        with jax.named_scope("my_sampler"):
            return jax.random.normal(key, (8,)).sum()

    def plain(x):
        return jnp.tanh(x).sum()

    drawn = jax.jit(draws).lower(jax.random.key(0)).compile().as_text()
    found = compile_time.attribute_random(drawn)
    assert 0 < found["random_instructions"] <= found["instructions"]
    assert list(found["random_sites"]) == ["my_sampler"]
    none = compile_time.attribute_random(jax.jit(plain).lower(jnp.ones(8)).compile().as_text())
    assert none["random_instructions"] == 0 and none["instructions"] > 0


def test_distinct_kernels_counts_a_kernel_once_for_its_identical_fusions():
    """compile_time's kernel count: a chain of 12 products, each followed by the same
    elementwise kernel, has its 12 elementwise kernels counted once (and the products, fused
    or not, once); with a different constant after each product, 11 more distinct kernels.
    Named scopes put kernels in their categories."""
    import compile_time

    def chain(constants):
        def f(x, w):
            for c in constants:
                with jax.named_scope("GaussianActor"):
                    x = jnp.tanh(x @ w) * c + 0.5
            return x

        x, w = jnp.ones((8, 8)), jnp.full((8, 8), 0.1)
        return compile_time.distinct_kernels(jax.jit(f).lower(x, w).compile().as_text())

    same, different = chain([1.5] * 12), chain([1.0 + 0.01 * i for i in range(12)])
    assert 1 <= same["distinct_kernels"] <= 2  # the elementwise kernel, the product's
    assert different["distinct_kernels"] == same["distinct_kernels"] + 11
    counts = {r["kernel_categories"]["actor network"]["kernels"] for r in (same, different)}
    assert counts in ({12}, {24})  # the products fused into kernels of their own, or not
    assert list(same["kernel_categories"]) == ["actor network"]
    assert same["kernel_categories"]["actor network"]["distinct"] == same["distinct_kernels"]


# A GPU's optimized HLO, cut down: a multi-output fusion (its result a tuple) and a plain one.
_MULTI_OUTPUT_HLO = """\
HloModule jit_f, is_scheduled=true
%fused_computation (param_0.1: f32[64,64]) -> (f32[64], f32[64]) {
  %param_0.1 = f32[64,64]{1,0} parameter(0)
  ROOT %tuple = (f32[64]{0}, f32[64]{0}) tuple(%param_0.1, %param_0.1)
}
%fused_computation.1 (param_0.2: f32[64]) -> f32[64] {
  %param_0.2 = f32[64]{0} parameter(0)
  ROOT %tanh.0 = f32[64]{0} tanh(%param_0.2)
}
ENTRY %main.3 (x.1: f32[64,64]) -> f32[64] {
  %x.1 = f32[64,64]{1,0} parameter(0), metadata={op_name="x"}
  %input_reduce_fusion = (f32[64]{0}, f32[64]{0}) fusion(%x.1), kind=kInput, \
calls=%fused_computation, metadata={op_name="jit(f)/ValueCritic/reduce_sum"}
  %gte = f32[64]{0} get-tuple-element(%input_reduce_fusion), index=0
  ROOT %loop_tanh_fusion = f32[64]{0} fusion(%gte), kind=kLoop, \
calls=%fused_computation.1, metadata={op_name="jit(f)/GaussianActor/tanh"}
}
"""


def test_a_multi_output_fusion_is_one_kernel_in_every_count():
    """GPUs fuse sibling reductions into one kernel with a tuple result: compile_time counts
    it once, in its category, as it does a plain fusion (a GPU run counted 141 fused kernels
    but 175 by category, before the counts were one)."""
    import compile_time

    found = compile_time.distinct_kernels(_MULTI_OUTPUT_HLO)
    assert found["fused_kernels"] == 2 and found["distinct_kernels"] == 2
    assert found["kernel_categories"] == {
        "critic network": {"kernels": 1, "distinct": 1},
        "actor network": {"kernels": 1, "distinct": 1},
    }


@pytest.mark.slow
def test_compile_time_quick(tmp_path, run_quick):
    import compile_time

    output = run_quick("compile_time.py", tmp_path)
    data = json.loads((tmp_path / "compile_time.json").read_text())
    assert [row["program"] for row in data["rows"]] == ["trpo-update"]
    for row in data["rows"]:
        assert row["lower_s"] > 0 and row["compile_s"] > 0 and row["optimized_hlo_lines"] > 0
        assert 0 <= row["random_instructions"] <= row["instructions"]
        assert 0 < row["fused_kernels"] < row["instructions"]
        assert 0 < row["distinct_kernels"] <= row["fused_kernels"]
        known = {name for name, _ in compile_time.KERNEL_CATEGORIES} | {"other"}
        assert set(row["kernel_categories"]) <= known
    assert "| program |" in output and "distinct kernels" in output


def test_the_command_programs_compile_time_measures_are_the_commands():
    """compile_time's ``cli-trpo``: the programs it measures trace with the arguments it
    gives them (the jitted driver's init, period and evaluation, at the command's shapes)."""
    import compile_time

    programs = compile_time.cli_programs()
    assert [name for name, _, _ in programs] == ["init", "run_period", "evaluate"]
    for _, fn, args in programs:
        jax.eval_shape(fn, *args)


def test_offpolicy_breakdowns_unguarded_ddpg_updates_as_ddpg_does():
    """offpolicy_breakdown's ``Unguarded``: its stand-in for the guarded gradient step takes
    what the off-policy steps pass (the update traces), and the guard is back afterwards."""
    import gymnasium as gym
    import offpolicy_breakdown

    from jaxrl.algorithms import off_policy

    guard = off_policy.guarded_gradient_step
    agent = offpolicy_breakdown.Unguarded(hidden_sizes=(8,), batch_size=4, buffer_size=16)
    key = jax.random.key(0)
    spaces = gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Box(-1.0, 1.0, (1,))
    state, buffer = agent.init_training(key, *spaces, 1)
    batch = jax.eval_shape(agent.sample_batch, buffer, key)
    _, stats = jax.eval_shape(agent.update, state, batch, key)
    assert "critic_loss" in stats
    assert off_policy.guarded_gradient_step is guard

"""The roofline script: its loop-counting HLO analysis on a program whose FLOPs are known, and
its ``--quick`` mode end to end (see conftest.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import roofline_hlo
import roofline_peaks
import roofline_programs


def _analysis(fn, *args, dynamic=None):
    compiled = jax.jit(fn).lower(*args).compile()
    return roofline_hlo.analyse_compiled(compiled, dynamic or {})


_W = jnp.full((64, 64), 0.01, jnp.float32)
_ONE_PRODUCT = 2.0 * 64**3


def _scanned(x, n):
    """A scan of 10 products of 64 x 64 matrices inside a while loop that runs n times."""

    def body(c, _):
        return c @ _W, None

    def outer(state):
        c, i = state
        return lax.scan(body, c, None, length=10)[0], i + 1

    return lax.while_loop(lambda s: s[1] < n, outer, (x, 0))[0]


def test_loops_are_counted_as_often_as_they_run():
    """XLA's cost analysis counts a loop body once; the script counts it per trip: a scan of
    10 products of 64 x 64 matrices inside a while loop that runs 3 times is 30 products."""
    one = _ONE_PRODUCT
    x = jnp.ones((64, 64), jnp.float32)
    unknown = _analysis(_scanned, x, 3)
    assert unknown["xla_flops_once"] == pytest.approx(one, rel=0.05)
    assert unknown["loops_unknown_trips"] == 1  # the while loop's count is data-dependent
    assert unknown["flops"] == pytest.approx(10 * one, rel=0.05)  # counted once, flagged
    counted = _analysis(_scanned, x, 3, dynamic={"_scanned": 3.0})
    assert counted["loops_unknown_trips"] == 0
    assert counted["flops"] == pytest.approx(30 * one, rel=0.05)
    assert counted["dot_flops"] == pytest.approx(30 * one)
    assert counted["ops"] >= 30


class _NoCostModel:
    """A client without per-computation cost analysis, as a GPU's PJRT C API client is."""


def test_a_device_without_a_cost_model_is_costed_by_the_host_cpus():
    """On jax 0.11's GPU the device has no per-computation cost analysis, so loop bodies'
    bytes were counted once and looping programs were judged latency-bound from too few
    bytes (the 4,096-seed update on an H100, docs/benchmarks/scaling.md). The script then
    costs the same HLO with the host CPU's model, loops counted, and says so in
    loop_correction."""
    text = jax.jit(_scanned).lower(jnp.ones((64, 64), jnp.float32), 3).compile().as_text()
    cpu = jax.devices("cpu")[0].client
    dynamic = {"_scanned": 3.0}
    own = roofline_hlo.HloAnalysis(text, cpu).analyse(dynamic)
    borrowed = roofline_hlo.HloAnalysis(text, _NoCostModel(), cpu).analyse(dynamic)
    assert own["loop_correction"] == "xla per body"
    assert borrowed["loop_correction"].startswith("xla per body, the host CPU's cost model")
    assert borrowed["bytes"] == own["bytes"] > 3 * 2 * 64 * 64 * 4  # three trips' products
    assert borrowed["flops"] == pytest.approx(30 * _ONE_PRODUCT, rel=0.05)
    alone = roofline_hlo.HloAnalysis(text, _NoCostModel()).analyse(dynamic)
    assert alone["loop_correction"].startswith("unavailable")  # nothing to borrow: flagged


# A GPU's product as its optimized HLO has it: a cuBLAS custom call whose tuple result holds
# the product and a scratch workspace.
_CUBLAS_HLO = """\
HloModule jit_f, is_scheduled=true
ENTRY %main.3 (x.1: f32[2048,64], w.1: f32[64,64]) -> f32[2048,64] {
  %x.1 = f32[2048,64]{1,0} parameter(0)
  %w.1 = f32[64,64]{1,0} parameter(1)
  %custom-call.1 = (f32[2048,64]{1,0}, s8[4194304]{0}) custom-call(%x.1, %w.1), \
custom_call_target="__cublas$gemm", \
backend_config={"gemm_backend_config":{"lhs_contracting_dimensions":["1"]}}
  ROOT %gte = f32[2048,64]{1,0} get-tuple-element(%custom-call.1), index=0
}
"""


def test_a_library_products_bytes_are_its_operands_and_result():
    """What the host CPU's cost model cannot see in a GPU's program: a cuBLAS product reads
    its two operands and writes its result (its workspace is scratch), 2 x 2048 x 64 x 64
    FLOPs; the script adds them to that model's cost."""
    moved, flops = 4 * (2048 * 64 + 64 * 64 + 2048 * 64), 2 * 2048 * 64 * 64
    analysis = roofline_hlo.HloAnalysis(_CUBLAS_HLO, None)
    assert analysis.library_call_bytes({}) == moved
    assert analysis.dot_flops({}) == flops
    # Costed by the host CPU's model, which counts a custom call as -1 byte and -1 FLOP.
    cpu = jax.devices("cpu")[0].client
    borrowed = roofline_hlo.HloAnalysis(_CUBLAS_HLO, _NoCostModel(), cpu).analyse({})
    assert borrowed["bytes"] == pytest.approx(moved, abs=1) and borrowed["flops"] == flops


@pytest.mark.slow
def test_roofline_quick(tmp_path, run_quick):
    output = run_quick("roofline.py", tmp_path)
    backend = jax.default_backend()
    data = json.loads((tmp_path / f"roofline_{backend}.json").read_text())
    assert [row["program"] for row in data["rows"]] == [
        *roofline_programs.QUICK_PROGRAMS[:-1],
        "ddpg-host-step",
        "ddpg-host-observe",
        "ddpg-host-learn",
    ]
    peaks = data["peaks"]
    assert peaks["matmul_gflops_highest"] > 0 and peaks["bandwidth_gbs"] > 0
    # One product at each layer shape, measured before and after the programs.
    assert [r["name"] for r in peaks["layer_products"]] == [
        n for n, *_ in roofline_peaks.LAYER_PRODUCTS
    ]
    assert all(r["gflops"] > 0 for r in peaks["layer_products"])
    for row in data["rows"]:
        assert row["time_median_s"] > 0 and row["bytes"] > 0 and row["ops"] > 0
        assert row["bound"] in ("compute", "memory", "latency/overhead")
        assert row["loops_unknown_trips"] == 0, row["loops"]
        if row["program"] == "ddpg-host-observe":  # no normalization: copies, no arithmetic
            assert row["bound"] == "latency/overhead"
            continue
        assert row["flops"] > 0 and row["pct_matmul_peak"] > 0
    update = next(r for r in data["rows"] if r["program"] == "trpo-update-pendulum")
    # Conjugate gradients and the line search ran, and their loops were counted.
    assert update["data_dependent_trips"]["conjugate_gradient"] >= 1
    assert update["flops"] > 3 * update["xla_flops_once"]
    pendulum_layer = peaks["layer_products"][0]["gflops"]
    assert update["pct_layer_product"] == pytest.approx(
        100 * update["gflops_s"] / pendulum_layer, rel=1e-9
    )
    assert "| program |" in output and "trpo-update-pendulum:" in output
    assert (tmp_path / f"roofline_{backend}.csv").exists()


def test_a_program_over_seeds_does_each_seeds_work():
    """``--seeds N``: the program vmapped over N seeds does N seeds' matrix products, each
    seed computes what the program computes alone (the inputs are repeated), its loops run as
    one seed's, and a typed key is split so that each seed draws its own numbers."""
    (cg,) = roofline_programs.build("trpo-cg-pendulum", quick=True)
    many = roofline_programs.over_seeds(cg, 3)
    assert many.name == "trpo-cg-pendulum-x3" and many.num_seeds == 3
    assert roofline_programs.over_seeds(cg, 1) is cg
    one_out = jax.jit(cg.fn)(*cg.args)
    many_out = jax.jit(many.fn)(*many.args)
    for seed in (0, 2):
        jax.tree_util.tree_map(
            lambda a, b, s=seed: np.testing.assert_allclose(b[s], a, rtol=1e-4, atol=1e-6),
            one_out,
            many_out,
        )
    trips = cg.trips(one_out)
    assert trips["conjugate_gradient"] >= 1 and many.trips(many_out) == trips
    alone = _analysis(cg.fn, *cg.args, dynamic=trips)
    over = _analysis(many.fn, *many.args, dynamic=trips)
    assert over["dot_flops"] == pytest.approx(3 * alone["dot_flops"], rel=1e-9)
    assert over["flops"] == pytest.approx(3 * alone["flops"], rel=0.05)

    def scaled_draw(x, key):
        return x * jax.random.normal(key, ())

    draws = roofline_programs.Program(
        "draw", "part", "trpo", "pendulum", "", scaled_draw, (jnp.ones(2), jax.random.key(0))
    )
    out = np.asarray(
        jax.jit(roofline_programs.over_seeds(draws, 4).fn)(
            *roofline_programs.over_seeds(draws, 4).args
        )
    )
    assert out.shape == (4, 2) and len(np.unique(out[:, 0])) == 4
    np.testing.assert_array_equal(out[:, 0], out[:, 1])  # x repeated, one draw per seed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--seeds", "2", "--programs", "ddpg-host-step"], "--seeds > 1 needs a jitted program"),
    ],
)
def test_bad_seed_counts_are_refused_before_measuring(extra, message):
    import subprocess

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py"
    result = subprocess.run(
        [sys.executable, str(script), *extra], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2 and message in result.stderr
    assert "Measuring peaks" not in result.stdout

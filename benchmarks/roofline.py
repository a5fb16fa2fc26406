"""Roofline of jaxrl's hot programs: FLOPs and bytes from XLA, time, % of the machine's peaks.

Everything in one process, on one backend (CPU or GPU), in this order:

1. **The machine's peaks, measured in the same run.** Matrix products: a large float32
   ``jnp.dot`` (``n x n`` by ``n x n``, ``2 n^3`` FLOPs), traced with the backend's default
   matmul precision and again under ``jax.default_matmul_precision("highest")`` (on a CPU
   both are float32; on an NVIDIA GPU the default is TF32, "highest" is true float32); the
   best median over the sizes. Memory bandwidth: a large float32 copy written over its
   (donated) input (``4 N`` bytes read, ``4 N`` written) and a reduction (``sum``, ``4 N``
   read), the better of the two. Two references beside them: an *in-cache copy* (an array
   of a core's L2 size, or 16 MiB in a GPU's L2, copied 200 times in one program) and the
   time per op of a chain of 500 dependent 16 x 16 matrix products (each its own kernel).
   And the rate of a matrix product at each shape the programs' layers use, chained
   ``LAYER_PRODUCT_REPEATS`` times in one program (``LAYER_PRODUCTS``: 2,048 x 64 by 64 x 64
   for the Pendulum updates' hidden layers, and 16 of them batched, each with its own
   matrices, as 16 seeds under ``vmap`` make them; 1,024 x 64 by 64 x 64 for the MuJoCo ones;
   256 x 256 by 256 x 256 for DDPG's): the best a product of that size reaches on this
   machine, which on a CPU is well below the large product's.
2. **Per program**: the jitted program is lowered and compiled once (compile time
   recorded); FLOPs and bytes accessed come from XLA's own cost analysis of the compiled
   program (``jax.jit(f).lower(*args).compile().cost_analysis()``), corrected for loops (see
   below); the time is the median of ``--repetitions`` repetitions, each the mean of
   back-to-back calls for about ``--seconds`` seconds, every call from the same inputs (so
   every call does the same work, data-dependent loops included) and blocked until its
   outputs are ready (``jax.block_until_ready``: the per-call latency a caller sees, dispatch
   included). Then achieved GFLOP/s and GB/s, % of each peak, arithmetic intensity
   (FLOPs / byte) against the machine balance (peak FLOP/s / peak B/s), the optimized HLO's
   operation counts (``compiled.as_text()``) and the bound.

**Loops, bytes, operations.** XLA's cost analysis counts a ``while`` loop's body once; the
FLOPs and bytes here count every loop body as often as it ran (known trip counts from XLA,
data-dependent ones, conjugate gradients and TRPO's line search, from the program's outputs),
take off what XLA counts for whole arrays a fused ``gather`` only reads rows of, and count
the kernels executed per call (``ops``): ``roofline_hlo.py`` says how. Both figures are in
the records: ``xla_flops_once`` (XLA's figure as it comes) and ``flops`` (loops counted);
``dot_flops`` is a cross-check from the matrix products alone; a loop whose trip count is
neither known nor read is counted once and flagged (``loops_unknown_trips``). XLA's "bytes
accessed" adds up every operand and result wherever it is served from: a program whose arrays
stay in cache (jaxrl's updates: 2,048 x 64 activations are 512 KiB) can move more bytes per
second than a large copy can. ``us_per_op`` = time / ops; ``op_floor_pct`` = ops x the
small-product chain's time per op / time, how much of the time running that many small ops
would take.

**Bound (the rule).** *compute*-bound if the achieved GFLOP/s is at least 50% of the
measured float32 matmul peak (the "highest" precision peak; on a GPU the % of the TF32 peak
is reported beside it); else *memory*-bound if the achieved GB/s is at least 50% of the
bandwidth peak (the large copy's; for a program that moves more bytes per second than the
large copy, whose bytes then come mostly from cache, the in-cache copy's); else
*latency/overhead*-bound: neither roof is near, which the op count and the time per op show
(many small ops, each too small to use the machine). Arithmetic intensity below the machine
balance means a program could at best be memory-bound; above it, compute-bound.

Programs (the algorithms' own jitted code; shapes from the presets, as ``update_latency.py``):

* ``{npg,trpo}-update-pendulum``: ``jit(agent.update)`` on a 16 x 128 rollout, the
  ``tianshou-pendulum`` preset (obs 3, action 1, [64, 64] tanh, repeat 2, 5 critic steps);
  ``{npg,trpo}-update-mujoco``: the ``mujoco`` preset (obs 17, action 6 as HalfCheetah, 16 x 64
  rollout, repeat 1, 20 critic steps); ``trpo-update-pendulum-preset``: the ``pendulum`` preset
  of the main job (16 x 512 = 8,192 samples, 20 critic steps).
* TRPO's parts at the Pendulum and MuJoCo shapes: ``trpo-prepare-*`` (``prepare_batch``:
  values, GAE, return scaling, advantage normalization, old log-probs), ``trpo-critic-*`` (the
  critic's Adam steps, ``jaxrl.algorithms.on_policy.critic_steps``), ``trpo-actor-step-*``
  (one whole natural-gradient step, ``jaxrl.algorithms.natural_step.actor_step``: gradient,
  CG, line search),
  ``trpo-fvp-*`` (one Fisher-vector product), ``trpo-cg-*`` (conjugate gradients) and
  ``trpo-line-search-*`` (``trpo_rule``'s step: step length and backtracking line search). The
  last three are inner closures of ``actor_step``: they are rebuilt from the public core functions
  (``make_gauss_newton_vector_product``, ``conjugate_gradient``) with the update's shapes and
  its first actor step's inputs (the linearization, gradient, direction), as the notes say.
  NPG's parts are TRPO's: the same critic steps, Fisher-vector products and CG at the same
  shapes (NPG's step is one scaled add, with no line search).
* ``ddpg-update-mujoco``: DDPG's ``[256, 256]`` networks, batch 256 (the ``mujoco`` preset),
  ``jit(sample_batch + update)`` on a filled 100,000-transition buffer, as the drivers run
  it; ``ddpg-update-only-mujoco``: ``jit(agent.update)`` on one sampled batch;
  ``ddpg-update-pendulum``: the ``tianshou-pendulum`` shapes ([128, 128], batch 128, 3-step).
* ``trpo-period-pendulum-preset``: one whole training period of the jitted driver
  (``make_train_loop(...).run_period``, one seed: 4 collections of 16 x 512 env steps on gymnax
  Pendulum-v1, their updates, one 10-episode evaluation), the ``pendulum`` preset;
  ``ddpg-period-pendulum``: the ``tianshou-pendulum`` DDPG period (625 collections of 8 env
  steps, one update each, 10 evaluation episodes).
* ``ddpg-host-step``: one host-driver DDPG step with the ``mujoco`` preset (1 env, 1 update
  per env step, updates from the first step): send the action, step the environment
  (EnvPool or gymnasium Hopper-v5 when MuJoCo is installed, else gymnasium Pendulum-v1),
  observe (one jitted call, ``ddpg-host-observe``), add to the replay buffer, update and act
  with the updated policy (one jitted call, ``ddpg-host-learn``), timed as the driver runs it
  (``HostLoop._collect_and_learn``), and again with each jitted call blocked to split
  the step into the environment, act and learn.

    python benchmarks/roofline.py                     # every program (about 5 minutes on a CPU)
    python benchmarks/roofline.py --quick             # CI smoke run (small sizes, few programs)
    python benchmarks/roofline.py --programs 'trpo-*-pendulum' ddpg-update-mujoco
    python benchmarks/roofline.py --seeds 4096 --programs 'trpo-*-pendulum'   # on a GPU

**Seeds.** ``--seeds N`` (N > 1) measures every jitted program under ``jax.vmap`` over N
seeds, as a run of N vmapped seeds executes it (``jaxrl.training``'s seed axis): typed random
keys are split into N, every other input is repeated N times, so each seed does the same
arithmetic and the data-dependent loops run as one seed's (their trip counts are read from
seed 0). The rows are named ``<program>-x<N>`` and written to ``roofline_<backend>_x<N>.*``;
FLOPs and bytes are the N seeds'. The host step is one seed's and is left out.

On a GPU the same command (a CUDA jaxlib) measures the GPU: ``roofline_gpu.*``. Writes
``roofline_<backend>.{json,csv,png}`` (``results/`` or ``results/quick/``) and prints the
Markdown table. Measure on a quiet machine, outside the test suite (which turns XLA's
optimizations down and fixes the matmul precision: the script warns), and read the warning
that the peaks measured before and after the programs differ: then the machine was busy.

The command, the table and the figure are here; the HLO analysis in ``roofline_hlo.py``, the
peaks and the rule in ``roofline_peaks.py``, the programs in ``roofline_programs.py`` and the
host step in ``roofline_host.py``.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from common import (
    base_parser,
    command_line,
    import_distributions,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
    time_call,
    write_csv,
    write_json,
)
from roofline_hlo import analyse_compiled
from roofline_host import host_step_rows
from roofline_peaks import (
    COMPUTE_BOUND_FRACTION,
    MEMORY_BOUND_FRACTION,
    combine_peaks,
    derived,
    measure_peaks,
    peaks_table,
)
from roofline_programs import Program, build, over_seeds, selected


def measure_program(program: Program, peaks: dict[str, Any], args: Any) -> dict[str, Any]:
    load_before = loadavg()
    import_distributions()
    start = time.perf_counter()
    compiled = jax.jit(program.fn).lower(*program.args).compile()
    compile_s = time.perf_counter() - start
    out = jax.block_until_ready(compiled(*program.args))
    dynamic = program.trips(out) if program.trips else {}
    del out
    analysis = analyse_compiled(compiled, dynamic)
    timing = time_call(
        lambda: jax.block_until_ready(compiled(*program.args)), args.repetitions, args.seconds
    )
    row = {
        "program": program.name,
        "group": program.group,
        "algo": program.algo,
        "shape": program.shape,
        "num_seeds": program.num_seeds,
        "time_median_s": timing["median"],
        "time_q1_s": timing["q1"],
        "time_q3_s": timing["q3"],
        "repetitions": timing["n"],
        "calls_per_repetition": timing["calls_per_repetition"],
        "compile_s": compile_s,
        **{k: v for k, v in analysis.items() if k != "loops"},
        "data_dependent_trips": dynamic,
        "loops": analysis["loops"],
        "notes": program.notes,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    row.update(derived(row, peaks))
    return row


def fmt(value: float, digits: int = 1) -> str:
    if value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


def table(rows: list[dict[str, Any]], peaks: dict[str, Any]) -> str:
    """The Markdown table; a column of % of the default-precision peak where it differs from
    the float32 one (GPUs: TF32)."""
    tf32 = jax.default_backend() != "cpu"
    headers = ["program", "ms (q1-q3)", "GFLOP", "MB", "GFLOP/s", "% matmul peak"]
    headers += ["% default-precision peak"] if tf32 else []
    headers += ["% layer-shape product"]
    headers += ["GB/s", "% BW peak", "% in-cache BW", "FLOP/B", "ops", "us/op"]
    headers += ["bound"]
    lines = []
    for r in rows:
        line = [
            r["program"],
            f"{r['time_median_s'] * 1e3:.2f} "
            f"({r['time_q1_s'] * 1e3:.2f}-{r['time_q3_s'] * 1e3:.2f})",
            fmt(r["flops"] / 1e9, 3),
            fmt(r["bytes"] / 1e6, 1),
            fmt(r["gflops_s"], 1),
            fmt(r["pct_matmul_peak"], 1),
        ]
        line += [fmt(r["pct_matmul_peak_default"], 1)] if tf32 else []
        line += [fmt(r.get("pct_layer_product", float("nan")), 1)]
        line += [
            fmt(r["gbs"], 1),
            fmt(r["pct_bandwidth_peak"], 1),
            fmt(r["pct_cache_bandwidth"], 1),
            fmt(r["intensity"], 1),
            fmt(r["ops"], 0),
            fmt(r["us_per_op"], 1),
            r["bound"],
        ]
        lines.append(line)
    return markdown_table(headers, lines)


def plot(rows: list[dict[str, Any]], peaks: dict[str, Any], path: Path, backend: str) -> None:
    """Log-log roofline: each program a numbered point (the list on the right names them),
    the crowd near the roofs magnified in an inset."""
    plt = pyplot()
    if plt is None:
        return
    fig, (ax, side) = plt.subplots(
        1, 2, figsize=(13, 6.5), gridspec_kw={"width_ratios": [2.6, 1.4]}
    )
    points = [r for r in rows if r["gflops_s"] > 0 and r["intensity"] == r["intensity"]]
    peak = peaks["matmul_gflops_highest"]
    crowd = [r for r in points if r["gflops_s"] >= peak / 30]
    inset = ax.inset_axes([0.55, 0.08, 0.43, 0.5]) if len(crowd) > 3 else None
    intensities = [r["intensity"] for r in points]
    low = min([peaks["machine_balance"] / 10, *intensities]) / 2
    high = max([peaks["machine_balance"] * 10, *intensities]) * 2
    x = np.logspace(math.log10(low), math.log10(high), 400)
    bandwidth = peaks["bandwidth_gbs"]
    roofs = [("matmul_gflops_highest", "-", "float32 matmul peak")]
    if backend != "cpu":  # on a CPU the default precision is float32 too
        roofs.append(("matmul_gflops_default", "--", "default-precision (TF32) matmul peak"))
    colors = {"update": "tab:blue", "part": "tab:orange", "driver": "tab:green", "host": "tab:red"}
    numbers = {id(r): n for n, r in enumerate(points, 1)}
    for axes in (ax, inset) if inset is not None else (ax,):
        for key, style, label in roofs:
            axes.plot(
                x,
                np.minimum(peaks[key], bandwidth * x),
                style,
                color="black",
                lw=1.2,
                label=f"{label} {peaks[key]:,.0f} GFLOP/s; large copy {bandwidth:,.1f} GB/s",
            )
        axes.plot(
            x,
            np.minimum(peak, peaks["cache_gbs"] * x),
            ":",
            color="gray",
            lw=1,
            label=f"in-cache copy {peaks['cache_gbs']:,.0f} GB/s",
        )
        for group, color in colors.items():
            chosen = [r for r in points if r["group"] == group]
            if chosen:
                axes.scatter(
                    [r["intensity"] for r in chosen],
                    [r["gflops_s"] for r in chosen],
                    color=color,
                    label=group,
                    zorder=3,
                    s=22,
                )
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
        labelled = (
            crowd if axes is inset else [r for r in points if inset is None or r not in crowd]
        )
        for r in labelled:
            number = numbers[id(r)]
            offset = [(4, 3), (4, -9), (-12, 3), (-12, -9)][number % 4]
            axes.annotate(
                str(number),
                (r["intensity"], r["gflops_s"]),
                fontsize=7,
                xytext=offset,
                textcoords="offset points",
            )
    if inset is not None:
        xs, ys = [r["intensity"] for r in crowd], [r["gflops_s"] for r in crowd]
        inset.set_xlim(min(xs) / 1.4, max(xs) * 1.4)
        inset.set_ylim(min(ys) / 1.4, max(peak, max(ys)) * 1.3)
        inset.tick_params(which="both", labelsize=6)
        from matplotlib.ticker import FuncFormatter

        plain = FuncFormatter(lambda value, _: f"{value:g}")
        for axis in (inset.xaxis, inset.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(plain)
        ax.indicate_inset_zoom(inset, edgecolor="gray")
    ax.set_xlabel("arithmetic intensity (FLOPs / byte accessed, XLA cost analysis)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"jaxrl's programs against the peaks measured in the same run ({backend})")
    ax.legend(fontsize=7, loc="upper left")
    legend = [
        f"{numbers[id(r)]:>2} {r['program']:<29} {r['pct_matmul_peak']:5.1f}% {r['bound']}"
        for r in points
    ]
    side.axis("off")
    side.text(
        0,
        1,
        "   program                       % peak bound\n" + "\n".join(legend),
        va="top",
        family="monospace",
        fontsize=7,
        transform=side.transAxes,
    )
    save_figure(plt, fig, path)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's two checks: TRPO's update at the Pendulum shapes and DDPG's at MuJoCo's."""
    lines = []
    for name in ("trpo-update-pendulum", "ddpg-update-mujoco"):
        row = next((r for r in rows if r["program"] == name), None)
        if row is None:
            continue
        lines.append(
            f"{name}: {row['pct_matmul_peak']:.1f}% of the float32 matmul peak "
            f"({'>=' if row['pct_matmul_peak'] >= 35 else '<'} 35%), "
            f"{row['pct_bandwidth_peak']:.1f}% of the bandwidth peak, "
            f"{row['pct_layer_product']:.1f}% of a product at its layers' shape, "
            f"{row['ops']:,.0f} ops at {row['us_per_op']:.1f} us/op: {row['bound']}-bound"
        )
    return lines


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=0.5, help="per repetition and program")
    parser.add_argument(
        "--programs",
        nargs="+",
        default=None,
        help="names or shell patterns (default: all; --quick: a few)",
    )
    parser.add_argument(
        "--host-env",
        default="auto",
        help="environment of ddpg-host-step (auto: Hopper-v5 with MuJoCo, "
        "EnvPool if installed; Pendulum-v1 without, and in --quick)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="measure the jitted programs vmapped over this many seeds (default 1)",
    )
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.quick:
        args.repetitions, args.seconds = 3, 0.05
    names = selected(args.programs, args.quick)
    if args.seeds > 1 and "ddpg-host-step" in names:
        names.remove("ddpg-host-step")
        print("ddpg-host-step left out: one seed's host step (--seeds vmaps jitted programs)")
        if not names:
            parser.error("--seeds > 1 needs a jitted program; ddpg-host-step is one seed's")
    out = output_dir(args)
    info = machine_info()
    info["jax_settings"] = {
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
        "jax_disable_most_optimizations": jax.config.values["jax_disable_most_optimizations"],
        "jax_default_matmul_precision": jax.config.values["jax_default_matmul_precision"],
    }
    print_machine(info)
    if info["jax_settings"]["jax_disable_most_optimizations"] or info["jax_settings"]["XLA_FLAGS"]:
        print(
            f"WARNING: not JAX's defaults ({info['jax_settings']}): the figures are not the "
            "machine's (the test suite sets these; measure outside it)."
        )
    backend = jax.default_backend()
    print(f"Measuring peaks ({backend}) ...", flush=True)
    peaks = measure_peaks(args.quick, args.repetitions, args.seconds)
    print(peaks_table(peaks))
    print(f"machine balance: {peaks['machine_balance']:.1f} FLOP/byte\n", flush=True)

    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name in names:
        print(f"[{time.perf_counter() - started:5.0f} s] {name} ...", end=" ", flush=True)
        if name == "ddpg-host-step":
            new = host_step_rows(peaks, args)
        else:
            new = [
                measure_program(over_seeds(p, args.seeds), peaks, args)
                for p in build(name, args.quick)
            ]
        for row in new:
            rows.append(row)
            print(
                f"{row['program']}: {row['time_median_s'] * 1e3:.2f} ms, "
                f"{row['gflops_s']:.1f} GFLOP/s ({row['pct_matmul_peak']:.0f}%), "
                f"{row['gbs']:.1f} GB/s ({row['pct_bandwidth_peak']:.0f}%), "
                f"{row['ops']:,.0f} ops, {row['bound']} | load {row['loadavg_after'][0]:.2f}",
                flush=True,
            )

    print("\nMeasuring the peaks again ...", flush=True)
    peaks = combine_peaks(peaks, measure_peaks(args.quick, args.repetitions, args.seconds))
    for row in rows:  # against the better measurement of each peak
        row.update(derived(row, peaks))
    markdown = table(rows, peaks)
    print()
    print(peaks_table(peaks))
    print()
    print(markdown)
    print()
    for line in verdicts(rows):
        print(line)
    if peaks["unsteady"]:
        print(
            f"WARNING: {', '.join(peaks['unsteady'])} differ by more than 15% before and after "
            "the programs: the machine was not quiet, the percentages are not reliable."
        )
    stem = f"roofline_{backend}" + (f"_x{args.seeds}" if args.seeds > 1 else "")
    write_json(
        out / f"{stem}.json",
        {
            "command": command_line(),
            "machine": {**info, "loadavg_end": loadavg()},
            "rule": {
                "compute_bound_fraction_of_matmul_peak": COMPUTE_BOUND_FRACTION,
                "memory_bound_fraction_of_bandwidth_peak": MEMORY_BOUND_FRACTION,
                "matmul_peak_used": "float32 ('highest' precision)",
            },
            "peaks": peaks,
            "repetitions": args.repetitions,
            "seconds_per_repetition": args.seconds,
            "rows": rows,
            "table": markdown,
            "peaks_table": peaks_table(peaks),
            "verdicts": verdicts(rows),
        },
    )
    write_csv(
        out / f"{stem}.csv",
        [{k: v for k, v in r.items() if k not in ("loops", "data_dependent_trips")} for r in rows],
    )
    plot(rows, peaks, out / f"{stem}.png", backend)


if __name__ == "__main__":
    main()

"""Training wall time on Pendulum-v1: jaxrl (seeds vmapped in one program) vs Tianshou (seed
after seed), Tianshou's test hyperparameters, a fixed env-step budget, final evaluation returns.

Budget (both sides, no early stopping): NPG/TRPO 5 epochs x 49,152 env steps = 245,760 (Tianshou's
5 x 50,000 rounded to whole 2048-step collects), evaluation (10 episodes) after every epoch; DDPG
5 x 20,000 = 100,000 env steps, evaluation (100 episodes) after every epoch. jaxrl trains on
gymnax's Pendulum-v1, all seeds in one jitted program (``jaxrl.training.over_seeds``: on a CPU,
NPG/TRPO seeds one after another with ``lax.map``, DDPG's batched with ``jax.vmap``; pick with
``--seed-axis``); its compile time is measured separately from the run. Tianshou runs its own
trainer (``algorithm.run_training`` with ``DummyVectorEnv`` collectors, no logger) seed after
seed in one process, after one short warm-up run (numba and torch start-up, reported separately).

    python benchmarks/pendulum_wall_time.py                     # TRPO, 1 and 16 seeds
    python benchmarks/pendulum_wall_time.py --algos trpo npg ddpg --tianshou-seeds 16 2 2
    python benchmarks/pendulum_wall_time.py --quick             # CI smoke run
    python benchmarks/pendulum_wall_time.py --seeds 16 --epochs 2 --devices 2
        # jaxrl's seeds over two CPU devices (jaxrl.training.train_sharded)
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

import numpy as np
from common import (
    PENDULUM_EPOCH_STEPS,
    PENDULUM_EPOCHS,
    add_seed_axis,
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    pyplot,
    run_jaxrl_pendulum,
    save_figure,
    use_cpu_devices,
    use_tianshou,
    write_csv,
    write_json,
)


def run_tianshou(algo: str, num_seeds: int, epochs: int, epoch_steps: int, threads: int) -> dict:
    import tianshou_side as ts
    import torch

    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    # Warm-up: numba-compiled GAE/n-step helpers and torch start-up, paid once per process.
    ts.train_pendulum(algo, 1000, epochs=1, epoch_num_steps=2048 if algo != "ddpg" else 800)
    warmup_s = time.perf_counter() - start
    runs = []
    for seed in range(num_seeds):
        load_before = loadavg()
        run = ts.train_pendulum(algo, seed, epochs=epochs, epoch_num_steps=epoch_steps)
        run.update(loadavg_before=load_before, loadavg_after=loadavg())
        runs.append(run)
        print(
            f"  tianshou {algo} seed {seed}: {run['seconds']:.1f}s, "
            f"final return {run['final_return']:.1f} (load {run['loadavg_after'][0]:.2f})",
            flush=True,
        )
    seconds = [r["seconds"] for r in runs]
    return {
        "algo": algo,
        "num_seeds": num_seeds,
        "torch_threads": threads,
        "warmup_s": warmup_s,
        "env_steps_per_seed": runs[0]["env_steps"],
        "seconds_per_seed": seconds,
        "total_s": sum(seconds),
        "median_seed_s": statistics.median(seconds),
        "final_returns": [r["final_return"] for r in runs],
        "best_returns": [r["best_return"] for r in runs],
        "eval_returns": [r["test_returns"] for r in runs],
    }


def fmt_returns(values: list[float]) -> str:
    arr = np.asarray(values, float)
    return f"{arr.mean():.0f} +- {arr.std():.0f}" if len(arr) > 1 else f"{arr[0]:.0f}"


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    add_seed_axis(parser)
    parser.add_argument("--algos", nargs="+", default=["trpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 16], help="jaxrl seed counts")
    parser.add_argument(
        "--tianshou-seeds",
        nargs="+",
        type=int,
        default=None,
        help="sequential Tianshou runs per algorithm (default: the largest of --seeds)",
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads for Tianshou (1: its faster setting on this loaded 2-core machine, "
        "see update_latency)",
    )
    parser.add_argument("--epochs", type=int, default=PENDULUM_EPOCHS)
    parser.add_argument(
        "--devices",
        type=int,
        default=1,
        help="split jaxrl's seeds over this many devices (jaxrl.training.train_sharded); on a "
        "CPU, the CPU is made that many devices (jax_num_cpu_devices), each its own stream of "
        "operations (default 1: one device, as before)",
    )
    args = parser.parse_args()
    use_cpu_devices(args.devices)
    epoch_steps = dict(PENDULUM_EPOCH_STEPS)
    if args.quick:
        args.epochs, args.seeds = 1, [2]
        epoch_steps = {"npg": 2048, "trpo": 2048, "ddpg": 400}
    out = output_dir(args)
    stem = "pendulum_wall_time_" + "_".join(args.algos)
    info = machine_info()
    print_machine(info)
    tianshou = use_tianshou(args)
    tianshou_seeds = args.tianshou_seeds or [max(args.seeds)] * len(args.algos)
    if len(tianshou_seeds) == 1:
        tianshou_seeds = tianshou_seeds * len(args.algos)
    if args.quick:
        tianshou_seeds = [1] * len(args.algos)

    jax_rows: list[dict[str, Any]] = []
    ts_rows: list[dict[str, Any]] = []
    for algo, ts_seeds in zip(args.algos, tianshou_seeds, strict=True):
        budget = args.epochs * epoch_steps[algo]
        for n in args.seeds:
            row = run_jaxrl_pendulum(
                algo, n, budget, seed_axis=args.seed_axis, devices=args.devices
            )
            jax_rows.append(row)
            print(
                f"jaxrl {algo} {n:3d} seeds on {args.devices} device(s): compile "
                f"{row['compile_s']:.1f}s + run {row['run_s']:.1f}s, final returns "
                f"{fmt_returns(row['final_returns'])} (load {row['loadavg_after'][0]:.2f})",
                flush=True,
            )
        if tianshou:
            ts_rows.append(
                run_tianshou(algo, ts_seeds, args.epochs, epoch_steps[algo], args.torch_threads)
            )

    table_rows = []
    for algo in args.algos:
        ts_row = next((r for r in ts_rows if r["algo"] == algo), None)
        for row in (r for r in jax_rows if r["algo"] == algo):
            n = row["num_seeds"]
            line = [
                algo.upper(),
                n,
                f"{row['env_steps_per_seed']:,d}",
                f"{row['compile_s']:.1f}",
                f"{row['run_s']:.1f}",
                f"{row['total_s']:.1f}",
                fmt_returns(row["final_returns"]),
            ]
            if ts_row is not None:
                per_seed = ts_row["seconds_per_seed"]
                if n <= len(per_seed):
                    ts_s, ts_note = sum(per_seed[:n]), f"{sum(per_seed[:n]):.1f}"
                else:  # extrapolated from the measured runs
                    ts_s = statistics.mean(per_seed) * n
                    ts_note = f"~{ts_s:.0f} (extrapolated from {len(per_seed)})"
                k = min(n, len(per_seed))
                line += [
                    ts_note,
                    fmt_returns(ts_row["final_returns"][:k]),
                    f"x{ts_s / row['total_s']:.1f}",
                    f"x{ts_s / row['run_s']:.1f}",
                ]
            line.append(f"{row['loadavg_before'][0]:.1f}-{row['loadavg_after'][0]:.1f}")
            table_rows.append(line)
    headers = [
        "algo",
        "seeds",
        "env steps / seed",
        "jaxrl compile s",
        "jaxrl run s",
        "jaxrl total s",
        "jaxrl final return",
    ]
    if ts_rows:
        headers += [
            "Tianshou s (sequential)",
            "Tianshou final return",
            "speed-up (incl. compile)",
            "speed-up (run only)",
        ]
    headers.append("load avg")
    table = markdown_table(headers, table_rows)
    print()
    print(table)
    if ts_rows:
        print(
            "\nTianshou warm-up (numba JIT, torch start-up), excluded above: "
            + ", ".join(f"{r['algo']} {r['warmup_s']:.1f}s" for r in ts_rows)
        )
    write_json(
        out / f"{stem}.json",
        {
            "command": command_line(),
            "machine": {**info, "loadavg_end": loadavg()},
            "jaxrl": jax_rows,
            "tianshou": ts_rows,
            "table": table,
        },
    )
    write_csv(
        out / f"{stem}.csv",
        [{k: v for k, v in r.items() if k != "eval_returns"} | {"side": "jaxrl"} for r in jax_rows]
        + [
            {k: v for k, v in r.items() if k != "eval_returns"} | {"side": "tianshou"}
            for r in ts_rows
        ],
    )
    plot(jax_rows, ts_rows, out / f"{stem}.png")


def plot(jax_rows: list[dict], ts_rows: list[dict], path: Any) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_time, ax_ret) = plt.subplots(1, 2, figsize=(11, 4))
    labels, compile_s, run_s, ts_s = [], [], [], []
    for row in jax_rows:
        labels.append(f"{row['algo'].upper()}\n{row['num_seeds']} seed(s)")
        compile_s.append(row["compile_s"])
        run_s.append(row["run_s"])
        ts_row = next((r for r in ts_rows if r["algo"] == row["algo"]), None)
        if ts_row is None:
            ts_s.append(np.nan)
        else:
            per_seed = ts_row["seconds_per_seed"]
            n = row["num_seeds"]
            ts_s.append(sum(per_seed[:n]) if n <= len(per_seed) else np.mean(per_seed) * n)
    x = np.arange(len(labels))
    ax_time.bar(x - 0.2, compile_s, 0.4, label="jaxrl compile")
    ax_time.bar(x - 0.2, run_s, 0.4, bottom=compile_s, label="jaxrl run")
    if ts_rows:
        ax_time.bar(x + 0.2, ts_s, 0.4, label="Tianshou, sequential")
    ax_time.set_xticks(x)
    ax_time.set_xticklabels(labels)
    ax_time.set_yscale("log")
    ax_time.set_ylabel("wall time, s")
    ax_time.set_title("Pendulum-v1, fixed budget per seed")
    ax_time.legend(fontsize=8)
    groups = []
    for row in jax_rows:
        if row["num_seeds"] == max(r["num_seeds"] for r in jax_rows if r["algo"] == row["algo"]):
            groups.append((f"jaxrl {row['algo'].upper()}", row["final_returns"]))
    for row in ts_rows:
        groups.append((f"Tianshou {row['algo'].upper()}", row["final_returns"]))
    for i, (_, values) in enumerate(groups):
        ax_ret.scatter(np.full(len(values), i), values, alpha=0.6)
        ax_ret.hlines(np.mean(values), i - 0.3, i + 0.3, color="k")
    ax_ret.axhline(-250, ls="--", lw=1, color="gray", label="Tianshou's test bar (-250)")
    ax_ret.set_xticks(range(len(groups)))
    ax_ret.set_xticklabels([g[0] for g in groups], fontsize=8)
    ax_ret.set_ylabel("final evaluation return (per seed; bar: mean)")
    ax_ret.legend(fontsize=8)
    save_figure(plt, fig, path)


if __name__ == "__main__":
    main()

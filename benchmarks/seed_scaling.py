"""Seed scaling: wall time per seed and env steps per second against the number of seeds
vmapped in one jaxrl program (TRPO and DDPG on gymnax Pendulum-v1, Tianshou's test settings).

Each seed count is one ``jax.jit(jax.vmap(make_train(...)))`` program; its compile time and its
run time are measured separately. Env steps per second count the training env steps of all
seeds (evaluation steps excluded) over the run time. TRPO runs its full Tianshou budget
(245,760 env steps per seed: 120 updates on 2048 steps); DDPG one Tianshou epoch (20,000 env
steps per seed: 2,500 updates of batch 128) by default.

    python benchmarks/seed_scaling.py                                  # 1, 4, 16, 64, 256 seeds
    python benchmarks/seed_scaling.py --algos trpo --seeds 1 4 16 64   # the driver-issue figure
    python benchmarks/seed_scaling.py --quick                          # CI smoke run
"""

from __future__ import annotations

from typing import Any

import numpy as np
from common import (
    PENDULUM_EPOCH_STEPS,
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
    write_csv,
    write_json,
)


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    add_seed_axis(parser)
    parser.add_argument("--algos", nargs="+", default=["trpo", "ddpg"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 4, 16, 64, 256])
    parser.add_argument(
        "--ddpg-seeds", nargs="+", type=int, default=None, help="DDPG's (default: --seeds)"
    )
    parser.add_argument("--trpo-steps", type=int, default=5 * PENDULUM_EPOCH_STEPS["trpo"])
    parser.add_argument("--ddpg-steps", type=int, default=PENDULUM_EPOCH_STEPS["ddpg"])
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.ddpg_seeds, args.trpo_steps, args.ddpg_steps = [2], [2], 2048, 400
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    budgets = {"trpo": args.trpo_steps, "npg": args.trpo_steps, "ddpg": args.ddpg_steps}

    rows: list[dict[str, Any]] = []
    for algo in args.algos:
        seed_counts = args.ddpg_seeds if algo == "ddpg" and args.ddpg_seeds else args.seeds
        for n in seed_counts:
            row = run_jaxrl_pendulum(algo, n, budgets[algo], seed_axis=args.seed_axis)
            row.pop("eval_returns")
            row["run_s_per_seed"] = row["run_s"] / n
            row["total_s_per_seed"] = row["total_s"] / n
            rows.append(row)
            print(
                f"{algo} {n:4d} seeds: compile {row['compile_s']:6.1f}s  run {row['run_s']:7.1f}s"
                f"  per seed {row['run_s_per_seed']:.2f}s (incl. compile "
                f"{row['total_s_per_seed']:.2f}s)  {row['env_steps_per_s']:,.0f} env steps/s"
                f"  mean final return {np.mean(row['final_returns']):.0f}"
                f"  load {row['loadavg_after'][0]:.2f}",
                flush=True,
            )
            write_json(out / "seed_scaling.partial.json", {"command": command_line(), "rows": rows})
    table = markdown_table(
        [
            "algo",
            "seeds",
            "env steps / seed",
            "compile s",
            "run s",
            "run s / seed",
            "(compile + run) s / seed",
            "env steps / s",
            "mean final return",
            "load avg",
        ],
        [
            [
                r["algo"].upper(),
                r["num_seeds"],
                f"{r['env_steps_per_seed']:,d}",
                f"{r['compile_s']:.1f}",
                f"{r['run_s']:.1f}",
                f"{r['run_s_per_seed']:.3f}",
                f"{r['total_s_per_seed']:.3f}",
                f"{r['env_steps_per_s']:,.0f}",
                f"{np.mean(r['final_returns']):.0f}",
                f"{r['loadavg_before'][0]:.1f}-{r['loadavg_after'][0]:.1f}",
            ]
            for r in rows
        ],
    )
    print()
    print(table)
    write_json(
        out / "seed_scaling.json",
        {
            "command": command_line(),
            "machine": {**info, "loadavg_end": loadavg()},
            "rows": rows,
            "table": table,
        },
    )
    write_csv(
        out / "seed_scaling.csv",
        [{k: v for k, v in r.items() if not k.endswith("_returns")} for r in rows],
    )
    plot(rows, out)


def plot(rows: list[dict[str, Any]], out: Any) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (ax_time, ax_rate) = plt.subplots(1, 2, figsize=(11, 4))
    for algo in dict.fromkeys(r["algo"] for r in rows):
        sub = [r for r in rows if r["algo"] == algo]
        seeds = [r["num_seeds"] for r in sub]
        (line,) = ax_time.plot(
            seeds, [r["run_s_per_seed"] for r in sub], "o-", label=f"{algo.upper()} run"
        )
        ax_time.plot(
            seeds,
            [r["total_s_per_seed"] for r in sub],
            "s--",
            color=line.get_color(),
            label=f"{algo.upper()} compile + run",
        )
        ax_rate.plot(seeds, [r["env_steps_per_s"] for r in sub], "o-", label=algo.upper())
    for ax in (ax_time, ax_rate):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("seeds vmapped in one program")
        ax.legend(fontsize=8)
    ax_time.set_ylabel("wall time per seed, s")
    ax_time.set_title("Per-seed wall time (Pendulum-v1)")
    ax_rate.set_ylabel("training env steps / s (all seeds)")
    ax_rate.set_title("Throughput")
    save_figure(plt, fig, out / "seed_scaling.png")


if __name__ == "__main__":
    main()

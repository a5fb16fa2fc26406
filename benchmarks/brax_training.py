"""TRPO, NPG and DDPG on Brax environments: many seeds in one jitted program.

For each algorithm and environment: the run of ``jaxrl train ALGO --env brax:ENV`` (the
preset the id picks: Tianshou's MuJoCo settings for Brax's MuJoCo tasks), ``--num-seeds``
seeds vmapped in one program, trained period by period. It reports the compile time (the
vmapped ``init`` and ``run_period`` programs, lowered and compiled before the run), the run
time, env steps per second (training env steps of all seeds over the run time, evaluations
included in the time) and the evaluation returns against env steps (mean, std, min and max
across seeds), and draws the learning curves.

    # the GPU experiment (one H100): 256 TRPO seeds x 1M env steps on MJX hopper
    python benchmarks/brax_training.py --algos trpo --envs hopper --backend mjx \\
        --num-seeds 256 --total-steps 1000000
    # CPU figures: Brax's cheap physics, small budgets
    python benchmarks/brax_training.py --algos trpo ddpg --envs inverted_pendulum \\
        --backend positional --num-seeds 16 --total-steps 49152
    python benchmarks/brax_training.py --quick     # smoke run, ~20 s (Brax's physics-free "fast")

MJX's solver settings: ``--solver newton --solver-iterations 1 --solver-ls-iterations 4`` (the
accelerator setting). Each row also times one evaluation alone (``evaluation_s``) and
apportions the run's time to its evaluations (``evaluation_share_of_run``; None where they
ran alongside training, ``--preset accelerator``).

Partial results are written after every period (``brax_training.partial.json``); a run that
must survive interruptions belongs in ``jaxrl train ... --resume``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any

import numpy as np
from common import (
    add_seed_axis,
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
    write_json,
)


def _run(args: Any, algo: str, env_name: str) -> dict[str, Any]:
    import jax

    from jaxrl.algorithms import registry
    from jaxrl.config import RunConfig
    from jaxrl.runs import make_loop
    from jaxrl.training import over_seeds, resolve_seed_axis
    from jaxrl.training.seeds import seed_keys

    run = {"total_steps": args.total_steps, "num_seeds": args.num_seeds, "seed": args.seed}
    for name in (
        "num_envs",
        "num_steps",
        "eval_every",
        "eval_episodes",
        "solver",
        "solver_iterations",
        "solver_ls_iterations",
    ):
        if getattr(args, name) is not None:
            run[name] = getattr(args, name)
    fields = {f.name for f in dataclasses.fields(registry.get(algo).cls)}
    config = RunConfig.from_preset(
        algo,
        "brax:" + env_name,
        args.preset,
        backend="jax",
        brax_backend=args.backend,
        hyperparameters={k: v for k, v in args.hyper if k in fields},
        **run,
    )
    agent = config.make_agent()
    loop = make_loop(config, agent).seed_loop()  # the loop `jaxrl train` runs (constants)
    keys = seed_keys(config.seed, config.num_seeds)
    load_before = loadavg()
    start = time.perf_counter()
    over = functools.partial(over_seeds, how=args.seed_axis, agent=agent, env=loop.env)
    init = jax.jit(over(loop.init)).lower(keys).compile()
    carry_shape = jax.eval_shape(over(loop.init), keys)
    run_period = jax.jit(over(loop.run_period)).lower(carry_shape).compile()
    compile_s = time.perf_counter() - start
    print(
        f"{algo} brax:{env_name} ({args.backend}) x{config.num_seeds}: compiled in "
        f"{compile_s:.1f}s; {loop.num_periods} periods of "
        f"{config.eval_every:,} env steps",
        flush=True,
    )
    start = time.perf_counter()
    carry = init(keys)
    steps, returns, trained = [], [], 0
    for period, collections in enumerate(loop.layout.period_collections):
        if collections != loop.layout.collections_per_period:  # a shorter last period
            carry, metrics = jax.jit(over(loop.period(collections)))(carry)
        else:
            carry, metrics = run_period(carry)
        metrics = jax.device_get(metrics)
        trained = int(metrics["env_steps"][0, -1])
        # The policy evaluated: the period's last (evaluated alongside, its first).
        steps.append(int(metrics["eval/env_steps"][0]))
        returns.append(np.asarray(metrics["eval/return"], np.float64))
        elapsed = time.perf_counter() - start
        print(
            f"  period {period + 1}/{loop.num_periods}: {trained:,} env steps/seed, "
            f"eval return {returns[-1].mean():.1f} +- {returns[-1].std():.1f}, "
            f"{elapsed:.1f}s",
            flush=True,
        )
    run_s = time.perf_counter() - start
    curve = np.stack(returns, axis=1)  # [seeds, periods]
    # One evaluation alone (its program compiled first), to apportion the run's time.
    command_loop = make_loop(config, agent)
    for _ in range(2):
        eval_start = time.perf_counter()
        command_loop.evaluate(carry.state, carry.obs_stats, config.eval_episodes, 0, True)
        one_eval_s = time.perf_counter() - eval_start
    return {
        "algo": algo,
        "env": config.env,
        "brax_backend": config.brax_backend,
        "preset": config.preset,
        "num_seeds": config.num_seeds,
        "seed_axis": resolve_seed_axis(args.seed_axis, agent, loop.env),
        "run": config.to_dict()["run"],
        "hyperparameters": config.hyperparameters,
        "env_steps_per_seed": trained,
        "compile_s": compile_s,
        "run_s": run_s,
        "total_s": compile_s + run_s,
        "env_steps_per_s": config.num_seeds * trained / run_s,
        "evaluation_s": one_eval_s,
        "evaluations": len(steps),
        # Evaluated alongside training, evaluation takes no time of its own to apportion.
        "evaluation_share_of_run": (
            None if config.eval_alongside else min(1.0, len(steps) * one_eval_s / run_s)
        ),
        "eval_env_steps": steps,
        "eval_mean": curve.mean(axis=0).tolist(),
        "eval_std": curve.std(axis=0).tolist(),
        "eval_min": curve.min(axis=0).tolist(),
        "eval_max": curve.max(axis=0).tolist(),
        "final_returns": curve[:, -1].tolist(),
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }


def _hyper(text: str) -> tuple[str, Any]:
    import json

    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["trpo"])
    parser.add_argument("--envs", nargs="+", default=["hopper"])
    parser.add_argument(
        "--backend",
        default="generalized",
        help="Brax physics: generalized, positional, spring or mjx (for GPUs)",
    )
    parser.add_argument("--num-seeds", type=int, default=16)
    add_seed_axis(parser, "the program takes")
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default=None, help="default: the one the env id picks")
    for name in ("num-envs", "num-steps", "eval-every", "eval-episodes"):
        parser.add_argument(f"--{name}", type=int, default=None, help="default: the preset's")
    parser.add_argument("--solver", choices=("cg", "newton"), default=None, help="MJX's solver")
    for name in ("solver-iterations", "solver-ls-iterations"):
        parser.add_argument(f"--{name}", type=int, default=None, help="MJX's; default: the task's")
    parser.add_argument(
        "--hyper",
        nargs="*",
        type=_hyper,
        default=[],
        metavar="NAME=VALUE",
        help="hyperparameter overrides (JSON values) for the algorithms that have them, "
        "e.g. warmup_steps=1000",
    )
    args = parser.parse_args()
    if args.quick:
        args.envs, args.backend, args.num_seeds = ["fast"], "positional", 2
        args.total_steps, args.eval_every, args.eval_episodes = 2048, 1024, 2
        args.num_envs, args.num_steps, args.preset = 4, 64, "default"
        args.hyper = [("hidden_sizes", [16]), ("warmup_steps", 64), ("batch_size", 32)]
        args.algos = ["trpo", "ddpg"]
    out = output_dir(args)
    info = machine_info()
    print_machine(info)

    rows: list[dict[str, Any]] = []
    for env_name in args.envs:
        for algo in args.algos:
            rows.append(_run(args, algo, env_name))
            write_json(
                out / "brax_training.partial.json",
                {"command": command_line(), "machine": info, "rows": rows},
            )
    table = markdown_table(
        [
            "algo",
            "env",
            "physics",
            "seeds",
            "env steps / seed",
            "compile s",
            "run s",
            "env steps/s",
            "final return (mean +- std [min, max])",
        ],
        [
            [
                r["algo"],
                r["env"],
                r["brax_backend"],
                r["num_seeds"],
                f"{r['env_steps_per_seed']:,}",
                f"{r['compile_s']:.1f}",
                f"{r['run_s']:.1f}",
                f"{r['env_steps_per_s']:,.0f}",
                f"{r['eval_mean'][-1]:.1f} +- {r['eval_std'][-1]:.1f} "
                f"[{r['eval_min'][-1]:.1f}, {r['eval_max'][-1]:.1f}]",
            ]
            for r in rows
        ],
    )
    print(table)
    write_json(
        out / "brax_training.json", {"command": command_line(), "machine": info, "rows": rows}
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        x, mean, std = (np.asarray(r[k]) for k in ("eval_env_steps", "eval_mean", "eval_std"))
        label = f"{r['algo']} {r['env']} ({r['brax_backend']}, {r['num_seeds']} seeds)"
        ax.plot(x, mean, marker="o", label=label)
        ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("env steps per seed")
    ax.set_ylabel("evaluation return (mean +- std across seeds)")
    ax.legend(fontsize=8)
    save_figure(plt, fig, out / "brax_training.png")


if __name__ == "__main__":
    main()

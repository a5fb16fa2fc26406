"""Learning quality on MuJoCo through jaxrl's gymnasium host driver, against Tianshou's table.

TRPO, NPG and DDPG with the settings of Tianshou's ``examples/mujoco/mujoco_{trpo,npg,ddpg}.py``
(jaxrl's ``mujoco`` preset), trained by :func:`jaxrl.training.gymnasium_driver.train_gymnasium`
with all seeds of an (algorithm, environment) vmapped in one process, on EnvPool when it is
installed (``pip install -e ".[envpool,mujoco]"``). Each group appends one JSON line per seed
to ``mujoco_learning.jsonl`` as it finishes, and groups already there are skipped, so a long
sweep can be stopped, resumed and summarized later (``--summarize``). Tianshou's published
numbers (1M env steps, 10 seeds, max over training of the mean test return) are in
``TIANSHOU_1M``.

    python benchmarks/mujoco_learning.py --algos trpo npg \
        --envs Hopper-v5 HalfCheetah-v5 Walker2d-v5 --seeds 0 1 2 --total-steps 1000000
    python benchmarks/mujoco_learning.py --summarize      # table and plot from the JSONL
    python benchmarks/mujoco_learning.py --quick          # CI smoke run (Pendulum if no MuJoCo)
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
    write_json,
)

from jaxrl.training.gymnasium_driver import train_gymnasium

# Tianshou examples/mujoco README (1M steps, 10 seeds, max of the mean test return); for the
# v4 environments (the v5 ones used here have the same dynamics and rewards, see gymnasium's
# MuJoCo changelog, apart from bug fixes).
TIANSHOU_1M: dict[str, dict[str, tuple[float, float]]] = {
    "HalfCheetah": {"trpo": (4471, 805), "npg": (3485, 717), "ddpg": (11719, 466)},
    "Hopper": {"trpo": (2046, 1038), "npg": (1915, 551), "ddpg": (2197, 972)},
    "Walker2d": {"trpo": (3827, 783), "npg": (2503, 963), "ddpg": (1401, 905)},
    "Ant": {"trpo": (2867, 708), "npg": (2358, 518), "ddpg": (990, 4)},
    "Swimmer": {"trpo": (40.9, 19.6), "npg": (31.5, 8.0), "ddpg": (144.1, 6.5)},
    "Reacher": {"trpo": (-5.1, 0.8), "npg": (-4.5, 0.5), "ddpg": (-3.3, 0.3)},
    "InvertedPendulum": {"trpo": (1000, 0), "npg": (1000, 0), "ddpg": (1000, 0)},
}


def make_config(algo: str, env_id: str, seeds: list[int], total_steps: int, args: Any) -> Any:
    """The run: Tianshou's MuJoCo example settings as jaxrl's ``mujoco`` preset
    (:mod:`jaxrl.algorithms.presets`), all ``seeds`` vmapped in one host-driver process."""
    from jaxrl.io.config import RunConfig

    hyper = {}
    if algo == "ddpg":
        hyper["warmup_steps"] = min(args.warmup_steps, total_steps // 2)
        # Tianshou keeps 1e6; a buffer at least as large as the run never overwrites, so it
        # is the same thing here, in less memory.
        hyper["buffer_size"] = max(min(total_steps, 1_000_000), 1000)
    run = {"eval_every": args.eval_every} if args.eval_every else {}
    return RunConfig.from_preset(
        algo,
        env_id,
        "mujoco",
        hyperparameters=hyper,
        total_steps=total_steps,
        eval_episodes=args.eval_episodes,
        seed=seeds[0],
        num_seeds=len(seeds),
        env_backend=args.env_backend,
        **run,
    )


def run_group(
    algo: str, env_id: str, seeds: list[int], total_steps: int, args: Any
) -> list[dict[str, Any]]:
    """Train ``seeds`` together (one vmapped host-driver run); one record per seed."""
    config = make_config(algo, env_id, seeds, total_steps, args)
    agent = config.make_agent()
    start = time.perf_counter()

    def progress(info: dict) -> None:
        returns = " ".join(f"{r:8.1f}" for r in info["eval_returns"])
        print(
            f"  {algo} {env_id} seeds {seeds[0]}-{seeds[-1]}: {info['env_steps']:>9,d} steps "
            f"{info['seconds']:7.1f}s  eval returns {returns}",
            flush=True,
        )

    _, metrics = train_gymnasium(
        agent,
        env_id,
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=total_steps,
        eval_every=config.eval_every,
        eval_episodes=config.eval_episodes,
        seed=seeds[0],
        num_seeds=len(seeds),
        normalize_obs=config.normalize_obs,
        env_backend=args.env_backend,
        progress=progress,
    )
    seconds = time.perf_counter() - start
    steps = np.asarray(metrics["eval/env_steps"][0])
    records = []
    for index, seed in enumerate(seeds):
        returns = np.asarray(metrics["eval/return"][index], float)
        records.append(
            {
                "algo": algo,
                "env": env_id,
                "seed": seed,
                "total_steps": int(steps[-1]),
                "warmup_steps": config.hyperparameters.get("warmup_steps", 0),
                "seconds": seconds,
                "seeds_in_process": len(seeds),
                "env_steps_per_second": len(seeds) * int(steps[-1]) / seconds,
                "env_backend": args.env_backend,
                "eval_env_steps": steps.tolist(),
                "eval_return": returns.tolist(),
                "final_return": float(returns[-1]),
                "best_return": float(returns.max()),
                "loadavg_end": loadavg(),
            }
        )
    return records


def summarize(records: list[dict[str, Any]], out: Path) -> str:
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["env"], r["algo"], r["total_steps"]), []).append(r)
    rows = []
    for (env, algo, steps), runs in sorted(groups.items()):
        best = np.array([r["best_return"] for r in runs])
        final = np.array([r["final_return"] for r in runs])
        # Tianshou's statistic: max over evaluations of the mean over seeds.
        curves = np.array([r["eval_return"] for r in runs])
        max_of_mean = curves.mean(axis=0).max() if curves.ndim == 2 else float("nan")
        base = env.split("-")[0]
        ref = TIANSHOU_1M.get(base, {}).get(algo)
        minutes = np.mean([r["seconds"] for r in runs]) / 60
        rate = np.mean([r.get("env_steps_per_second", np.nan) for r in runs])
        rows.append(
            [
                env,
                algo.upper(),
                f"{steps:,d}",
                len(runs),
                f"{max_of_mean:.0f}",
                f"{best.mean():.0f} +- {best.std():.0f}",
                f"{final.mean():.0f} +- {final.std():.0f}",
                f"{ref[0]:g} +- {ref[1]:g}" if ref else "-",
                f"{minutes:.1f}",
                f"{rate:,.0f}" if np.isfinite(rate) else "-",
            ]
        )
    table = markdown_table(
        [
            "env",
            "algo",
            "env steps / run",
            "seeds",
            "jaxrl max of mean",
            "jaxrl best per seed (mean +- std)",
            "jaxrl final (mean +- std)",
            "Tianshou 1M steps, 10 seeds",
            "minutes / run",
            "env steps/s (all seeds)",
        ],
        rows,
    )
    plot(groups, out)
    return table


def plot(groups: dict, out: Path) -> None:
    plt = pyplot()
    if plt is None or not groups:
        return
    envs = sorted({env for env, _, _ in groups})
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.6), squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        for (e, algo, _), runs in sorted(groups.items()):
            if e != env:
                continue
            steps = np.array(runs[0]["eval_env_steps"])
            curves = np.array([r["eval_return"] for r in runs])
            mean, std = curves.mean(0), curves.std(0)
            (line,) = ax.plot(steps, mean, label=f"jaxrl {algo.upper()} ({len(runs)} seeds)")
            ax.fill_between(steps, mean - std, mean + std, alpha=0.2, color=line.get_color())
            ref = TIANSHOU_1M.get(env.split("-")[0], {}).get(algo)
            if ref:
                ax.axhline(ref[0], ls="--", lw=1, color=line.get_color())
        ax.set_title(f"{env} (dashed: Tianshou at 1M steps)")
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1000:g}k")
        ax.set_ylabel("evaluation return")
        ax.legend(fontsize=8)
    save_figure(plt, fig, out / "mujoco_learning.png")


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=None, help="default: trpo npg ddpg")
    parser.add_argument("--envs", nargs="+", default=["Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--ddpg-total-steps", type=int, default=None, help="DDPG's own budget")
    parser.add_argument("--warmup-steps", type=int, default=25_000, help="DDPG random steps")
    parser.add_argument("--eval-every", type=int, default=None, help="default: the preset's")
    parser.add_argument("--env-backend", default="auto", choices=["auto", "gymnasium", "envpool"])
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--summarize", action="store_true", help="only summarize the JSONL")
    args = parser.parse_args()
    if args.algos is None:
        args.algos = ["trpo", "ddpg"] if args.quick else ["trpo", "npg", "ddpg"]
    if args.quick:
        # A smoke run: DDPG's learning steps (one update each on the host) are most of its
        # time, so most of its 1,024 steps are the random warm-up.
        args.seeds, args.total_steps, args.ddpg_total_steps = [0], 2048, 1024
        args.warmup_steps, args.eval_every, args.eval_episodes = 768, 1024, 2
        if not mujoco_available():
            print("MuJoCo is not installed: the quick run uses gymnasium's Pendulum-v1 instead.")
            args.envs = ["Pendulum-v1"]
        else:
            args.envs = args.envs[:1]
    out = output_dir(args)
    log_path = out / "mujoco_learning.jsonl"
    if not args.summarize:
        if args.quick:
            log_path.unlink(missing_ok=True)
        info = machine_info()
        print_machine(info)
        done = set()
        if log_path.exists():  # resumable: groups already in the JSONL are skipped
            for line in log_path.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    done.add((r["algo"], r["env"], r["seed"], r["total_steps"]))
        for env_id in args.envs:
            for algo in args.algos:
                steps = args.ddpg_total_steps if algo == "ddpg" else None
                steps = steps or args.total_steps
                config = make_config(algo, env_id, args.seeds, steps, args)
                from jaxrl.training.periods import RunLayout

                taken = RunLayout.of(
                    config.num_envs, config.num_steps, steps, config.eval_every
                ).total_steps
                if all((algo, env_id, seed, taken) in done for seed in args.seeds):
                    print(f"{algo} {env_id} seeds {args.seeds} at {taken:,} steps: in the log")
                    continue
                for record in run_group(algo, env_id, args.seeds, steps, args):
                    record["command"] = command_line()
                    with log_path.open("a") as f:
                        f.write(json.dumps(record) + "\n")
                    print(
                        f"{algo} {env_id} seed {record['seed']}: final "
                        f"{record['final_return']:.1f}, best {record['best_return']:.1f}, "
                        f"{record['seconds']:.0f}s, {record['env_steps_per_second']:,.0f} "
                        "env steps/s",
                        flush=True,
                    )
        write_json(out / "mujoco_machine.json", {**info, "loadavg_end": loadavg()})
    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    table = summarize(records, out)
    print()
    print(table)


if __name__ == "__main__":
    main()

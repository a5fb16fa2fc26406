"""Learning quality on MuJoCo through jaxrl's gymnasium host driver, against Tianshou's table.

TRPO, NPG and DDPG with the settings of Tianshou's ``examples/mujoco/mujoco_{trpo,npg,ddpg}.py``
(see ``SETTINGS``), trained by :func:`jaxrl.training.gymnasium_driver.train_gymnasium` on
gymnasium MuJoCo environments (``pip install -e ".[bench]"`` or ``.[mujoco]``). Each run appends
one JSON line to ``mujoco_learning.jsonl`` as it finishes, so a long sweep can be stopped and
summarized later (``--summarize``). Tianshou's published numbers (1M env steps, 10 seeds, max
over training of the mean test return) are in ``TIANSHOU_1M``; the budget used here is smaller
and is printed next to every number.

    python benchmarks/mujoco_learning.py --algos trpo npg --envs Hopper-v5 HalfCheetah-v5 \
        --seeds 0 1 2 --total-steps 200000
    python benchmarks/mujoco_learning.py --summarize      # table and plot from the JSONL
    python benchmarks/mujoco_learning.py --quick          # CI smoke run (Pendulum if no MuJoCo)
"""

from __future__ import annotations

import json
import math
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

import jaxrl
from jaxrl.algorithms.ddpg import GaussianNoise
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

SETTINGS = {
    # mujoco_trpo.py / mujoco_npg.py: 16 envs, 1024 steps per collect, full batch, repeat 1.
    "on_policy": dict(num_envs=16, num_steps=64, normalize_obs=True),
    # mujoco_ddpg.py: 1 env, 1 step per collect, 1 update per step.
    "ddpg": dict(num_envs=1, num_steps=1, normalize_obs=False),
}


def make_agent(algo: str, total_steps: int, warmup_steps: int) -> Any:
    if algo in ("npg", "trpo"):
        steps_per_update = SETTINGS["on_policy"]["num_envs"] * SETTINGS["on_policy"]["num_steps"]
        num_updates = max(1, total_steps // steps_per_update)
        common = dict(
            gamma=0.99,
            gae_lambda=0.95,
            lr=1e-3,
            # Tianshou's linear decay of the critic learning rate over the whole run.
            lr_schedule=lambda n: 1.0 - n / num_updates,
            return_scaling=True,
            advantage_normalization=True,
            optim_critic_iters=20,
            repeat=1,
            batch_size=None,
            hidden_sizes=(64, 64),
            activation="tanh",
            init_gain=math.sqrt(2),
            actor_output_scale=0.01,
            log_std_init=-0.5,
            action_bound_method="clip",
        )
        if algo == "npg":
            return jaxrl.NPG(trust_region_size=0.1, **common)
        return jaxrl.TRPO(max_kl=0.01, backtrack_coeff=0.8, max_backtracks=10, **common)
    return jaxrl.DDPG(
        hidden_sizes=(256, 256),
        actor_lr=1e-3,
        critic_lr=1e-3,
        gamma=0.99,
        tau=0.005,
        exploration_noise=GaussianNoise(sigma=0.1),
        n_step_return_horizon=1,
        batch_size=256,
        # Tianshou keeps 1e6; a buffer at least as large as the run never overwrites, so it is
        # the same thing here, in less memory.
        buffer_size=max(total_steps, 1000),
        warmup_steps=warmup_steps,
        update_per_step=1,
    )


def run_one(
    algo: str,
    env_id: str,
    seed: int,
    total_steps: int,
    eval_every: int,
    eval_episodes: int,
    warmup_steps: int,
) -> dict[str, Any]:
    agent = make_agent(algo, total_steps, warmup_steps)
    settings = SETTINGS["ddpg" if algo == "ddpg" else "on_policy"]
    start = time.perf_counter()

    def progress(info: dict) -> None:
        print(
            f"  {algo} {env_id} seed {seed}: {info['env_steps']:>8,d} steps "
            f"{info['seconds']:7.1f}s  eval return {info['eval_return']:9.1f}",
            flush=True,
        )

    _, metrics = train_gymnasium(
        agent,
        env_id,
        total_steps=total_steps,
        eval_every=eval_every,
        eval_episodes=eval_episodes,
        seed=seed,
        progress=progress,
        **settings,
    )
    returns = np.asarray(metrics["eval/return"], float)
    return {
        "algo": algo,
        "env": env_id,
        "seed": seed,
        "total_steps": int(metrics["eval/env_steps"][-1]),
        "warmup_steps": warmup_steps if algo == "ddpg" else 0,
        "seconds": time.perf_counter() - start,
        "eval_env_steps": np.asarray(metrics["eval/env_steps"]).tolist(),
        "eval_return": returns.tolist(),
        "final_return": float(returns[-1]),
        "best_return": float(returns.max()),
        "loadavg_end": loadavg(),
    }


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
    parser.add_argument("--total-steps", type=int, default=200_000)
    parser.add_argument("--ddpg-total-steps", type=int, default=None, help="DDPG's own budget")
    parser.add_argument("--warmup-steps", type=int, default=25_000, help="DDPG random steps")
    parser.add_argument("--eval-every", type=int, default=20_480)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--summarize", action="store_true", help="only summarize the JSONL")
    args = parser.parse_args()
    if args.algos is None:
        args.algos = ["trpo", "ddpg"] if args.quick else ["trpo", "npg", "ddpg"]
    if args.quick:
        args.seeds, args.total_steps, args.ddpg_total_steps = [0], 2048, 300
        args.warmup_steps, args.eval_every, args.eval_episodes = 100, 1024, 2
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
        for env_id in args.envs:
            for algo in args.algos:
                steps = args.ddpg_total_steps if algo == "ddpg" else None
                steps = steps or args.total_steps
                for seed in args.seeds:
                    record = run_one(
                        algo,
                        env_id,
                        seed,
                        steps,
                        args.eval_every,
                        args.eval_episodes,
                        min(args.warmup_steps, steps // 2),
                    )
                    record["command"] = command_line()
                    with log_path.open("a") as f:
                        f.write(json.dumps(record) + "\n")
                    print(
                        f"{algo} {env_id} seed {seed}: final {record['final_return']:.1f}, "
                        f"best {record['best_return']:.1f}, {record['seconds']:.0f}s",
                        flush=True,
                    )
        write_json(out / "mujoco_machine.json", {**info, "loadavg_end": loadavg()})
    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    table = summarize(records, out)
    print()
    print(table)


if __name__ == "__main__":
    main()

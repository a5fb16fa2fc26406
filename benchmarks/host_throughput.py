"""Host-driver training throughput on MuJoCo: gymnasium vs EnvPool, one seed vs many.

The same TRPO run (jaxrl's ``mujoco`` preset: Tianshou's MuJoCo settings, 16 envs x 64 steps
per update, observation normalization) on Hopper-v5, measured side by side in one process
per configuration, one after another:

- ``gymnasium x 1``: the path every MuJoCo run took before EnvPool and multi-seed training
  (gymnasium's vector env, one seed per process);
- ``envpool x 1``, ``gymnasium x S``, ``envpool x S``: EnvPool, and S seeds vmapped.

Throughput is env steps per second summed over the seeds, training and evaluation included
(evaluation every ``--eval-every`` steps, 10 episodes per seed), over the periods after the
first one (which holds the compilation); the first period's time is reported apart.

    python benchmarks/host_throughput.py                # Hopper-v5, 1 and 4 seeds
    python benchmarks/host_throughput.py --seeds 1 4 8 --steps 65536
    python benchmarks/host_throughput.py --quick        # CI smoke run
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from common import (
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    write_json,
)


def measure(env_id: str, backend: str, num_seeds: int, steps: int, eval_every: int) -> dict:
    """One configuration, in this process."""
    from jaxrl.io.config import RunConfig
    from jaxrl.training.gymnasium_driver import train_gymnasium

    config = RunConfig.from_preset(
        "trpo",
        env_id,
        "mujoco",
        total_steps=steps,
        eval_every=eval_every,
        num_seeds=num_seeds,
        env_backend=backend,
    )
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    train_gymnasium(
        config.make_agent(),
        env_id,
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=steps,
        eval_every=eval_every,
        eval_episodes=10,
        num_seeds=num_seeds,
        normalize_obs=True,
        env_backend=backend,
        progress=lambda info: marks.append((info["env_steps"], time.perf_counter())),
    )
    total = time.perf_counter() - start
    (first_steps, first_time), (last_steps, last_time) = marks[0], marks[-1]
    return {
        "env": env_id,
        "backend": backend,
        "num_seeds": num_seeds,
        "env_steps_per_seed": last_steps,
        "first_period_s": first_time - start,
        "seconds": total,
        "env_steps_per_s": num_seeds * (last_steps - first_steps) / (last_time - first_time),
        "env_steps_per_s_incl_compile": num_seeds * last_steps / total,
        "loadavg": loadavg(),
    }


def run_configuration(args: Any, backend: str, seeds: int) -> dict:
    """One configuration's record: in a fresh process (no compilation cache or warm state
    shared), or in this one for ``--quick`` (a smoke run, not a measurement)."""
    if args.quick:
        return measure(args.env, backend, seeds, args.steps, args.eval_every)
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--env",
            args.env,
            "--eval-every",
            str(args.eval_every),
            "--one",
            backend,
            str(seeds),
            str(args.steps),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 4])
    parser.add_argument("--backends", nargs="+", default=["gymnasium", "envpool"])
    parser.add_argument("--steps", type=int, default=4 * 16_384, help="env steps per seed")
    parser.add_argument("--eval-every", type=int, default=16_384)
    parser.add_argument("--one", nargs=3, metavar=("BACKEND", "SEEDS", "STEPS"), help="internal")
    args = parser.parse_args()
    if args.one:  # a child process: one configuration, its record as the last line
        backend, seeds, steps = args.one[0], int(args.one[1]), int(args.one[2])
        print(json.dumps(measure(args.env, backend, seeds, steps, args.eval_every)))
        return
    if args.quick:
        args.seeds, args.steps, args.eval_every = [1, 2], 2048, 1024
        args.env = args.env if mujoco_available() else "Pendulum-v1"
        args.backends = ["gymnasium"]
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    rows: list[dict[str, Any]] = []
    for backend in args.backends:
        for seeds in args.seeds:
            row = run_configuration(args, backend, seeds)
            rows.append(row)
            print(
                f"{backend:9s} x{seeds:<3d} {row['env_steps_per_s']:8,.0f} env steps/s "
                f"({row['env_steps_per_s_incl_compile']:,.0f} incl. the first period of "
                f"{row['first_period_s']:.1f} s), load {row['loadavg'][0]:.1f}",
                flush=True,
            )
    base = next((r for r in rows if r["backend"] == "gymnasium" and r["num_seeds"] == 1), None)
    table = markdown_table(
        [
            "backend",
            "seeds",
            "env steps/s",
            "incl. first period",
            "first period (s)",
            "vs gymnasium x1",
        ],
        [
            [
                r["backend"],
                r["num_seeds"],
                f"{r['env_steps_per_s']:,.0f}",
                f"{r['env_steps_per_s_incl_compile']:,.0f}",
                f"{r['first_period_s']:.1f}",
                f"x{r['env_steps_per_s'] / base['env_steps_per_s']:.1f}" if base else "-",
            ]
            for r in rows
        ],
    )
    write_json(
        out / "host_throughput.json", {"machine": info, "command": command_line(), "rows": rows}
    )
    print()
    print(table)


if __name__ == "__main__":
    main()

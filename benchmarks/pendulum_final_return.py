"""Does the command's main job end solved? ``jaxrl train ALGO --env Pendulum-v1`` exactly as a
user runs it (a fresh process, a fresh compilation cache), on seeds the tests and the
hyperparameter search never use, reading the run's final deterministic evaluation.

The bar (issue: "first impression"): at least 15 of 16 held-out seeds end with a final
deterministic evaluation (10 episodes) >= -250, Tianshou's Pendulum bar.

    python benchmarks/pendulum_final_return.py                     # TRPO, seed 1000, 16 seeds
    python benchmarks/pendulum_final_return.py --algo npg --preset tianshou-pendulum
    python benchmarks/pendulum_final_return.py --quick             # CI smoke run (tiny budget)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import (
    base_parser,
    command_line,
    loadavg,
    machine_info,
    output_dir,
    print_machine,
    write_json,
)

THRESHOLD = -250.0


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--algo", default="trpo")
    parser.add_argument("--preset", default=None, help="default: the one --env picks (pendulum)")
    parser.add_argument("--seed", type=int, default=1000, help="base seed (held out: 1000)")
    parser.add_argument("--num-seeds", type=int, default=16)
    parser.add_argument("--extra", nargs="*", default=[], help="more `jaxrl train` options")
    args = parser.parse_args()
    if args.quick:
        args.num_seeds = 2
    info = machine_info()
    print_machine(info)
    out = output_dir(args)
    command = [
        "train",
        args.algo,
        "--env",
        "Pendulum-v1",
        "--seed",
        str(args.seed),
        "--num-seeds",
        str(args.num_seeds),
    ]
    if args.preset:
        command += ["--preset", args.preset]
    if args.quick:  # tiny: 2 periods of one 4 x 32-step update, a [8] network
        command += ["--total-steps", "256", "--eval-every", "128", "--num-steps", "32"]
        command += ["--num-envs", "4", "--eval-episodes", "2", "--hidden-sizes", "8"]
    command += args.extra
    run_dir = Path(tempfile.mkdtemp()) / "run"
    # A fresh compilation cache, so that compile time is included (quick mode, for CI, uses
    # the caller's cache when it has one).
    cache = Path(tempfile.mkdtemp())
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache)}
    if args.quick and "JAX_COMPILATION_CACHE_DIR" in os.environ:
        env["JAX_COMPILATION_CACHE_DIR"] = os.environ["JAX_COMPILATION_CACHE_DIR"]
    script = Path(sys.executable).parent / "jaxrl"
    exe = [str(script)] if script.exists() else [sys.executable, "-m", "jaxrl"]
    print("$ jaxrl " + " ".join(command), flush=True)
    before = loadavg()
    start = time.perf_counter()
    done = subprocess.run(
        [*exe, *command, "--run-dir", str(run_dir)], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr[-3000:])
        raise SystemExit(done.returncode)
    final = json.loads((run_dir / "final_eval.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    deterministic = np.asarray(final["deterministic"])
    reached = int(np.sum(deterministic >= THRESHOLD))
    row = {
        "algo": args.algo,
        "preset": config["preset"],
        "seed": args.seed,
        "num_seeds": args.num_seeds,
        "env_steps": final["env_steps"],
        "episodes": final["episodes"],
        "deterministic": final["deterministic"],
        "stochastic": final["stochastic"],
        "deterministic_mean": float(deterministic.mean()),
        "deterministic_std": float(deterministic.std()),
        "reached": reached,
        "seconds": seconds,
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }
    print(
        f"{args.algo.upper()} preset {config['preset']}: {args.num_seeds} seeds from seed "
        f"{args.seed}, {final['env_steps']:,} env steps, {seconds:.1f} s (compilation included)"
    )
    print(
        f"final deterministic return {deterministic.mean():.1f} +- {deterministic.std():.1f}; "
        f"{reached}/{args.num_seeds} seeds >= {THRESHOLD:g}; worst {deterministic.min():.1f}"
    )
    name = f"pendulum_final_return_{args.algo}_{config['preset']}_{args.seed}.json"
    write_json(out / name, {"machine": info, "command": command_line(), "run": row})
    shutil.rmtree(run_dir.parent, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

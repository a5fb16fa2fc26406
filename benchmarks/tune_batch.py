"""A batch of tuning trials against the same trials as separate runs, side by side.

``jaxrl tune --batch N`` asks Optuna for N trials and trains them as one group: TRPO on
Pendulum-v1 (gymnax) with ``max_kl`` and ``gae_lambda`` searched (numeric hyperparameters,
pytree leaves), so the N trials x ``--seeds`` seeds are ONE compiled program. The other side
trains each trial's values (read back from ``tune.csv``) with its own ``jaxrl train`` command
on the same search seeds. Both sides are fresh processes of the installed command with a cold
JAX compilation cache each, as a user would run them; the script checks that each trial's
objective equals its separate run's.

    python benchmarks/tune_batch.py                  # 8 trials x 4 seeds, 32,768 env steps
    python benchmarks/tune_batch.py --quick          # smoke run
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import base_parser, loadavg, machine_info, output_dir, print_machine, write_json


def _command() -> list[str]:
    script = Path(sys.executable).parent / "jaxrl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "jaxrl"]


def _run(args: list[str], cache: Path) -> float:
    """Seconds of one fresh ``jaxrl`` process with an empty compilation cache."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([*_command(), *args], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"jaxrl {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start


def _objective(run_dir: Path, last: int = 5) -> float:
    """What ``jaxrl tune`` takes as a trial's objective (jaxrl.studies.tuning.objective)."""
    with open(run_dir / "evals.csv") as handle:
        rows = [r for r in csv.DictReader(handle) if int(r["period"]) >= 1]
    periods = sorted({int(r["period"]) for r in rows})[-last:]
    return float(np.mean([float(r["eval_return"]) for r in rows if int(r["period"]) in periods]))


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--total-steps", type=int, default=32_768)
    args = parser.parse_args()
    if args.quick:
        args.trials, args.seeds, args.total_steps = 2, 2, 8_192
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    common = ["--env", "Pendulum-v1", "--num-seeds", str(args.seeds), "--seed", "1000"]
    common += ["--total-steps", str(args.total_steps), "--checkpoint-every", "0"]
    search = ["--search", "max-kl=0.002:0.1:log", "--search", "gae-lambda=0.8:1.0"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        tune = ["tune", "trpo", *common, *search, "--trials", str(args.trials)]
        tune += ["--batch", str(args.trials), "--pruner", "none", "--tune-dir", str(root / "t")]
        load_before = loadavg()
        batch_s = _run(tune, root / "cache-tune")
        print(
            f"jaxrl tune: one batch of {args.trials} trials x {args.seeds} seeds in {batch_s:.1f} s"
        )
        with open(root / "t" / "tune.csv") as handle:
            trials = list(csv.DictReader(handle))
        separate, differences = [], []
        for trial in trials:
            run_dir = root / f"run-{trial['trial']}"
            values = ["--max-kl", trial["max_kl"], "--gae-lambda", trial["gae_lambda"]]
            seconds = _run(["train", "trpo", *common, *values, "--run-dir", str(run_dir)],
                           root / f"cache-{trial['trial']}")  # fmt: skip
            separate.append(seconds)
            shutil.rmtree(root / f"cache-{trial['trial']}", ignore_errors=True)
            differences.append(abs(_objective(run_dir) - float(trial["objective"])))
            print(f"  jaxrl train, trial {trial['trial']}: {seconds:.1f} s")
        load_after = loadavg()
    result: dict[str, Any] = {
        "trials": args.trials,
        "seeds": args.seeds,
        "total_steps": args.total_steps,
        "batch_s": batch_s,
        "separate_s": sum(separate),
        "separate_each_s": separate,
        "speedup": sum(separate) / batch_s,
        "largest_objective_difference": max(differences),
        "machine": info,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }
    print(
        f"{args.trials} separate jaxrl train: {sum(separate):.1f} s; the batch is "
        f"{result['speedup']:.1f}x faster; largest objective difference "
        f"{result['largest_objective_difference']:.3g}"
    )
    print(f"load average before {load_before}, after {load_after}")
    write_json(out / f"tune_batch_{args.trials}x{args.seeds}_{info['jax_backend']}.json", result)


if __name__ == "__main__":
    main()

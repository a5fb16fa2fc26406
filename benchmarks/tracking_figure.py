"""What a wandb run holds is the run's CSVs: a figure for ``docs/guides/tracking.md``.

Trains TRPO on Pendulum-v1 (gymnax) with ``--logger tensorboard,wandb`` and wandb offline
(no account, no network), reads the offline run's history back from its ``.wandb`` file
(with the tests' reader, ``tests/cli/wandb_records.py``), and draws the logged
``eval/return`` and ``eval/return_seed_<i>`` against ``env_steps`` with the mean across
seeds of ``evals.csv`` over them. Prints the largest difference between the two.

    python benchmarks/tracking_figure.py                    # 50,000 steps x 4 seeds
    python benchmarks/tracking_figure.py --total-steps 5000 --num-seeds 2   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxrl.runs.metrics import read_csv  # noqa: E402
from tests.cli.wandb_records import offline_runs  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RUNS = RESULTS / "tracking_runs"  # the run itself (checkpoints, wandb files): not committed
FIGURE = ROOT / "docs" / "guides" / "tracking_history.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=50_000)
    parser.add_argument("--num-seeds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RUNS, help="where the run goes")
    parser.add_argument("--figure", type=Path, default=FIGURE)
    parser.add_argument("--no-train", action="store_true", help="redraw from the last run")
    args = parser.parse_args()

    run_dir = args.out / "run"
    if run_dir.exists() and not args.no_train:
        shutil.rmtree(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    home = args.out / "wandb-home"  # wandb's settings and caches, away from ~/.config
    home.mkdir(exist_ok=True)
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("WANDB_DIR", None)
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        env[name] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    command = [
        *("jaxrl", "train", "trpo", "--env", "Pendulum-v1"),
        *("--total-steps", str(args.total_steps), "--num-seeds", str(args.num_seeds)),
        *("--logger", "tensorboard,wandb", "--run-dir", str(run_dir)),
    ]
    started = time.monotonic()
    if not args.no_train:
        print("WANDB_MODE=offline " + " ".join(command))
        subprocess.run([sys.executable, "-m", *command], env=env, check=True)
        print(f"trained in {time.monotonic() - started:.0f} s")
    seconds = time.monotonic() - started

    (run,) = offline_runs(run_dir / "wandb")
    evals = [row for row in run.history if "eval/return" in row]
    steps = np.array([row["env_steps"] for row in evals])
    logged = np.array([row["eval/return"] for row in evals])
    seeds = sorted(int(k.rsplit("_", 1)[1]) for k in evals[0] if k.startswith("eval/return_"))
    per_seed = np.array([[row[f"eval/return_seed_{s}"] for row in evals] for s in seeds])

    table = read_csv(run_dir / "evals.csv")
    csv_steps = np.unique(table["env_steps"])
    csv_mean = np.array([np.mean(table["eval_return"][table["env_steps"] == s]) for s in csv_steps])
    csv_seed = np.array(
        [
            [
                table["eval_return"][(table["env_steps"] == s) & (table["seed"] == i)][0]
                for s in csv_steps
            ]
            for i in seeds
        ]
    )
    assert np.array_equal(steps, csv_steps), "wandb's env_steps are not evals.csv's"
    mean_gap = float(np.max(np.abs(logged - csv_mean)))
    seed_gap = float(np.max(np.abs(per_seed - csv_seed)))
    print(f"wandb run {run.run_id}: {len(evals)} evaluations x {len(seeds)} seeds")
    print(f"max |wandb eval/return - mean of evals.csv| = {mean_gap:.3g}")
    print(f"max |wandb eval/return_seed_<i> - evals.csv| = {seed_gap:.3g}")
    print(f"final eval/return {logged[-1]:.1f} at {steps[-1]} env steps")
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.no_train:
        shutil.copy(run_dir / "evals.csv", RESULTS / "tracking_evals.csv")
    summary = {
        "command": "WANDB_MODE=offline " + " ".join(command),
        "seconds": None if args.no_train else round(seconds),
        "wandb_run": run.run_id,
        "env_steps": steps.tolist(),
        "wandb_eval_return": logged.tolist(),
        "csv_mean_eval_return": csv_mean.tolist(),
        "max_abs_difference_mean": mean_gap,
        "max_abs_difference_per_seed": seed_gap,
    }
    if not args.no_train:
        (RESULTS / "tracking_history.json").write_text(json.dumps(summary, indent=1) + "\n")
        print(f"wrote {RESULTS / 'tracking_history.json'} and {RESULTS / 'tracking_evals.csv'}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 4.0), dpi=110)
    for s, values in zip(seeds, per_seed, strict=True):
        ax.plot(steps, values, lw=0.9, alpha=0.45, label=f"wandb eval/return_seed_{s}")
    ax.plot(steps, logged, color="black", lw=2.2, label="wandb eval/return")
    ax.plot(
        csv_steps,
        csv_mean,
        "o",
        ms=5,
        mfc="none",
        mec="tab:red",
        mew=1.4,
        label="evals.csv: mean across seeds",
    )
    ax.set_xlabel("env_steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(
        f"TRPO on Pendulum-v1, offline wandb history vs evals.csv\n"
        f"max |difference| = {mean_gap:.2g} (mean), {seed_gap:.2g} (per seed)",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.figure)
    print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()

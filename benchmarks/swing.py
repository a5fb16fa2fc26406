"""How much a run's evaluations swing from one to the next, seed by seed, over a window of env
steps: what the learning page's DDPG caveat measures, and what the Hopper experiments on its
cause compare (docs/benchmarks/learning.md, "Why does DDPG's final policy fall short of its
best?").

Per seed, over the evaluations in the window ``(LOW, HIGH]`` env steps:
  mean        the window's mean evaluation return;
  below half  the share of its evaluations below half the best return the seed had reached
              by then (every evaluation up to it counts, those before the window too; for
              positive returns only);
  swing       the mean absolute change between consecutive evaluations in the window, over
              the window's mean;
and, per run, the mean +- std of each across seeds. Reads run directories (``evals.csv``) or
the MuJoCo table's rows (``--table``: one run per algorithm and task). Seconds, no training.

    python benchmarks/swing.py RUN_DIR [RUN_DIR ...] --window 150000 300000
    python benchmarks/swing.py --table benchmarks/results/mujoco_table.jsonl --algo ddpg \\
        --window 150000 300000 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from mujoco_compare import write_run_dirs  # noqa: E402

from jaxrl.runs.metrics import learning_curve  # noqa: E402
from jaxrl.runs.plots import run_label  # noqa: E402


def seed_swing(steps: np.ndarray, returns: np.ndarray, low: float, high: float) -> dict:
    """One seed's ``{evaluations, mean, below_half, swing}`` over the evaluations at
    ``low < steps <= high`` (``steps [P]`` increasing, ``returns [P]``, NaN where the seed
    has none); ``None`` values where the window holds fewer than two evaluations, and
    ``below_half`` None where the best so far is not positive."""
    have = ~np.isnan(returns)
    steps, returns = steps[have], returns[have]
    best_so_far = np.maximum.accumulate(returns)
    inside = (steps > low) & (steps <= high)
    window = returns[inside]
    if len(window) < 2:
        return {"evaluations": len(window), "mean": None, "below_half": None, "swing": None}
    mean = float(np.mean(window))
    return {
        "evaluations": len(window),
        "mean": mean,
        "below_half": (
            float(np.mean(window < 0.5 * best_so_far[inside]))
            if np.all(best_so_far[inside] > 0)
            else None  # half of a negative best is above it: no meaning
        ),
        "swing": float(np.mean(np.abs(np.diff(window))) / abs(mean)),
    }


def run_swing(run_dir: Path, low: float, high: float) -> dict:
    """Every seed's :func:`seed_swing` of ``run_dir``, and the mean and std across seeds."""
    steps, returns, seeds = learning_curve(run_dir / "evals.csv")
    per_seed = [seed_swing(steps, returns[:, i], low, high) for i in range(len(seeds))]
    summary = {}
    for stat in ("mean", "below_half", "swing"):
        values = [s[stat] for s in per_seed if s[stat] is not None]
        summary[stat] = [float(np.mean(values)), float(np.std(values))] if values else None
    return {"run": run_label(run_dir), "run_dir": str(run_dir), "seeds": per_seed, **summary}


def _cell(value: float | None, percent: bool) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if percent else f"{value:.1f}"


def _spread(mean: float, std: float, percent: bool) -> str:
    return f"{mean:.0%} +- {std:.0%}" if percent else f"{mean:.1f} +- {std:.1f}"


def format_rows(results: list[dict], low: float, high: float) -> str:
    """A markdown table: a row per seed, then each run's mean +- std across seeds."""
    lines = [
        f"Window: {low:,.0f} < env steps <= {high:,.0f}",
        "",
        "| run | seed | evaluations | mean | below half of best so far | swing |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        for index, seed in enumerate(result["seeds"]):
            lines.append(
                f"| {result['run']} | {index} | {seed['evaluations']} | "
                f"{_cell(seed['mean'], False)} | {_cell(seed['below_half'], True)} | "
                f"{_cell(seed['swing'], True)} |"
            )
        spread = [
            "-" if result[stat] is None else _spread(*result[stat], percent)
            for stat, percent in (("mean", False), ("below_half", True), ("swing", True))
        ]
        lines.append(f"| {result['run']} | all | | {' | '.join(spread)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="*", type=Path, help="run directories")
    parser.add_argument("--table", type=Path, help="the MuJoCo table's rows (a .jsonl file)")
    parser.add_argument("--algo", help="with --table: this algorithm's rows only")
    parser.add_argument("--env", help="with --table: this task's rows only (Hopper-v5)")
    parser.add_argument("--window", nargs=2, type=float, metavar=("LOW", "HIGH"), required=True)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.run_dirs and args.table is None:
        parser.error("give RUN_DIRs or --table")
    low, high = args.window
    with tempfile.TemporaryDirectory() as tmp:
        run_dirs = list(args.run_dirs)
        if args.table is not None:
            rows = [json.loads(line) for line in args.table.read_text().splitlines() if line]
            rows = [
                r for r in rows if args.algo in (None, r["algo"]) and args.env in (None, r["env"])
            ]
            run_dirs += write_run_dirs(rows, Path(tmp))
        results = [run_swing(run_dir, low, high) for run_dir in run_dirs]
    print(json.dumps(results, indent=2) if args.json else format_rows(results, low, high))


if __name__ == "__main__":
    main()

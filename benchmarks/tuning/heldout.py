"""Gather a tuned preset's held-out runs into one result file, the one the MuJoCo table's
tuned column (``benchmarks/mujoco_table.py``) and ``--preset mujoco-tuned`` 's test read.

A study's best setting (its ``best.json``, a preset file) is trained on seeds no search used,
in one or more runs (``jaxrl train trpo --preset-file best.json --seed S --num-seeds 5``,
one per core). This reads those run directories, checks that each trained the preset file's
task, preset and values for the whole budget, and writes every seed's evaluations during
training (``evaluations``: env steps -> one return per seed), its final policy's
deterministic and stochastic returns, the seeds, and the preset that trained them:

    python benchmarks/tuning/heldout.py --best best.json RUN_DIR [RUN_DIR ...] \
        --command "jaxrl train trpo --preset-file best.json --seed S --num-seeds 5 (S = 0, 5)" \
        --machine "2-core AMD EPYC, jax 0.10.2" [--out FILE]

The file is ``benchmarks/results/tuned_heldout_trpo_TASK.json`` unless ``--out`` says
otherwise (``TASK``: the task's name in lower case, ``walker2d``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.runs.metrics import learning_curve
from jaxrl.runs.report import FinalEvaluation

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _same_values(trained: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """The names in ``wanted`` whose value ``trained`` does not hold (JSON's view: tuples as
    lists)."""
    trained, wanted = json.loads(json.dumps(trained)), json.loads(json.dumps(wanted))
    return [name for name, value in wanted.items() if trained.get(name) != value]


def gather(best: dict[str, Any], run_dirs: list[Path]) -> dict[str, Any]:
    """The held-out result of the preset file ``best`` trained in ``run_dirs``.

    Raises:
      ValueError: naming the run directory and what does not fit (another task, preset or
        value, an unfinished run, a seed trained twice or one the search used).
    """
    evaluations: dict[int, dict[int, float]] = {}  # env steps -> seed -> return
    finals: dict[int, tuple[float, float]] = {}
    steps_per_seed = episodes = None
    for run_dir in run_dirs:
        config = json.loads((run_dir / "config.json").read_text())
        run = config["run"]
        for field in ("algo", "env", "preset"):
            if config[field] != best[field]:
                raise ValueError(
                    f"{run_dir}: trained {field} {config[field]!r}, the preset file has "
                    f"{best[field]!r}"
                )
        wrong = _same_values(config["hyperparameters"], best["hyperparameters"])
        wrong += _same_values(run, best.get("run", {}))
        if wrong:
            raise ValueError(f"{run_dir}: trained other values of {wrong} than the preset file")
        final = FinalEvaluation.load(run_dir / "final_eval.json")
        if final is None:
            raise ValueError(f"{run_dir}: no final_eval.json (the run has not finished)")
        seeds = [run["seed"] + i for i in range(run["num_seeds"])]
        for seed in seeds:
            if seed in finals:
                raise ValueError(f"{run_dir}: seed {seed} is in another run directory too")
            if seed in best.get("search_seeds", ()):
                raise ValueError(f"{run_dir}: seed {seed} is one of the search's seeds")
        stochastic = final.stochastic if final.stochastic is not None else [np.nan] * len(seeds)
        for seed, det, sto in zip(seeds, final.deterministic, stochastic, strict=True):
            finals[seed] = (float(det), float(sto))
        steps, returns, indices = learning_curve(run_dir / "evals.csv")  # returns [P, S]
        for at, row in zip(steps, returns, strict=True):
            for index, value in zip(indices, row, strict=True):
                if not np.isnan(value):
                    evaluations.setdefault(int(at), {})[seeds[int(index)]] = float(value)
        steps_per_seed = final.env_steps
        episodes = run["eval_episodes"]
    order = sorted(finals)
    for steps, returns in evaluations.items():
        if sorted(returns) != order:
            raise ValueError(f"the evaluation at {steps} env steps lacks seeds of {order}")
    provenance = best.get("provenance", {})
    return {
        "task": best["env"],
        "algo": best["algo"],
        "study": provenance.get("study"),
        "trial": provenance.get("trial"),
        "preset": {
            "preset": best["preset"],
            "hyperparameters": best["hyperparameters"],
            "run": best.get("run", {}),
        },
        "seeds": order,
        "env_steps_per_seed": steps_per_seed,
        "eval_episodes": episodes,
        "evaluations": {
            str(steps): [evaluations[steps][seed] for seed in order]
            for steps in sorted(evaluations)
        },
        "final_deterministic": [finals[seed][0] for seed in order],
        "final_stochastic": [finals[seed][1] for seed in order],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="the held-out run directories")
    parser.add_argument("--best", type=Path, required=True, help="the study's best.json")
    parser.add_argument("--command", required=True, help="the command the runs were made with")
    parser.add_argument("--machine", required=True, help="the machine they ran on")
    parser.add_argument("--out", type=Path, help="the result file (default: by task)")
    args = parser.parse_args(argv)
    best = json.loads(args.best.read_text())
    try:
        result = gather(best, args.run_dirs)
    except ValueError as error:
        print(f"heldout.py: {error}", file=sys.stderr)
        return 2
    result.update(command=args.command, machine=args.machine)
    task = best["env"].split("-")[0].lower()
    out = args.out or RESULTS / f"tuned_heldout_{best['algo']}_{task}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    finals = np.array(result["final_deterministic"])
    print(
        f"{best['env']}: {len(finals)} seeds, final {finals.mean():.1f} +- {finals.std():.1f} "
        f"(deterministic); written to {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

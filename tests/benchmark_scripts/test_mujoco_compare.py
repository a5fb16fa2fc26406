"""``benchmarks/mujoco_compare.py``: the MuJoCo table's rows rebuilt as run directories that
``jaxrl compare --normalize`` reads, one per algorithm and task with every seed's values."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from jaxrl.runs.metrics import learning_curve
from jaxrl.runs.published import RANDOM_RETURNS, tianshou_best
from jaxrl.studies.normalized import normalized_groups

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import mujoco_compare as mc


def _row(algo: str, env: str, seed: int, final: float) -> dict:
    return {
        "algo": algo, "env": env, "seed": seed, "env_steps": 2048, "eval_episodes": 10,
        "eval_env_steps": [1024, 2048], "eval_return": [final / 2, final], "final_return": final,
    }  # fmt: skip


def test_each_cell_becomes_a_run_directory_of_its_seeds(tmp_path):
    finals = {("trpo", "Hopper-v5"): [900.0, 1500.0], ("trpo", "Ant-v5"): [400.0, -10.0]}
    rows = [_row(a, e, s, v) for (a, e), values in finals.items() for s, v in enumerate(values)]
    run_dirs = mc.write_run_dirs(rows[::-1], tmp_path)  # seeds out of order in the file
    assert [d.name for d in run_dirs] == ["trpo-Ant-v5", "trpo-Hopper-v5"]
    steps, returns, _ = learning_curve(run_dirs[1] / "evals.csv")
    np.testing.assert_array_equal(steps, [1024, 2048])
    np.testing.assert_array_equal(returns, [[450.0, 750.0], [900.0, 1500.0]])
    final = json.loads((run_dirs[1] / "final_eval.json").read_text())
    assert final["deterministic"] == [900.0, 1500.0] and final["env_steps"] == 2048
    (group,) = normalized_groups(run_dirs, "tianshou")
    for column, (task, env) in enumerate((("Ant", "Ant-v5"), ("Hopper", "Hopper-v5"))):
        zero, one = RANDOM_RETURNS[task], tianshou_best(task)
        expected = (np.asarray(finals["trpo", env]) - zero) / (one - zero)
        np.testing.assert_allclose(group.scores[:, column], expected, rtol=1e-12)

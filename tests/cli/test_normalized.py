"""Many tasks at once: ``jaxrl compare --normalize tianshou`` over synthetic run directories
on several MuJoCo tasks, its aggregates against plain NumPy (:mod:`jaxrl.studies.normalized`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from jaxrl.runs.published import RANDOM_RETURNS, tianshou_best
from jaxrl.studies import statistics as st
from jaxrl.studies.normalized import normalized_groups

from .helpers import single_error_line

TASKS = ("Hopper-v5", "HalfCheetah-v5", "Reacher-v5")


def synthetic_run(path: Path, algo: str, env: str, finals: np.ndarray) -> Path:
    """A finished run directory: ``config.json``, a two-point ``evals.csv`` and
    ``final_eval.json`` with the deterministic returns ``finals [seeds]``."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"algo": algo, "env": env}))
    rows = ["seed,period,env_steps,eval_return,wall_time"]
    for seed, value in enumerate(finals):
        rows += [f"{seed},0,0,0.0,1.0", f"{seed},1,1000,{float(value)!r},2.0"]
    (path / "evals.csv").write_text("\n".join(rows) + "\n")
    final = {"episodes": 10, "env_steps": 1000, "deterministic": [float(v) for v in finals]}
    (path / "final_eval.json").write_text(json.dumps({**final, "stochastic": None}))
    return path


def _pair(env: str) -> tuple[float, float]:
    task = env.split("-v")[0]
    return RANDOM_RETURNS[task], tianshou_best(task)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """TRPO and NPG on three tasks, 4 seeds each: returns drawn around each task's range."""
    root = tmp_path_factory.mktemp("many-tasks")
    rng = np.random.RandomState(0)
    made: dict[str, list[Path]] = {"trpo": [], "npg": []}
    for algo, level in (("trpo", 0.8), ("npg", 0.5)):
        for env in TASKS:
            zero, one = _pair(env)
            finals = zero + (one - zero) * rng.normal(level, 0.3, size=4)
            made[algo].append(synthetic_run(root / f"{algo}-{env}", algo, env, finals))
    return made


def _plain_scores(run_dirs: list[Path]) -> np.ndarray:
    """``[seeds, tasks]`` normalized scores, computed here from the files."""
    columns = []
    for run_dir in run_dirs:
        env = json.loads((run_dir / "config.json").read_text())["env"]
        zero, one = _pair(env)
        finals = np.asarray(json.loads((run_dir / "final_eval.json").read_text())["deterministic"])
        columns.append((finals - zero) / (one - zero))
    return np.stack(columns, axis=1)


def test_the_reference_is_tianshous_best_mean_over_the_random_policy():
    assert tianshou_best("Hopper") == 2197.0  # DDPG's, the best of Tianshou's three
    assert tianshou_best("Reacher") == -3.3
    assert tianshou_best("Pendulum") is None
    assert set(RANDOM_RETURNS) == {
        "HalfCheetah", "Hopper", "Walker2d", "Ant", "Swimmer", "Reacher", "InvertedPendulum"
    }  # fmt: skip
    assert RANDOM_RETURNS["Reacher"] < tianshou_best("Reacher")
    measured = Path(__file__).parents[2] / "benchmarks" / "results" / "random_scores.json"
    assert RANDOM_RETURNS == {k: v["mean"] for k, v in json.loads(measured.read_text()).items()}


def test_groups_hold_each_algorithms_normalized_scores(runs):
    every = runs["trpo"] + runs["npg"]
    groups = normalized_groups(every, "tianshou")
    assert [g.label for g in groups] == ["TRPO", "NPG"]
    assert groups[0].tasks == TASKS
    np.testing.assert_allclose(groups[0].scores, _plain_scores(runs["trpo"]), rtol=1e-12)
    np.testing.assert_allclose(groups[1].scores, _plain_scores(runs["npg"]), rtol=1e-12)
    # --labels pool runs: one label for all six runs, one group of 8 seeds per task.
    (pooled,) = normalized_groups(every, "tianshou", ["all"] * 6)
    assert pooled.scores.shape == (8, 3)


def test_compare_prints_the_aggregates_of_tasks_x_seeds(jaxrl, runs, tmp_path):
    every = runs["trpo"] + runs["npg"]
    profile = tmp_path / "profile.png"
    result = jaxrl("compare", "--normalize", "tianshou", *every, "-o", tmp_path / "c.png",
                   "--profile", profile).check()  # fmt: skip
    trpo, npg = _plain_scores(runs["trpo"]), _plain_scores(runs["npg"])
    # The IQM pooled over tasks x seeds: the mean of the middle half of the 12 scores.
    iqm = np.sort(trpo.ravel())[3:9].mean()
    low, high = st.bootstrap_interval(trpo, st.iqm)
    mean = trpo.mean(axis=0).mean()
    mean_low, mean_high = st.bootstrap_interval(trpo, st.mean)
    assert (
        f"  TRPO (3 tasks x 4 seeds): IQM {iqm:.2f} [{low:.2f}, {high:.2f}], "
        f"mean {mean:.2f} [{mean_low:.2f}, {mean_high:.2f}]"
    ) in result.stdout
    wins = np.mean([np.mean(trpo[:, t][:, None] > npg[:, t][None, :]) for t in range(3)])
    assert f"P(TRPO > NPG) = {wins:.2f} (a seed of each, over the 3 tasks both ran)" in (
        result.stdout
    )
    assert profile.stat().st_size > 0
    as_json = jaxrl("compare", "--normalize", "tianshou", *every, "-o", tmp_path / "c.png",
                    "--json").check()  # fmt: skip
    normalized = json.loads(as_json.stdout)["normalized"]
    assert normalized[0]["iqm"] == pytest.approx(iqm, rel=1e-12)
    assert normalized[1]["mean"] == pytest.approx(npg.mean(), rel=1e-12)


def test_a_run_on_a_task_without_a_reference_is_one_line(jaxrl, runs, tmp_path):
    other = synthetic_run(tmp_path / "pendulum", "trpo", "Pendulum-v1", np.array([-150.0]))
    compare = ["compare", "--normalize", "tianshou", "-o", tmp_path / "c.png"]
    line = single_error_line(jaxrl(*compare, runs["trpo"][0], other))
    assert f"{other} is on Pendulum-v1, a task tianshou has no reference for" in line
    line = single_error_line(
        jaxrl("compare", "--normalize", "human", *runs["trpo"][:2], "-o", tmp_path / "c.png")
    )
    assert "--normalize human: expected one of tianshou" in line


def test_unequal_seeds_across_a_groups_tasks_are_one_line(jaxrl, runs, tmp_path):
    fewer = synthetic_run(tmp_path / "ant", "trpo", "Ant-v5", np.array([100.0, 200.0]))
    compare = ["compare", "--normalize", "tianshou", "-o", tmp_path / "c.png"]
    line = single_error_line(jaxrl(*compare, runs["trpo"][0], fewer))
    assert "TRPO has unequal seeds across its tasks (4 on Hopper-v5, 2 on Ant-v5)" in line

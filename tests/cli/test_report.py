"""The end of a run: the initial evaluation at step 0, the final policy's deterministic and
stochastic evaluations, the verdict, and ``jaxrl compare``."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from jaxrl import cli
from jaxrl.io import read_csv
from jaxrl.io.compare import compare_rows, format_table
from jaxrl.io.report import (
    CurveSummary,
    FinalEvaluation,
    against_tianshou,
    report_lines,
    solved_threshold,
    verdict,
)


def test_solved_thresholds_come_from_tianshou_or_gymnasium():
    assert solved_threshold("Pendulum-v1") == (-250.0, "Tianshou's Pendulum bar")
    assert solved_threshold("CartPole-v1") == (475.0, "gymnasium's reward_threshold")
    assert solved_threshold("MountainCarContinuous-v0")[0] == 90.0
    assert solved_threshold("HalfCheetah-v5")[0] == 4800.0
    assert solved_threshold("Breakout-MinAtar") is None  # gymnax only: none known
    assert solved_threshold("brax:hopper") is None  # Brax registers none


def test_verdict_uses_the_mean_and_counts_the_seeds():
    line = verdict("Pendulum-v1", np.array([-150.0, -170.0, -300.0]))
    assert line.startswith("Solved: final deterministic return -206.7 >= -250")
    assert "2 of 3 seeds reach it" in line
    line = verdict("Pendulum-v1", np.array([-150.0, -400.0]))
    assert line.startswith("Not solved: final deterministic return -275.0 < -250")
    assert "1 of 2 seeds reach it" in line
    assert verdict("Pendulum-v1", np.array([-150.0, np.nan])) is None
    assert verdict("Acrobot-v1", np.array([-90.0])).startswith("Solved")  # threshold -100


def test_final_evaluation_round_trips(tmp_path):
    final = FinalEvaluation(10, 4096, np.array([-150.5, -160.25]), None)
    final.save(tmp_path / "final_eval.json")
    loaded = FinalEvaluation.load(tmp_path / "final_eval.json")
    assert loaded.episodes == 10 and loaded.env_steps == 4096 and loaded.stochastic is None
    np.testing.assert_array_equal(loaded.deterministic, final.deterministic)
    assert FinalEvaluation.load(tmp_path / "missing.json") is None


def write_evals(path: Path, returns: np.ndarray, steps: list[int]) -> None:
    """An ``evals.csv`` with ``returns [P, S]`` at ``steps``."""
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["seed", "period", "env_steps", "eval_return", "wall_time"])
        for period, (step, row) in enumerate(zip(steps, returns, strict=True)):
            for seed, value in enumerate(row):
                writer.writerow([seed, period, step, value, 0.0])


def test_report_names_the_best_and_last_evaluations(tmp_path):
    returns = np.array([[-1200.0, -1000.0], [-200.0, -300.0], [-260.0, -240.0]])
    write_evals(tmp_path / "evals.csv", returns, [0, 1000, 2000])
    curve = CurveSummary.load(tmp_path / "evals.csv")
    final = FinalEvaluation(5, 2000, np.array([-150.0, -210.0]), np.array([-190.0, -230.0]))
    lines = report_lines("Pendulum-v1", final, curve)
    assert lines[0] == "Final policy (5 episodes per seed, 2,000 env steps):"
    assert lines[1].split()[:4] == ["deterministic", "-180.0", "+-", "30.0"]
    assert "(per seed: -150.0, -210.0)" in lines[1]
    assert lines[2].split()[:4] == ["stochastic", "-210.0", "+-", "20.0"]
    assert lines[3] == (
        "Evaluations during training: best -250.0 +- 50.0 after 1,000 env steps; "
        "last -250.0 +- 10.0 after 2,000."
    )
    assert lines[4].startswith("Solved: final deterministic return -180.0 >= -250")


def test_mujoco_report_compares_with_tianshous_published_result(tmp_path):
    """A MuJoCo task of Tianshou's table is judged against Tianshou's published 1M-step result
    for the algorithm (its statistic: the best mean over training), not gymnasium's
    reward_threshold; other environments keep their solved threshold."""
    returns = np.array([[10.0, 20.0], [1900.0, 2300.0], [1500.0, 1700.0]])
    write_evals(tmp_path / "evals.csv", returns, [0, 500_000, 998_400])
    curve = CurveSummary.load(tmp_path / "evals.csv")
    final = FinalEvaluation(10, 998_400, np.array([1400.0, 1800.0]), None)
    lines = report_lines("Hopper-v5", final, curve, "trpo")
    assert lines[-1] == (
        "Against Tianshou's TRPO on Hopper (1,000,000 env steps, 10 seeds, best mean over "
        "training): 2046 +- 1038; this run's best mean 2100.0 after 500,000 env steps (2 seeds) "
        "is at or above its mean."
    )
    assert not any("reward_threshold" in line for line in lines)
    below = report_lines("HalfCheetah-v5", final, curve, "ddpg")[-1]
    assert below.endswith("is below its mean - 1 std.") and "11719 +- 466" in below
    assert report_lines("Pendulum-v1", final, curve, "trpo")[-1].startswith("Solved")
    assert against_tianshou("trpo", "brax:hopper", curve) is None


def test_compare_rows_give_student_t_intervals(tmp_path):
    rng = np.random.default_rng(0)
    dirs = []
    for name, shift in (("a", 0.0), ("b", 100.0)):
        run_dir = tmp_path / name
        run_dir.mkdir()
        (run_dir / "config.json").write_text(json.dumps({"algo": "trpo", "env": "Pendulum-v1"}))
        write_evals(run_dir / "evals.csv", rng.normal(-500 + shift, 50, (3, 5)), [0, 10, 20])
        dirs.append(run_dir)
    FinalEvaluation(4, 20, np.array([-1.0, -2.0, -3.0, -4.0, -5.0]), None).save(
        dirs[1] / "final_eval.json"
    )
    rows = compare_rows(dirs)
    assert [row["run"] for row in rows] == ["TRPO Pendulum-v1 (a)", "TRPO Pendulum-v1 (b)"]
    last = read_csv(dirs[0] / "evals.csv")["eval_return"][-5:]
    half = stats.t.ppf(0.975, 4) * last.std(ddof=1) / np.sqrt(5)
    assert rows[0]["final"]["mean"] == pytest.approx(last.mean())
    assert rows[0]["final"]["ci_low"] == pytest.approx(last.mean() - half)
    assert rows[0]["final"]["ci_high"] == pytest.approx(last.mean() + half)
    assert "deterministic" not in rows[0]
    assert rows[1]["deterministic"]["mean"] == pytest.approx(-3.0)
    table = format_table(rows).splitlines()
    assert table[0].split()[:2] == ["run", "seeds"] and len(table) == 4
    assert table[3].rstrip().endswith("-3.0 +- 1.4 [-5.0, -1.0]")


def test_a_finished_run_reports_its_final_policy(trpo_run, jaxrl):
    run_dir, result = trpo_run
    result.check()
    final = FinalEvaluation.load(run_dir / "final_eval.json")
    assert final is not None and final.episodes == 2 and final.env_steps == 512
    assert final.deterministic.shape == (2,) and final.stochastic.shape == (2,)
    assert "Final policy (2 episodes per seed, 512 env steps):" in result.stdout
    assert "Evaluations during training: best" in result.stdout
    assert "final deterministic return" in result.stdout  # Pendulum's verdict
    # `jaxrl evaluate` with the run's episode count reproduces the figure of its mode.
    report = json.loads(jaxrl("evaluate", run_dir, "--episodes", "2", "--json").check().stdout)
    np.testing.assert_allclose(report["returns"], final.deterministic, rtol=1e-6)


def test_the_learning_curve_starts_at_the_initial_policy(trpo_run):
    run_dir, _ = trpo_run
    evals = read_csv(run_dir / "evals.csv")
    at_start = evals["env_steps"] == 0
    assert at_start.sum() == 2 and set(evals["period"][at_start]) == {0}
    assert np.isfinite(evals["eval_return"][at_start]).all()


def test_compare_command_writes_figure_and_table(trpo_run, jaxrl, tmp_path, capsys):
    run_dir, _ = trpo_run
    other = tmp_path / "other"
    other.mkdir()
    for name in ("config.json", "evals.csv"):
        shutil.copy(run_dir / name, other / name)
    output = tmp_path / "comparison.png"
    result = jaxrl("compare", run_dir, other, "-o", output, "--labels", "full", "copy").check()
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["run", "seeds"]
    assert lines[2].startswith("full ") and lines[3].startswith("copy ")
    assert f"Learning curves: {output}" in result.stdout and output.stat().st_size > 0
    data = json.loads(jaxrl("compare", run_dir, other, "-o", output, "--json").check().stdout)
    assert [row["seeds"] for row in data["runs"]] == [2, 2]
    assert "deterministic" in data["runs"][0] and "deterministic" not in data["runs"][1]
    for argv, expected in (
        (["compare", str(run_dir)], "needs at least 2 RUN_DIRs"),
        (["compare", str(run_dir), str(tmp_path / "nope")], "does not exist"),
        (["compare", str(run_dir), str(other), "--labels", "one"], "got 1 labels for 2 run"),
    ):
        assert cli.main(argv) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and expected in error, error

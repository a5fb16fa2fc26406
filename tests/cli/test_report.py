"""The end of a run: the initial evaluation at step 0, the final policy's deterministic and
stochastic evaluations, the verdict, and ``jaxrl compare``."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from jaxrl import cli
from jaxrl.runs import read_csv
from jaxrl.runs.plots import learning_curve_figure
from jaxrl.runs.report import (
    CurveSummary,
    FinalEvaluation,
    against_tianshou,
    report_lines,
    solved_threshold,
    verdict,
)
from jaxrl.studies.compare import compare_rows, format_table

RUN_FILES = ("config.json", "evals.csv", "final_eval.json")


def test_solved_thresholds_come_from_tianshou_or_gymnasium():
    assert solved_threshold("Pendulum-v1") == (-250.0, "Tianshou's Pendulum bar")
    assert solved_threshold("CartPole-v1") == (475.0, "gymnasium's reward_threshold")
    assert solved_threshold("MountainCarContinuous-v0")[0] == 90.0
    assert solved_threshold("HalfCheetah-v5")[0] == 4800.0
    assert solved_threshold("Breakout-MinAtar") is None  # gymnax only: none known
    assert solved_threshold("brax:hopper") is None  # Brax registers none


def test_verdict_uses_the_mean_and_counts_the_seeds():
    line = verdict("Pendulum-v1", np.array([-150.0, -170.0, -300.0]))
    assert line.startswith("Solved: final policy, deterministic -206.7 >= solved threshold -250")
    assert "2 of 3 seeds reach it" in line
    line = verdict("Pendulum-v1", np.array([-150.0, -400.0]))
    assert line.startswith("Not solved: final policy, deterministic -275.0 < solved threshold -250")
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
    assert lines[0] == (
        "Final policy (evaluated after training; 5 episodes per seed, 2,000 env steps):"
    )
    assert lines[1].split()[:4] == ["deterministic", "-180.0", "+-", "30.0"]
    assert "(per seed: -150.0, -210.0)" in lines[1]
    assert lines[2].split()[:4] == ["stochastic", "-210.0", "+-", "20.0"]
    assert lines[3] == "Best evaluation during training: -250.0 +- 50.0 after 1,000 env steps"
    assert lines[4] == "Last evaluation during training: -250.0 +- 10.0 after 2,000 env steps"
    assert lines[5].startswith("Solved: final policy, deterministic -180.0 >= solved threshold")


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
        "Against Tianshou's TRPO on Hopper (1,000,000 env steps, 10 seeds, best evaluation): "
        "2046 +- 1038; this run's best evaluation 2100.0 after 500,000 env steps (2 seeds) "
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
    assert rows[0]["last_evaluation"]["mean"] == pytest.approx(last.mean())
    assert rows[0]["last_evaluation"]["ci_low"] == pytest.approx(last.mean() - half)
    assert rows[0]["last_evaluation"]["ci_high"] == pytest.approx(last.mean() + half)
    assert rows[0]["last_evaluation_steps"] == 20
    assert "final_policy" not in rows[0]
    assert rows[1]["final_policy"]["deterministic"]["mean"] == pytest.approx(-3.0)
    assert rows[1]["final_policy"]["env_steps"] == 20
    table = format_table(rows).splitlines()
    assert table[0].split()[:2] == ["run", "seeds"] and len(table) == 4
    assert "final policy, stochastic" not in table[0]  # no run has one
    assert table[3].rstrip().endswith("-3.0 +- 1.4 [-5.0, -1.0]")


def test_a_finished_run_reports_its_final_policy(trpo_run, jaxrl):
    run_dir, result = trpo_run
    result.check()
    final = FinalEvaluation.load(run_dir / "final_eval.json")
    assert final is not None and final.episodes == 2 and final.env_steps == 512
    assert final.deterministic.shape == (2,) and final.stochastic.shape == (2,)
    assert "Final policy (evaluated after training; 2 episodes per seed, 512 env steps):" in (
        result.stdout
    )
    assert "Best evaluation during training: " in result.stdout
    assert "final policy, deterministic" in result.stdout  # Pendulum's verdict
    # `jaxrl evaluate` with the run's episode count reproduces the figure of its mode.
    report = json.loads(jaxrl("evaluate", run_dir, "--episodes", "2", "--json").check().stdout)
    np.testing.assert_allclose(report["returns"], final.deterministic, rtol=1e-6)
    assert report["policy"] == "final policy" and report["mode"] == "deterministic"
    text = jaxrl("evaluate", run_dir, "--episodes", "2").check().stdout
    assert text.startswith("TRPO on Pendulum-v1: final policy (checkpoint 4, 512 env steps")
    earlier = jaxrl("evaluate", run_dir, "--episodes", "2", "--step", "2").check().stdout
    assert earlier.startswith("TRPO on Pendulum-v1: policy during training (checkpoint 2,")


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
    assert "final_policy" in data["runs"][0] and "final_policy" not in data["runs"][1]
    for argv, expected in (
        (["compare", str(run_dir)], "needs at least 2 RUN_DIRs"),
        (["compare", str(run_dir), str(tmp_path / "nope")], "does not exist"),
        (["compare", str(run_dir), str(other), "--labels", "one"], "got 1 labels for 2 run"),
    ):
        assert cli.main(argv) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and expected in error, error


def _copy_run(run_dir: Path, to: Path, names: tuple[str, ...] = RUN_FILES) -> Path:
    """A copy of ``run_dir``'s result files (no checkpoints) at ``to``."""
    to.mkdir(parents=True)
    for name in names:
        shutil.copy(run_dir / name, to / name)
    return to


def _legend(figure) -> list[str]:
    return [text.get_text() for text in figure.axes[0].get_legend().get_texts()]


def test_the_report_plot_and_compare_use_the_same_names_for_the_same_numbers(trpo_run, tmp_path):
    """One finished run read three ways: the end-of-run report, its learning-curve figure and
    `jaxrl compare`'s table give each number under the same name (jaxrl.runs.vocabulary)."""
    run_dir, result = trpo_run
    result.check()
    # The report: "Final policy (...)" with a line per mode, "Best/Last evaluation during
    # training: MEAN +- STD after N env steps".
    report = {}
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Final policy ("))
    for line in lines[start + 1 : start + 3]:
        mode, value = line.split()[:2]
        report[f"final policy, {mode}"] = value
    for line in lines:
        if " evaluation during training: " in line:
            name, rest = line.split(" during training: ")
            report[name.lower()] = rest.split()[0]
        if " solved threshold " in line:
            report["solved threshold"] = line.split(" solved threshold ")[1].split()[0]
    assert set(report) == {
        "final policy, deterministic",
        "final policy, stochastic",
        "best evaluation",
        "last evaluation",
        "solved threshold",
    }, report
    # The figure's legend (one run: "NAME: VALUE ...").
    figure = learning_curve_figure([run_dir])
    plotted = dict(
        (name, rest.split()[0])
        for name, _, rest in (text.partition(": ") for text in _legend(figure))
        if rest and name != "shaded"
    )
    assert set(plotted) == set(report) - {"final policy, stochastic"}, plotted
    assert plotted == {name: report[name] for name in plotted}
    # `jaxrl compare`'s table: its columns are the same names, its cells start with the mean.
    other = _copy_run(run_dir, tmp_path / "copy", ("config.json", "evals.csv"))
    table = format_table(compare_rows([run_dir, other], ["full", "copy"])).splitlines()
    header = re.split(r"\s{2,}", table[0])
    cells = re.split(r"\s{2,}", table[2])
    compared = {
        name.removesuffix(" (env steps)"): cell.split()[0]
        for name, cell in zip(header, cells, strict=True)
        if name not in ("run", "seeds")
    }
    assert compared == {name: report[name] for name in compared}
    assert set(compared) == set(report) - {"solved threshold"}, compared
    assert table[3].split()[-2:] == ["-", "-"]  # the copy has no final policy


def test_compare_writes_next_to_the_first_run_with_a_title_and_ci_label(
    trpo_run, tmp_path, capsys, monkeypatch
):
    """Without -o, `jaxrl compare` writes compare-A-vs-B.png beside the first run directory,
    not into the working directory; its figure has a title (also in the PNG's metadata) and the
    legend says the bands are 95% confidence intervals of the mean."""
    from PIL import Image

    from jaxrl.runs import plots

    run_dir, _ = trpo_run
    runs = tmp_path / "runs"
    first, second = _copy_run(run_dir, runs / "a"), _copy_run(run_dir, runs / "b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    drawn = []
    original = plots.learning_curve_figure

    def record(*args, **kwargs):
        drawn.append(original(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(plots, "learning_curve_figure", record)
    monkeypatch.chdir(elsewhere)
    assert cli.main(["compare", str(first), str(second)]) == 0
    expected = runs / "compare-a-vs-b.png"
    assert f"Learning curves: {expected}" in capsys.readouterr().out
    assert expected.is_file() and list(elsewhere.iterdir()) == []
    title = "Pendulum-v1: 2 runs, mean and 95% confidence interval of the mean"
    assert Image.open(expected).text["Title"] == title
    (figure,) = drawn
    assert figure.axes[0].get_title() == title
    assert "shaded: 95% CI of the mean (Student's t)" in _legend(figure)
    assert {"best evaluation", "last evaluation", "final policy, deterministic"} <= set(
        _legend(figure)
    )

"""Experiment tracking (``--logger``, :mod:`jaxrl.runs.tracking`): a run logged offline to
wandb holds the resolved configuration, the evaluations of ``evals.csv``, the update
statistics at the CSV's env steps, the learning curve and the final report; a resumed run
continues its wandb run; a sweep groups its settings; bad loggers are one line."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from jaxrl.runs.tracking import (
    TrackingError,
    final_summary,
    parse_loggers,
    wandb_history_rows,
)

from .helpers import TINY, TRPO_RUN, as_columns, error_line
from .wandb_records import assert_history_is_the_csvs, offline_runs


def test_loggers_are_a_comma_separated_list_of_known_names():
    assert parse_loggers("tensorboard") == ("tensorboard",)
    assert parse_loggers("wandb, tensorboard,wandb") == ("wandb", "tensorboard")
    for text in ("mlflow", "tensorboard,csv", ","):
        with pytest.raises(TrackingError, match=r"--logger .*expected a comma-separated list"):
            parse_loggers(text)


def test_history_rows_are_the_rows_means_across_seeds():
    evals = [
        {"seed": s, "period": p, "env_steps": 128 * p, "eval_return": v}
        for p, values in enumerate([[1.0, 3.0], [-2.0, 5.0]])
        for s, v in enumerate(values)
    ]
    assert wandb_history_rows("evals", as_columns(evals)) == [
        {"env_steps": 0, "eval/return": 2.0, "eval/return_seed_0": 1.0, "eval/return_seed_1": 3.0},
        {"env_steps": 128, "eval/return": 1.5, "eval/return_seed_0": -2.0,
         "eval/return_seed_1": 5.0},
    ]  # fmt: skip
    updates = [
        {"seed": s, "period": 1, "update": u, "env_steps": 400 * u, "train_return": 0.0,
         "kl": float(10 * s + u)}
        for s in range(2) for u in (1, 2, 3)
    ]  # fmt: skip
    # Windows of 1,000 env steps: updates 1-2 (400, 800) and update 3 (1,200), per seed.
    rows = wandb_history_rows("updates", as_columns(updates))
    assert [row["env_steps"] for row in rows] == [800, 1200]
    assert rows[0]["train/kl"] == np.mean([np.mean([1, 2]), np.mean([11, 12])])
    assert rows[1]["train/kl"] == np.mean([3, 13])


def test_the_final_report_is_flat_summary_keys():
    from jaxrl.runs.report import FinalEvaluation

    final = FinalEvaluation(2, 512, np.array([-1.0, -3.0]), None)
    assert final_summary(final) == {
        "final_eval/episodes": 2,
        "final_eval/env_steps": 512,
        "final_eval/deterministic_mean": -2.0,
        "final_eval/deterministic_seed_0": -1.0,
        "final_eval/deterministic_seed_1": -3.0,
    }


def test_an_unknown_logger_is_one_line_naming_the_choices(capsys, tmp_path):
    line = error_line(capsys, [*TRPO_RUN, "--run-dir", str(tmp_path / "r"), "--logger", "mlflow"])
    assert "--logger 'mlflow': unknown logger 'mlflow'" in line
    assert "tensorboard, wandb" in line
    assert not (tmp_path / "r").exists()


def test_a_missing_wandb_is_one_line_naming_the_extra(capsys, tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec

    def without_wandb(name: str, *args: object) -> object:
        return None if name == "wandb" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_wandb)
    line = error_line(capsys, [*TRPO_RUN, "--run-dir", str(tmp_path / "r"), "--logger", "wandb"])
    assert line == (
        "jaxrl: error: --logger wandb needs the wandb package: pip install 'jaxrl[wandb]'"
    )
    sweep = ["sweep", "trpo", *TINY, "--sweep", "max-kl=0.01,0.02", "--logger", "wandb"]
    assert "pip install 'jaxrl[wandb]'" in error_line(capsys, sweep)


def test_a_run_logged_to_wandb_offline_holds_its_csvs_and_resumes_the_same_run(
    jaxrl, tmp_path, offline_wandb
):
    run_dir = tmp_path / "run"
    first = jaxrl(*TRPO_RUN, "--run-dir", run_dir, "--logger", "wandb", "--stop-after-periods", "2")
    first.check()
    assert not (run_dir / "tensorboard").exists()  # --logger wandb alone
    assert "TensorBoard:" not in first.stdout
    run_id = (run_dir / "wandb_id").read_text().strip()
    assert f"W&B:            run {run_id}" in first.stdout
    jaxrl("train", "trpo", "--resume", run_dir, "--logger", "tensorboard,wandb").check()
    assert (run_dir / "tensorboard" / "seed_1").is_dir()
    runs = offline_runs(run_dir / "wandb")
    assert len(runs) == 2 and {run.run_id for run in runs} == {run_id}  # one wandb run
    assert runs[0].group == ""
    assert_history_is_the_csvs(run_dir, runs)
    assert max(row["env_steps"] for row in runs[0].history) == 256  # stopped after period 2
    config = json.loads((run_dir / "config.json").read_text())
    assert {k: v for k, v in runs[-1].config.items() if k != "_wandb"} == config
    final = json.loads((run_dir / "final_eval.json").read_text())
    summary = runs[-1].summary
    assert summary["final_eval/env_steps"] == final["env_steps"] == 512
    assert summary["final_eval/deterministic_mean"] == pytest.approx(
        np.mean(final["deterministic"]), rel=1e-12
    )
    curve = [row for row in runs[-1].history if "learning_curve/_type" in row]
    assert len(curve) == 1 and curve[0]["learning_curve/_type"] == "image-file"
    assert curve[0]["env_steps"] == 512
    assert runs[0].summary["learning_curve/_type"] == "image-file"  # the stopped call's too


def test_a_sweep_groups_its_settings_in_wandb(jaxrl, tmp_path, offline_wandb):
    sweep_dir = tmp_path / "max-kl-study"
    grid = ["--sweep", "max-kl=0.005,0.02"]
    budget = ["--total-steps", "256"]
    sweep = ["sweep", "trpo", *TINY, *budget, *grid, "--sweep-dir", sweep_dir]
    jaxrl(*sweep, "--logger", "wandb").check()
    run_dirs = sorted((sweep_dir / "runs").iterdir())
    assert len(run_dirs) == 2
    ids = set()
    for run_dir in run_dirs:
        (run,) = offline_runs(run_dir / "wandb")
        assert run.group == "max-kl-study"
        assert run.run_id == (run_dir / "wandb_id").read_text().strip()
        assert run.config["hyperparameters"]["max_kl"] in (0.005, 0.02)
        assert_history_is_the_csvs(run_dir, [run])
        ids.add(run.run_id)
    assert len(ids) == 2


def test_a_tuning_study_groups_its_trials_in_wandb(jaxrl, tmp_path, offline_wandb):
    tune_dir = tmp_path / "kl-study"
    search = ["--search", "max-kl=0.002:0.05:log", "--trials", "2", "--batch", "2"]
    jaxrl("tune", "trpo", *TINY, "--total-steps", "256", *search, "--tune-dir", tune_dir,
          "--logger", "wandb").check()  # fmt: skip
    trial_dirs = sorted((tune_dir / "trials").iterdir())
    assert len(trial_dirs) == 2
    for trial_dir in trial_dirs:
        (run,) = offline_runs(trial_dir / "wandb")
        assert run.group == "kl-study"
        assert run.run_id == (trial_dir / "wandb_id").read_text().strip()
        assert_history_is_the_csvs(trial_dir, [run])


def test_wandb_refusing_to_start_is_one_line_and_the_run_resumable(capsys, tmp_path, monkeypatch):
    import wandb

    def not_logged_in(**kwargs: object) -> None:
        raise wandb.errors.UsageError("No API key configured. Use `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", not_logged_in)
    run_dir = tmp_path / "r"
    line = error_line(capsys, [*TRPO_RUN, "--run-dir", str(run_dir), "--logger", "wandb"])
    assert line == (
        "jaxrl: error: --logger wandb: No API key configured. Use `wandb login` to log in "
        "(or log offline: WANDB_MODE=offline); the run directory stays: continue with "
        f"jaxrl train trpo --resume {run_dir}"
    )
    assert (run_dir / "config.json").is_file()


def test_wandb_refusing_to_start_speaks_to_python_callers_and_to_a_sweep(
    capsys, tmp_path, monkeypatch
):
    """A Python caller is told what wandb said and no command-line flag; the command line,
    a sweep's included, names ``--logger``."""
    import wandb

    from jaxrl.runs.run_dir import RunDir
    from jaxrl.runs.tracking import MISSING_WANDB, WandbTracker

    def not_logged_in(**kwargs: object) -> None:
        raise wandb.errors.UsageError("No API key configured.")

    monkeypatch.setattr(wandb, "init", not_logged_in)
    run_dir = RunDir.create(tmp_path / "r")
    run_dir.config.write_text("{}")
    with pytest.raises(TrackingError) as refused:
        WandbTracker(run_dir)
    assert str(refused.value) == (
        "wandb: No API key configured (or log offline: WANDB_MODE=offline)"
    )
    assert "--" not in MISSING_WANDB
    sweep = ["sweep", "trpo", *TINY, "--total-steps", "128", "--sweep", "max-kl=0.01,0.02"]
    from jaxrl import cli

    assert cli.main([*sweep, "--sweep-dir", str(tmp_path / "s"), "--logger", "wandb"]) == 2
    last = capsys.readouterr().err.splitlines()[-1]  # after the sweep's header
    assert last.startswith("jaxrl: error: --logger wandb: No API key configured"), last

"""A run does what its command asks, or says before training what it does instead: short
budgets on both presets' drivers, budgets that are not whole collections, and an interval
that does not divide the run (the rule: :class:`jaxrl.config.settings.RunLayout`)."""

from __future__ import annotations

import csv
import json

import pytest


def _evals(run_dir):
    with open(run_dir / "evals.csv") as file:
        rows = list(csv.DictReader(file))
    return sorted({int(r["env_steps"]) for r in rows}), rows


def _updates_per_seed(run_dir):
    with open(run_dir / "updates.csv") as file:
        rows = [r for r in csv.DictReader(file) if r["seed"] == "0"]
    return [int(r["env_steps"]) for r in rows]


@pytest.mark.slow
def test_a_short_mujoco_run_trains_its_whole_budget(tmp_path, jaxrl):
    """The command of the issue: 2 seeds x 32,768 env steps of TRPO on Hopper with the
    mujoco preset (whose evaluation interval is 25,600) train all 32,768 steps, evaluate
    11 times (the interval adapts to about a tenth of the budget) and record it."""
    pytest.importorskip("mujoco")
    run_dir = tmp_path / "hopper"
    result = jaxrl(
        "train",
        "trpo",
        "--env",
        "Hopper-v5",
        "--num-seeds",
        "2",
        "--total-steps",
        "32768",
        "--eval-episodes",
        "1",
        "--run-dir",
        run_dir,
    )
    result.check()
    counts = json.loads((run_dir / "config.json").read_text())["counts"]
    assert counts["env_steps"] == 32_768 and counts["evaluations"] == 11
    steps, rows = _evals(run_dir)
    assert steps[0] == 0 and steps[-1] == 32_768 and len(steps) == 12
    assert len(rows) == 2 * 12  # both seeds at every evaluation
    assert steps == [0, *counts["eval_env_steps"]]
    assert _updates_per_seed(run_dir) == [1024 * (i + 1) for i in range(32)]
    assert "Finished TRPO on Hopper-v5: 2 seeds x 32,768 env steps" in result.stdout
    # And it learns: the initial policy falls at once (evaluations 9-32 on 8 seeds), the final
    # policy stands longer (deterministic 212-263 on 8 seeds, seeds 0-7 of this command).
    initial = [float(r["eval_return"]) for r in rows if r["env_steps"] == "0"]
    final = json.loads((run_dir / "final_eval.json").read_text())["deterministic"]
    assert max(initial) < 100 and min(final) >= 150, (initial, final)
    assert "the last period 2 collections" in result.stderr  # said before training


@pytest.mark.slow
def test_a_budget_of_no_whole_collections_is_said_before_training(tmp_path, jaxrl):
    """The pendulum preset collects 16 x 512 env steps: 20,000 steps are 2 collections
    (16,384 env steps), which the command says before it trains; the interval adapts so
    that both collections are evaluated."""
    run_dir = tmp_path / "pendulum"
    result = jaxrl(
        "train",
        "trpo",
        "--env",
        "Pendulum-v1",
        "--num-seeds",
        "1",
        "--total-steps",
        "20000",
        "--eval-episodes",
        "1",
        "--checkpoint-every",
        "0",
        "--run-dir",
        run_dir,
    )
    result.check()
    note = (
        "Note: --total-steps 20,000 is not a whole number of collections (--num-envs x "
        "--num-steps = 8,192 env steps): the run takes 16,384 env steps per seed."
    )
    assert note in result.stderr
    assert result.stderr.index(note) < result.stderr.index("2 collections of 16 x 512 env steps")
    steps, _ = _evals(run_dir)
    assert steps == [0, 8192, 16_384]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["run"]["total_steps"] == 20_000  # what was asked
    assert config["counts"]["env_steps"] == 16_384  # what ran

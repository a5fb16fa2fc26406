"""``benchmarks/swing.py``: each seed's share of evaluations below half its best so far and its
swing between consecutive evaluations, against a plain loop; run directories and the table's
rows give the same figures."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import swing


def _plain(steps: list[int], returns: list[float], low: float, high: float) -> tuple:
    best, below, window = -np.inf, 0, []
    for step, value in zip(steps, returns, strict=True):
        best = max(best, value)
        if low < step <= high:
            window.append(value)
            below += value < best / 2
    changes = [abs(b - a) for a, b in itertools.pairwise(window)]
    mean = sum(window) / len(window)
    return mean, below / len(window), sum(changes) / len(changes) / mean


def test_a_seed_s_figures_equal_a_plain_loop():
    rng = np.random.default_rng(0)
    steps = list(range(5000, 100_001, 5000))
    returns = list(rng.uniform(10.0, 3000.0, len(steps)))
    got = swing.seed_swing(np.asarray(steps), np.asarray(returns), 30_000, 80_000)
    mean, below, change = _plain(steps, returns, 30_000, 80_000)
    assert got["evaluations"] == 10
    assert got["mean"] == pytest.approx(mean)
    assert got["below_half"] == pytest.approx(below)
    assert got["swing"] == pytest.approx(change)
    empty = swing.seed_swing(np.asarray(steps), np.asarray(returns), 100_000, 200_000)
    assert empty == {"evaluations": 0, "mean": None, "below_half": None, "swing": None}
    negative = swing.seed_swing(np.asarray(steps), -np.asarray(returns), 30_000, 80_000)
    assert negative["below_half"] is None and negative["swing"] == pytest.approx(change)


def test_table_rows_and_run_directories_give_the_same_figures(tmp_path, capsys):
    curves = {0: [100.0, 900.0, 300.0, 1000.0, 200.0], 1: [50.0, 60.0, 70.0, 80.0, 90.0]}
    steps = [1000, 2000, 3000, 4000, 5000]
    rows = [
        {"algo": "ddpg", "env": "Hopper-v5", "seed": seed, "env_steps": 5000, "eval_episodes": 10,
         "eval_env_steps": steps, "eval_return": values, "final_return": values[-1]}
        for seed, values in curves.items()
    ]  # fmt: skip
    table = tmp_path / "table.jsonl"
    table.write_text("".join(json.dumps(row) + "\n" for row in rows))
    swing.main(["--table", str(table), "--algo", "ddpg", "--window", "1000", "5000", "--json"])
    (from_table,) = json.loads(capsys.readouterr().out)
    # Seed 0 after its first evaluation: 900 (best 900), 300 (< 450), 1000, 200 (< 500).
    assert from_table["seeds"][0]["below_half"] == 0.5
    assert from_table["seeds"][1]["below_half"] == 0.0
    assert from_table["below_half"] == [0.25, 0.25]
    assert not Path(from_table["run_dir"]).exists()  # the table's runs: a temporary directory
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"algo": "ddpg", "env": "Hopper-v5"}))
    (run_dir / "evals.csv").write_text(
        "seed,period,env_steps,eval_return,wall_time\n"
        + "".join(
            f"{s},{p},{steps[p]},{v}," + "\n" for s, c in curves.items() for p, v in enumerate(c)
        )
    )
    swing.main([str(run_dir), "--window", "1000", "5000", "--json"])
    (from_run,) = json.loads(capsys.readouterr().out)
    assert from_run["seeds"] == from_table["seeds"]
    swing.main([str(run_dir), "--window", "1000", "5000"])
    assert "| 25% +- 25% |" in capsys.readouterr().out

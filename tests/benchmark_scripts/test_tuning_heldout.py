"""``benchmarks/tuning/heldout.py`` gathers real held-out runs of a preset file (tiny TRPO
runs on Pendulum, trained by ``jaxrl train --preset-file``) into the result file the MuJoCo
table reads, and refuses runs that did not train what the preset file says."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH / "tuning"))
sys.path.insert(0, str(BENCH))

import heldout  # noqa: E402
import mujoco_table_page  # noqa: E402

from jaxrl import cli  # noqa: E402
from jaxrl.runs import read_csv  # noqa: E402

BEST = {
    "algo": "trpo",
    "env": "Pendulum-v1",
    "preset": "pendulum",
    "hyperparameters": {"max_kl": 0.02, "gae_lambda": 0.9},
    "run": {"num_steps": 16},
    "search_seeds": [1000, 1001],
    "provenance": {"study": "trpo-Pendulum-v1", "trial": 3},
}
TINY = ["--num-envs", "2", "--total-steps", "96", "--eval-every", "32", "--eval-episodes", "1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The preset file and two held-out runs of it: seeds 0-1 and seed 2."""
    root = tmp_path_factory.mktemp("heldout")
    best = root / "best.json"
    best.write_text(json.dumps(BEST))
    run_dirs = []
    for seed, count in ((0, 2), (2, 1)):
        run_dir = root / f"seed{seed}"
        argv = ["train", "trpo", "--preset-file", str(best), *TINY, "--hidden-sizes", "8"]
        argv += ["--seed", str(seed), "--num-seeds", str(count), "--run-dir", str(run_dir)]
        assert cli.main(argv) == 0
        run_dirs.append(run_dir)
    return best, run_dirs


def test_held_out_runs_are_gathered_seed_by_seed_as_the_table_reads_them(runs, tmp_path):
    best, run_dirs = runs
    out = tmp_path / "tuned_heldout_trpo_pendulum.json"
    argv = [*map(str, run_dirs), "--best", str(best), "--out", str(out)]
    assert heldout.main([*argv, "--command", "jaxrl train ...", "--machine", "here"]) == 0
    result = json.loads(out.read_text())
    assert result["task"] == "Pendulum-v1" and (result["study"], result["trial"]) == (
        "trpo-Pendulum-v1",
        3,
    )
    assert result["seeds"] == [0, 1, 2]
    assert result["preset"] == {k: BEST[k] for k in ("preset", "hyperparameters", "run")}
    assert result["env_steps_per_seed"] == 96 and result["eval_episodes"] == 1
    assert (result["command"], result["machine"]) == ("jaxrl train ...", "here")
    finals = [json.loads((d / "final_eval.json").read_text()) for d in run_dirs]
    assert result["final_deterministic"] == finals[0]["deterministic"] + finals[1]["deterministic"]
    assert result["final_stochastic"] == finals[0]["stochastic"] + finals[1]["stochastic"]
    # evaluations: env steps -> the seeds' returns in seed order, each run's evals.csv
    tables = [read_csv(d / "evals.csv") for d in run_dirs]
    assert sorted(map(int, result["evaluations"])) == sorted(set(tables[0]["env_steps"]))
    for steps, returns in result["evaluations"].items():
        expected = []
        for table in tables:
            at = table["env_steps"] == int(steps)
            expected += list(table["eval_return"][at][np.argsort(table["seed"][at])])
        assert returns == expected
    # The table's tuned column reads it: Tianshou's statistic and the final policy.
    tuned = mujoco_table_page.tuned_result("Pendulum", tmp_path)
    curves = np.array([result["evaluations"][s] for s in sorted(result["evaluations"], key=int)])
    assert tuned.seeds == 3 and tuned.max_of_mean == pytest.approx(curves.mean(axis=1).max())
    assert tuned.final_mean == pytest.approx(np.mean(result["final_deterministic"]))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"hyperparameters": {"max_kl": 0.03, "gae_lambda": 0.9}}, "['max_kl']"),
        ({"run": {"num_steps": 32}}, "['num_steps']"),
        ({"env": "Hopper-v5"}, "trained env 'Pendulum-v1'"),
        ({"search_seeds": [2]}, "seed 2 is one of the search's seeds"),
    ],
)
def test_runs_that_did_not_train_the_preset_file_are_refused_by_name(
    runs, tmp_path, capsys, change, named
):
    _, run_dirs = runs
    best = tmp_path / "best.json"
    best.write_text(json.dumps({**BEST, **change}))
    argv = [*map(str, run_dirs), "--best", str(best), "--out", str(tmp_path / "out.json")]
    assert heldout.main([*argv, "--command", "c", "--machine", "m"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("heldout.py: ") and named in error
    assert not (tmp_path / "out.json").exists()


def test_a_seed_in_two_runs_and_an_unfinished_run_are_refused(runs, tmp_path):
    best, run_dirs = runs
    with pytest.raises(ValueError, match="seed 2 is in another run directory too"):
        heldout.gather(json.loads(best.read_text()), [run_dirs[1], run_dirs[1]])
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.json").write_text((run_dirs[1] / "config.json").read_text())
    with pytest.raises(ValueError, match=r"no final_eval\.json"):
        heldout.gather(json.loads(best.read_text()), [unfinished])

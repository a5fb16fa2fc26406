"""``jaxrl train`` on a Brax environment (``--env brax:NAME``), run as a subprocess: several
seeds in one jitted program, learning, and an interrupted run resumed exactly."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("brax")

from jaxrl.io import RunConfig, load_run, read_csv

from .helpers import leaves_equal, single_error_line

# Tianshou's MuJoCo settings (the preset brax:inverted_pendulum gets) on Brax's cheapest
# physics, 3 evaluation periods of 8 updates of 16 envs x 64 steps, 2 seeds.
RUN = [
    *("train", "trpo", "--env", "brax:inverted_pendulum", "--brax-backend", "positional"),
    *("--total-steps", "24576", "--eval-every", "8192", "--eval-episodes", "4"),
    *("--num-seeds", "2", "--checkpoint-every", "1"),
]


@pytest.mark.slow
def test_brax_run_learns_and_resumes_exactly(jaxrl, tmp_path):
    reference = tmp_path / "uninterrupted"
    result = jaxrl(*RUN, "--run-dir", reference).check()
    assert "TRPO on brax:inverted_pendulum: 2 seeds in one jitted program" in result.stderr
    config = RunConfig.load(reference / "config.json")
    assert (config.backend, config.brax_backend, config.preset) == ("jax", "positional", "mujoco")

    # Learning: a random policy balances the pole for ~20 steps; within 24,576 env steps each
    # seed's deterministic policy balances it for hundreds (1000 is the time limit).
    evals = read_csv(reference / "evals.csv")
    returns = evals["eval_return"].reshape(-1, 2)  # [period, seed]
    assert np.all(returns[0] < 50), returns[0]
    assert np.all(returns[1:].max(axis=0) >= 300), returns
    assert not np.array_equal(returns[:, 0], returns[:, 1])  # the seeds differ
    final = json.loads((reference / "final_eval.json").read_text())
    assert np.mean(final["deterministic"]) > 5 * np.mean(returns[0])

    # A run killed after its second checkpoint (a copy without the last one; the store keeps
    # two), resumed: the same run, bit for bit (Brax's physics state is in the carry).
    run_dir = tmp_path / "interrupted"
    shutil.copytree(reference, run_dir)
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "3"]
    shutil.rmtree(run_dir / "checkpoints" / "3")
    resumed = jaxrl("train", "trpo", "--resume", run_dir).check()
    assert "resuming at period 2/3" in resumed.stderr
    assert leaves_equal(load_run(reference).carry, load_run(run_dir).carry)
    got = read_csv(run_dir / "evals.csv")
    np.testing.assert_array_equal(got["eval_return"], evals["eval_return"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--env", "brax:hoper"],
            "unknown Brax environment 'brax:hoper' (did you mean brax:hopper",
        ),
        (["--env", "brax:hopper", "--backend", "gymnasium"], "runs in the jitted driver"),
        (["--env", "Pendulum-v1", "--brax-backend", "mjx"], "--brax-backend is for Brax"),
        (["--env", "brax:hopper", "--brax-backend", "physx"], "invalid value 'physx'"),
    ],
    ids=["name", "host-driver", "not-brax", "backend"],
)
def test_bad_brax_arguments_give_one_line(jaxrl, tmp_path, argv, expected):
    line = single_error_line(jaxrl("train", "trpo", *argv, cwd=tmp_path))
    assert expected in line
    assert not any(tmp_path.iterdir()), "a rejected command created files"

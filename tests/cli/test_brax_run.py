"""``jaxrl train`` on a Brax environment (``--env brax:NAME``): the
configuration it records, several seeds in one jitted program, and an interrupted run resumed
exactly. Brax's physics-free test environment ``fast`` keeps compilation short; learning on
real physics is tested in ``tests/envs/test_brax_env.py``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("brax")

from jaxrl.config import RunConfig
from jaxrl.runs import load_run, read_csv

from .helpers import TINY, assert_kept_checkpoints, error_line, leaves_equal

# 4 evaluation periods of one update of 4 envs x 32 steps, 2 seeds, checkpoints every period.
RUN = [
    *("train", "trpo", "--env", "brax:fast", "--brax-backend", "positional", *TINY),
    *("--total-steps", "512", "--checkpoint-every", "1"),
]


@pytest.mark.slow
def test_brax_run_records_its_backend_and_resumes_exactly(jaxrl, tmp_path):
    reference = tmp_path / "uninterrupted"
    result = jaxrl(*RUN, "--run-dir", reference).check()
    assert "TRPO on brax:fast: 2 seeds in one jitted program" in result.stderr
    config = RunConfig.load(reference / "config.json")
    assert (config.backend, config.brax_backend) == ("jax", "positional")
    returns = read_csv(reference / "evals.csv")["eval_return"].reshape(-1, 2)  # [period, seed]
    assert returns.shape == (5, 2) and np.all(np.isfinite(returns))
    assert not np.array_equal(returns[:, 0], returns[:, 1])  # the seeds differ
    final = json.loads((reference / "final_eval.json").read_text())
    assert len(final["deterministic"]) == 2

    # A run killed after its third checkpoint (a copy without the last one; the store keeps
    # two, and the best-evaluated), resumed: the same run, bit for bit (Brax's physics state
    # is in the carry).
    run_dir = tmp_path / "interrupted"
    shutil.copytree(reference, run_dir)
    assert_kept_checkpoints(run_dir, [3, 4])
    shutil.rmtree(run_dir / "checkpoints" / "4")
    resumed = jaxrl("train", "trpo", "--resume", run_dir).check()
    assert "resuming at period 3/4" in resumed.stderr
    assert leaves_equal(load_run(reference).carry, load_run(run_dir).carry)
    got = read_csv(run_dir / "evals.csv")["eval_return"].reshape(-1, 2)
    np.testing.assert_array_equal(got, returns)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--env", "brax:hoper"],
            "--env: unknown Brax environment 'brax:hoper' (did you mean brax:hopper",
        ),
        (["--env", "brax:hopper", "--backend", "gymnasium"], "--backend: brax:hopper is a Brax"),
        (["--env", "Pendulum-v1", "--brax-backend", "mjx"], "--brax-backend is for Brax"),
        (["--env", "brax:hopper", "--brax-backend", "physx"], "invalid value 'physx'"),
        (
            ["--env", "brax:hopper", "--solver-iterations", "1"],
            "--solver-iterations sets MJX's solver (--env brax:NAME --brax-backend mjx), not "
            "--brax-backend generalized's",
        ),
        (
            ["--env", "Pendulum-v1", "--solver", "newton"],
            "--solver sets MJX's solver (--env brax:NAME --brax-backend mjx), not Pendulum-v1's",
        ),
        (
            ["--env", "brax:hopper", "--brax-backend", "mjx", "--solver-ls-iterations", "0"],
            "--solver-ls-iterations must be a positive integer or None, got 0",
        ),
    ],
    ids=["name", "host-driver", "not-brax", "backend", "solver-physics", "solver-env", "ls"],
)
def test_bad_brax_arguments_are_one_line(capsys, tmp_path, monkeypatch, argv, expected):
    """In process, as tests/cli/test_parts.py checks the others."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "cache"))
    assert expected in error_line(capsys, ["train", "trpo", *argv])
    assert not (tmp_path / "runs").exists(), "a rejected command created a run"

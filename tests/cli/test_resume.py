"""The ``jaxrl`` command: interrupted runs resumed from their checkpoints."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jax
import numpy as np

from jaxrl.runs import CheckpointStore, evaluate_policy, load, load_run, read_csv

from .helpers import TRPO_RUN, assert_kept_checkpoints, leaves_equal


def test_resumed_run_equals_the_uninterrupted_run(trpo_run, jaxrl, tmp_path):
    reference, _ = trpo_run
    run_dir = tmp_path / "interrupted"
    stopped = jaxrl(*TRPO_RUN, "--run-dir", run_dir, "--stop-after-periods", "3").check()
    assert "Stopped TRPO" in stopped.stdout and f"--resume {run_dir}" in stopped.stdout
    checkpoints = run_dir / "checkpoints"
    assert CheckpointStore(checkpoints).steps() == [2]  # period 3 ran after the checkpoint
    assert 384 in read_csv(run_dir / "evals.csv")["env_steps"]

    # An interrupted save leaves a temporary directory; a non-atomic file system could leave
    # an unmarked step directory. Neither counts as a checkpoint.
    (checkpoints / "3.orbax-checkpoint-tmp-1234567" / "tree").mkdir(parents=True)
    (checkpoints / "3.orbax-checkpoint-tmp-1234567" / "tree" / "junk").write_text("partial")
    (checkpoints / "9" / "tree").mkdir(parents=True)
    assert CheckpointStore(checkpoints).latest_step() == 2

    resumed = jaxrl("train", "--resume", run_dir).check()  # the algorithm: the run's
    assert "resuming at period 2/4 (256 env steps)" in resumed.stderr
    assert "Finished TRPO" in resumed.stdout
    assert_kept_checkpoints(run_dir, [2, 4])
    assert not (checkpoints / "9").exists()
    assert not list(checkpoints.glob("*orbax-checkpoint-tmp*"))

    # Same final carry (parameters, optimizer state, env states, key), bit for bit.
    expected, got = load_run(reference), load_run(run_dir)
    assert leaves_equal(expected.carry, got.carry)
    # The metrics were rewritten from the checkpoint on: same rows as the uninterrupted run.
    for name in ("updates.csv", "evals.csv"):
        a, b = read_csv(reference / name), read_csv(run_dir / name)
        for column in a:
            if column != "wall_time":
                np.testing.assert_array_equal(a[column], b[column], err_msg=column)


def test_gymnasium_run_resumes_its_agent_state_and_replay_buffer(jaxrl, tmp_path):
    """DDPG on gymnasium's Pendulum (the host driver), interrupted and resumed."""
    run_dir = tmp_path / "gym"
    args = ["train", "ddpg", "--env", "Pendulum-v1", "--backend", "gymnasium"]
    args += ["--num-envs", "2", "--num-steps", "4", "--total-steps", "64", "--eval-every", "16"]
    args += ["--eval-episodes", "1", "--hidden-sizes", "8", "--buffer-size", "64"]
    args += ["--batch-size", "8", "--update-per-step", "0.25"]
    stopped = jaxrl(*args, "--run-dir", run_dir, "--stop-after-periods", "2").check()
    assert "Stopped DDPG on Pendulum-v1: 1 seed x 32 env steps (period 2/4)" in stopped.stdout
    resumed = jaxrl("train", "ddpg", "--resume", run_dir).check()
    assert "Finished DDPG on Pendulum-v1: 1 seed x 64 env steps (period 4/4)" in resumed.stdout
    assert read_csv(run_dir / "evals.csv")["env_steps"].tolist() == [0, 16, 32, 48, 64]
    updates = read_csv(run_dir / "updates.csv")
    assert updates["update"].tolist() == list(range(1, 9))
    assert updates["period"].tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    loaded = load_run(run_dir)
    assert loaded.config.backend == "gymnasium"
    # 8 collections with 2 gradient steps each, half before the interruption: the agent state
    # was restored, not initialized afresh (states have a leading seed axis, as on JAX runs).
    assert int(loaded.state.num_updates[0]) == 16
    # Host checkpoints hold the driver's carry: the replay buffer was restored too, so it
    # holds the transitions of both processes (32 steps of each of the 2 envs), not only the
    # resumed half (16).
    np.testing.assert_array_equal(np.asarray(loaded.carry.buffer.size), [32])


def test_a_resumed_host_run_does_not_warm_up_again(jaxrl, tmp_path):
    """DDPG's random warm-up (``--warmup-steps``, Tianshou's ``start_timesteps``) is the
    first env steps of the run, not of each process: resumed at 32 env steps after a 24-step
    warm-up, the run updates from its first resumed collection. 8 collections of 8 steps, 2
    updates each from the one that starts at 24: 5 x 2 = 10, as uninterrupted (a resumed run
    that counted from 0 again would skip 3 more collections' updates: 4)."""
    args = ["train", "ddpg", "--env", "Pendulum-v1", "--backend", "gymnasium"]
    args += ["--num-envs", "2", "--num-steps", "4", "--total-steps", "64", "--eval-every", "16"]
    args += ["--eval-episodes", "1", "--hidden-sizes", "8", "--buffer-size", "64"]
    args += ["--batch-size", "8", "--update-per-step", "0.25", "--warmup-steps", "24"]
    whole = tmp_path / "whole"
    jaxrl(*args, "--run-dir", whole).check()
    run_dir = tmp_path / "resumed"
    jaxrl(*args, "--run-dir", run_dir, "--stop-after-periods", "2").check()
    assert int(load_run(run_dir).state.num_updates[0]) == 2
    jaxrl("train", "ddpg", "--resume", run_dir).check()
    assert int(load_run(whole).state.num_updates[0]) == 10
    assert int(load_run(run_dir).state.num_updates[0]) == 10
    assert read_csv(run_dir / "evals.csv")["env_steps"].tolist() == [0, 16, 32, 48, 64]
    # The first period is all warm-up, without losses; updates.csv still has them, empty
    # for the 3 warm-up collections.
    for directory in (whole, run_dir):
        updates = read_csv(directory / "updates.csv")
        for name in ("actor_loss", "critic_loss"):
            warm_up, learning = updates[name][:3], updates[name][3:]
            assert np.isnan(warm_up).all() and np.isfinite(learning).all(), (directory, name)
            assert len(learning) == 5


def test_a_run_directory_written_by_an_earlier_jaxrl_resumes_and_evaluates_as_it_did(
    jaxrl, tmp_path
):
    """tests/fixtures/old_run: a run stopped after period 2 by jaxrl before its package was
    cut by job, and what that code wrote and evaluated at the end of the same run."""
    fixture = Path(__file__).parents[1] / "fixtures" / "old_run"
    finished = fixture / "finished"
    expected = json.loads((finished / "evaluate_run.json").read_text())
    run_dir = tmp_path / "stopped"
    shutil.copytree(fixture / "stopped", run_dir)
    assert leaves_digest(load_run(run_dir, 2).carry) == expected["checkpoint_sha256"]

    resumed = jaxrl("train", "--resume", run_dir).check()  # the algorithm: the run's
    assert "resuming at period 2/4 (256 env steps)" in resumed.stderr
    for name in ("updates.csv", "evals.csv"):
        a, b = read_csv(finished / name), read_csv(run_dir / name)
        assert list(a) == list(b), name
        rtol = TRAINED_HERE_RTOL if name == "evals.csv" else RTOL
        for column in set(a) - {"wall_time"}:
            assert_as_written(a[column], b[column], f"{name}: {column}", rtol)
    written = json.loads((finished / "final_eval.json").read_text())
    got = json.loads((run_dir / "final_eval.json").read_text())
    assert set(written) == set(got)
    for key in written:
        assert_as_written(np.asarray(written[key]), np.asarray(got[key]), key, TRAINED_HERE_RTOL)

    for step, returns in expected["returns_by_step"].items():
        policy = load(run_dir, seed=None, checkpoint="last" if step == "final" else int(step))
        got = evaluate_policy(policy, expected["episodes"], expected["seed"])
        as_written = np.array([float.fromhex(x) for x in returns])
        rtol = TRAINED_HERE_RTOL if step == "final" else RTOL
        assert_as_written(as_written, np.asarray(got, np.float64), f"evaluate_run {step}", rtol)


# Floats as written to 1e-4 relative: the update statistics of the resumed periods, and the
# evaluations of policies the fixture holds. Evaluation returns of policies trained here, after
# the resume, to 1e-3: Pendulum's episodes amplify rounding, and XLA compiles for the CPU at
# hand (tests/fixtures/old_run/README.md: bit for bit on the CPU that wrote the fixture, 1.3e-4
# apart on another). A resume that restores the wrong state moves the update statistics by
# 0.3% or more: a changed key, a reset Adam state or reset return statistics, each tried.
RTOL, TRAINED_HERE_RTOL = 1e-4, 1e-3


def assert_as_written(written: np.ndarray, got: np.ndarray, what: str, rtol: float) -> None:
    """Integers exactly; floats to ``rtol`` relative."""
    if np.issubdtype(np.asarray(written).dtype, np.floating):
        np.testing.assert_allclose(got, written, rtol=rtol, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, written, err_msg=what)


def leaves_digest(tree: object) -> str:
    """SHA-256 of a pytree's leaves in order: dtype, shape and bytes (typed keys as data)."""
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(tree):
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        array = np.asarray(leaf)
        digest.update(str(array.dtype).encode() + str(array.shape).encode() + array.tobytes())
    return digest.hexdigest()

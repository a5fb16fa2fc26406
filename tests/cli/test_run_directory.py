"""The ``jaxrl`` command: a run's directory (config, CSV, TensorBoard,
plot, checkpoints), ``jaxrl evaluate`` and ``jaxrl plot``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl.config import RunConfig
from jaxrl.runs import load_run, read_csv
from jaxrl.runs.metrics import EVAL_COLUMNS, UPDATE_COLUMNS

from .helpers import assert_kept_checkpoints, tensorboard_scalars


def read_png(path: Path) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(path)


def test_train_writes_a_complete_run_directory(trpo_run):
    run_dir, result = trpo_run
    result.check()
    assert f"Learning curve: {run_dir / 'learning_curve.png'}" in result.stdout
    assert f"Checkpoint:     {run_dir / 'checkpoints' / '4'}" in result.stdout
    assert "Finished TRPO on Pendulum-v1: 2 seeds x 512 env steps" in result.stdout

    # config.json: the resolved configuration, round-tripping through RunConfig.
    saved = json.loads((run_dir / "config.json").read_text())
    config = RunConfig.load(run_dir / "config.json")
    assert config.to_dict() == saved
    assert RunConfig.from_dict(saved) == config
    assert (config.algo, config.env, config.backend, config.num_seeds) == (
        "trpo",
        "Pendulum-v1",
        "jax",
        2,
    )
    # The pendulum preset gives the defaults; the command line overrode the net.
    hyper = saved["hyperparameters"]
    assert saved["preset"] == "pendulum" and saved["run"]["normalize_obs"] is True
    assert (hyper["max_kl"], hyper["gamma"], hyper["repeat"], hyper["return_scaling"]) == (
        0.01,
        0.95,
        1,
        True,
    )
    assert hyper["hidden_sizes"] == [8]
    assert config.make_agent().hidden_sizes == (8,)

    # CSVs: one row per seed and update / evaluation.
    updates = read_csv(run_dir / "updates.csv")
    header = (run_dir / "updates.csv").read_text().splitlines()[0].split(",")
    assert tuple(header[: len(UPDATE_COLUMNS)]) == UPDATE_COLUMNS
    assert {"actor_loss", "critic_loss", "kl", "step_size"} <= set(header)
    assert len(updates["seed"]) == 2 * 4
    assert sorted(set(updates["update"])) == [1, 2, 3, 4]
    assert np.isfinite(updates["kl"]).all()
    evals = read_csv(run_dir / "evals.csv")
    eval_header = (run_dir / "evals.csv").read_text().splitlines()[0].split(",")
    assert tuple(eval_header) == EVAL_COLUMNS
    # The first evaluation is the initial policy's, at step 0.
    assert sorted(set(evals["env_steps"])) == [0, 128, 256, 384, 512]
    assert sorted(set(evals["seed"])) == [0, 1]
    assert np.isfinite(evals["eval_return"]).all()

    # The learning curve is a readable PNG.
    image = read_png(run_dir / "learning_curve.png")
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300

    # TensorBoard: one run per seed with the evaluation returns against env steps.
    for seed in (0, 1):
        scalars = tensorboard_scalars(run_dir / "tensorboard" / f"seed_{seed}")
        steps = [step for step, _ in scalars["eval/return"]]
        assert steps == [0, 128, 256, 384, 512]
        expected = evals["eval_return"][evals["seed"] == seed]
        np.testing.assert_allclose([v for _, v in scalars["eval/return"]], expected, rtol=1e-6)
        assert "train/kl" in scalars

    # Checkpoints: the newest two periods (and the best-evaluated one), finalized; the final
    # one loads.
    assert_kept_checkpoints(run_dir, [2, 4])
    loaded = load_run(run_dir)
    assert loaded.step == 4 and loaded.metadata["env_steps"] == 512
    assert int(loaded.carry.env_steps[0]) == 512
    kernels = [x for x in jax.tree_util.tree_leaves(loaded.state.actor.params)]
    assert kernels and all(x.shape[0] == 2 and np.isfinite(x).all() for x in kernels)
    assert load_run(run_dir, step=2).metadata["env_steps"] == 256


def test_evaluate_reports_returns_of_the_final_policy(trpo_run, jaxrl):
    run_dir, _ = trpo_run
    result = jaxrl("evaluate", run_dir, "--episodes", "2", "--json").check()
    report = json.loads(result.stdout)
    assert report["checkpoint"] == 4 and report["env_steps"] == 512
    assert len(report["returns"]) == 2 and np.isfinite(report["returns"]).all()
    assert report["mean"] == pytest.approx(np.mean(report["returns"]))


def test_plot_draws_several_runs_in_one_figure(trpo_run, jaxrl, tmp_path):
    run_dir, _ = trpo_run
    other = tmp_path / "other"
    other.mkdir()
    for name in ("config.json", "evals.csv"):
        shutil.copy(run_dir / name, other / name)
    output = tmp_path / "compare.png"
    result = jaxrl("plot", run_dir, other, "-o", output, "--spread", "minmax").check()
    assert str(output) in result.stdout
    assert read_png(output).shape[0] > 200
    single = jaxrl("plot", other).check()
    assert (other / "learning_curve.png").exists(), single.stdout


def test_a_run_another_process_trains_is_refused_naming_it(trpo_run, jaxrl, tmp_path):
    """One process trains a run directory at a time: a second ``--resume`` (a scheduler's
    retry while the first still runs) is refused in one line naming the holder, before it
    writes anything, where the two wrote the same CSV rows and checkpoints and both ended in
    orbax's tracebacks. The claim ends with the training (and with its process)."""
    from jaxrl.runs.run_dir import RunDir, RunDirError

    copy = tmp_path / "run"
    shutil.copytree(trpo_run[0], copy)
    run_dir, before = RunDir(copy), (copy / "config.json").read_text()
    with run_dir.claimed():  # as a first trainer holds it
        held = (copy / ".lock").read_text()
        assert held.startswith("process ") and " since " in held
        with pytest.raises(RunDirError, match="is being trained by process"), run_dir.claimed():
            pass
        result = jaxrl("train", "trpo", "--resume", copy, "--total-steps", "1024")
        assert result.returncode == 2
        assert result.stderr.strip() == (
            f"jaxrl: error: {copy} is being trained by {held}: let it end, or stop it, first"
        )
        assert (copy / "config.json").read_text() == before  # nothing rewritten
    assert (copy / ".lock").read_text() == ""
    jaxrl("train", "trpo", "--resume", copy, "--total-steps", "1024").check()  # free again


def test_a_filesystem_without_locks_trains_unclaimed(tmp_path, monkeypatch):
    """Where ``flock`` fails for want of locks (ENOLCK: some network filesystems), a run
    trains as it did before claims: unheld, not refused."""
    import errno
    import fcntl

    from jaxrl.runs.run_dir import RunDir

    def no_locks(*args: object) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    run_dir = RunDir.create(tmp_path / "r")
    with run_dir.claimed(), run_dir.claimed():  # neither holds it, neither refuses
        assert (tmp_path / "r" / ".lock").read_text().startswith("process ")

"""The ``jaxrl`` command: DDPG with its replay buffer, and bad arguments (one line naming the
problem, exit status 2, no traceback), also from the installed command as a process."""

from __future__ import annotations

import numpy as np
import pytest

from jaxrl.config import RunConfig
from jaxrl.runs import load_run

from .helpers import single_error_line


def test_ddpg_run_checkpoints_its_replay_buffer(jaxrl, tmp_path):
    run_dir = tmp_path / "ddpg"
    args = ["--num-envs", "4", "--num-steps", "2", "--total-steps", "256", "--eval-every", "128"]
    args += ["--eval-episodes", "2", "--buffer-size", "256", "--batch-size", "16"]
    args += ["--hidden-sizes", "8", "--num-seeds", "2", "--exploration-noise", "ou:0.2"]
    result = jaxrl("train", "ddpg", *args, "--run-dir", run_dir).check()
    assert "Finished DDPG on Pendulum-v1" in result.stdout
    header = (run_dir / "updates.csv").read_text().splitlines()[0].split(",")
    assert {"actor_loss", "critic_loss"} <= set(header)
    config = RunConfig.load(run_dir / "config.json")
    assert config.hyperparameters["n_step_return_horizon"] == 3  # Tianshou's DDPG test
    assert config.make_agent().exploration_noise.sigma == pytest.approx(0.2)
    loaded = load_run(run_dir)
    assert type(loaded.state).__name__ == "DDPGState"
    # The replay buffer is part of the checkpointed carry: 32 collections of 2 steps of 4
    # envs, 256 transitions per seed, fill its 256 // 4 = 64 rows exactly (write position
    # back at row 0), every row a real transition (actions are never exactly 0 with noise).
    buffer = loaded.carry.buffer
    assert buffer.data.reward.shape == (2, 64, 4)
    assert np.asarray(buffer.size).tolist() == [64, 64]
    assert np.asarray(buffer.position).tolist() == [0, 0]
    assert np.all(np.isfinite(np.asarray(buffer.data.obs)))
    assert np.all(np.any(np.asarray(buffer.data.action) != 0, axis=-1))
    assert np.asarray(loaded.carry.env_steps).tolist() == [256, 256]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "sac", "--env", "Pendulum-v1"], "unknown algorithm 'sac'"),
        (["train", "trpo", "--env", "NoSuchEnv-v0"], "unknown environment id 'NoSuchEnv-v0'"),
        (["train", "trpo", "--total-steps", "-5"], "--total-steps must be a positive integer"),
        (["train", "trpo", "--max-kll", "0.01"], "--max-kll for jaxrl train trpo; did you mean"),
    ],
    ids=["algorithm", "env", "negative-steps", "hyperparameter"],
)
def test_bad_arguments_give_one_line(jaxrl, tmp_path, argv, expected):
    """More cases in test_parts.py."""
    line = single_error_line(jaxrl(*argv, cwd=tmp_path))
    assert expected in line
    assert not any(tmp_path.iterdir()), "a rejected command created files"


def test_the_installed_command_runs_as_a_process(jaxrl_process, tmp_path):
    """The console script, in a process of its own: exit status 2 and one line."""
    line = single_error_line(jaxrl_process("train", "trpo", "--max-kll", "0.01", cwd=tmp_path))
    assert "--max-kll for jaxrl train trpo; did you mean --max-kl?" in line
    assert not any(tmp_path.iterdir()), "a rejected command created files"

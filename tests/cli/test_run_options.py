"""Run options users rely on: extending a finished run with a larger ``--total-steps``,
``--no-checkpoint-buffer`` (host runs leave DDPG's replay buffer out of checkpoints), and
``jaxrl evaluate --step/--seed``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from jaxrl.runs import CheckpointStore, evaluate_policy, load, load_run, read_csv

from .helpers import Result, assert_kept_checkpoints


def _without_wall_time(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: column for name, column in table.items() if name != "wall_time"}


def test_a_finished_run_extends_to_a_larger_budget(
    trpo_run: tuple[Path, Result], jaxrl: Callable[..., Result], tmp_path: Path
):
    """``--resume`` of a finished run without a larger budget trains nothing and says how
    to extend it; with ``--total-steps 768`` (from 512) it trains periods 5 and 6 from the
    final checkpoint, keeps the first four periods' metrics as they were and continues them."""
    reference, _ = trpo_run
    run_dir = tmp_path / "extended"
    shutil.copytree(reference, run_dir)

    again = jaxrl("train", "trpo", "--resume", run_dir).check()
    assert "has finished all 4 evaluation periods; raise --total-steps" in again.stdout
    assert_kept_checkpoints(run_dir, [2, 4])

    extended = jaxrl("train", "trpo", "--resume", run_dir, "--total-steps", "768").check()
    assert "resuming at period 4/6 (512 env steps)" in extended.stderr
    assert "Finished TRPO on Pendulum-v1: 2 seeds x 768 env steps (period 6/6)" in extended.stdout
    assert_kept_checkpoints(run_dir, [4, 6])
    assert json.loads((run_dir / "config.json").read_text())["run"]["total_steps"] == 768
    final = json.loads((run_dir / "final_eval.json").read_text())
    assert final["env_steps"] == 768

    before = load_run(reference)
    after = load_run(run_dir)
    np.testing.assert_array_equal(np.asarray(before.state.num_updates), [4, 4])
    np.testing.assert_array_equal(np.asarray(after.state.num_updates), [6, 6])
    assert after.metadata["env_steps"] == 768

    for name, rows_before in (("evals.csv", 2 * 5), ("updates.csv", 2 * 4)):
        old = _without_wall_time(read_csv(reference / name))
        new = _without_wall_time(read_csv(run_dir / name))
        for column, values in old.items():  # the finished run's rows, unchanged
            np.testing.assert_array_equal(new[column][:rows_before], values, err_msg=column)
    evals = read_csv(run_dir / "evals.csv")
    for seed in (0, 1):
        steps = evals["env_steps"][evals["seed"] == seed]
        np.testing.assert_array_equal(steps, [0, 128, 256, 384, 512, 640, 768])
    updates = read_csv(run_dir / "updates.csv")
    for seed in (0, 1):
        mine = updates["seed"] == seed
        np.testing.assert_array_equal(updates["update"][mine], np.arange(1, 7))
        np.testing.assert_array_equal(updates["env_steps"][mine], 128 * np.arange(1, 7))


DDPG_HOST = [
    *("train", "ddpg", "--env", "Pendulum-v1", "--backend", "gymnasium"),
    *("--num-envs", "2", "--num-steps", "4", "--total-steps", "64", "--eval-every", "16"),
    *("--eval-episodes", "1", "--hidden-sizes", "8", "--buffer-size", "64"),
    *("--batch-size", "8", "--update-per-step", "0.25", "--checkpoint-every", "1"),
]


def _buffer_leaves(run_dir: Path, step: int) -> list[dict]:
    """The saved leaves of checkpoint ``step`` that belong to the replay buffer."""
    leaves = CheckpointStore(run_dir / "checkpoints").metadata(step)["leaves"]
    assert leaves and all("path" in leaf for leaf in leaves)
    return [leaf for leaf in leaves if ".buffer" in leaf["path"]]


def test_no_checkpoint_buffer_leaves_the_replay_buffer_out(
    jaxrl: Callable[..., Result], tmp_path: Path
):
    """By default a host DDPG checkpoint holds the replay buffer (its observations among
    them: ``buffer_size x obs_dim`` floats per seed, laid out per environment); with
    ``--no-checkpoint-buffer`` it holds none of it, the run loads without one, and it still
    resumes (on a fresh buffer) and finishes."""
    with_buffer = tmp_path / "with"
    jaxrl(*DDPG_HOST, "--run-dir", with_buffer, "--stop-after-periods", "2").check()
    saved = _buffer_leaves(with_buffer, 2)
    assert any(leaf["shape"] == [1, 32, 2, 3] for leaf in saved), saved  # 64 = 32 x 2 envs
    np.testing.assert_array_equal(np.asarray(load_run(with_buffer).carry.buffer.size), [16])

    run_dir = tmp_path / "without"
    args = [*DDPG_HOST, "--no-checkpoint-buffer", "--run-dir", run_dir]
    jaxrl(*args, "--stop-after-periods", "2").check()
    assert json.loads((run_dir / "config.json").read_text())["run"]["checkpoint_buffer"] is False
    assert _buffer_leaves(run_dir, 2) == []
    assert load_run(run_dir).carry.buffer is None
    resumed = jaxrl("train", "ddpg", "--resume", run_dir).check()
    assert "Finished DDPG on Pendulum-v1: 1 seed x 64 env steps (period 4/4)" in resumed.stdout
    assert _buffer_leaves(run_dir, 4) == []
    np.testing.assert_array_equal(np.asarray(load_run(run_dir).state.num_updates), [16])


def _evaluate(jaxrl: Callable[..., Result], run_dir: Path, *args: str) -> dict:
    return json.loads(jaxrl("evaluate", run_dir, "--episodes", "2", "--json", *args).check().stdout)


def test_evaluate_step_and_seed_choose_the_checkpoint_and_the_episodes(
    trpo_run: tuple[Path, Result], jaxrl: Callable[..., Result]
):
    """``--checkpoint 2`` evaluates checkpoint 2 (256 env steps) instead of the newest (4), and
    ``--seed 1`` plays other episodes than the default seed 0: each result is exactly the
    evaluation of that checkpoint's policy with that seed, and the results differ."""
    run_dir, _ = trpo_run
    newest = _evaluate(jaxrl, run_dir)
    earlier = _evaluate(jaxrl, run_dir, "--checkpoint", "2")
    reseeded = _evaluate(jaxrl, run_dir, "--seed", "1")
    assert (newest["checkpoint"], newest["env_steps"]) == (4, 512)
    assert (earlier["checkpoint"], earlier["env_steps"]) == (2, 256)
    assert reseeded["checkpoint"] == 4

    def expected(step: int, seed: int) -> list[float]:
        returns = evaluate_policy(load(run_dir, seed=None, checkpoint=step), 2, seed)
        return [float(r) for r in returns]

    assert newest["returns"] == expected(4, 0)
    assert earlier["returns"] == expected(2, 0)
    assert reseeded["returns"] == expected(4, 1)
    assert newest["returns"] != earlier["returns"]
    assert all(a != b for a, b in zip(newest["returns"], reseeded["returns"], strict=True))

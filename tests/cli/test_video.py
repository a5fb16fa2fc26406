"""Videos of a run's policy: ``jaxrl evaluate RUN_DIR --video FILE`` and ``jaxrl train
--video FILE``, rendered headless (gymnax Pendulum through gymnasium's renderer from the same
states; MuJoCo through EGL), one frame per step, frames that change."""

from __future__ import annotations

import os

import numpy as np
import pytest

from .helpers import TRPO_RUN, single_error_line


def _frames(path) -> list[np.ndarray]:
    import imageio.v2 as imageio

    return [np.asarray(frame) for frame in imageio.get_reader(path)]


def test_a_gymnax_pendulum_policy_is_rendered_one_frame_per_step(jaxrl, trpo_run, tmp_path):
    run_dir, _ = trpo_run
    video = tmp_path / "pendulum.mp4"  # every frame kept (a GIF merges repeated ones)
    result = jaxrl("evaluate", run_dir, "--video", video, "--seed-index", "1").check()
    assert f"Video: {video} (200 frames; seed 1's policy of checkpoint 4" in result.stdout
    frames = _frames(video)
    assert len(frames) == 200  # gymnax Pendulum-v1's episodes are 200 steps
    assert frames[0].shape == (500, 500, 3)
    assert not all(np.array_equal(frames[0], f) for f in frames[1:])  # the pendulum moves


def test_a_mujoco_policy_is_rendered_headless(jaxrl, tmp_path, monkeypatch):
    pytest.importorskip("mujoco")
    monkeypatch.setenv("MUJOCO_GL", os.environ.get("MUJOCO_GL", "egl"))
    run_dir, video = tmp_path / "hopper", tmp_path / "hopper.mp4"
    budget = ["--num-envs", "2", "--num-steps", "64", "--total-steps", "128", "--num-seeds", "1"]
    jaxrl("train", "trpo", "--env", "Hopper-v5", *budget, "--run-dir", run_dir).check()
    result = jaxrl("evaluate", run_dir, "--video", video).check()
    frames = _frames(video)
    assert f"({len(frames)} frames;" in result.stdout
    assert 1 < len(frames) <= 1000 and frames[0].shape == (480, 480, 3)
    assert not all(np.array_equal(frames[0], f) for f in frames[1:])


def test_train_records_the_final_policy(jaxrl, tmp_path):
    video = tmp_path / "final.gif"
    result = jaxrl(*TRPO_RUN, "--run-dir", tmp_path / "run", "--video", video).check()
    assert f"Video: {video} (200 frames; seed 0's policy of checkpoint 4" in result.stdout
    frames = _frames(video)  # a GIF keeps one of repeated frames, with their time
    assert 100 < len(frames) <= 200
    assert not all(np.array_equal(frames[0], f) for f in frames[1:])


def test_bad_video_requests_are_one_line(jaxrl, trpo_run, tmp_path):
    run_dir, _ = trpo_run
    line = single_error_line(jaxrl("evaluate", run_dir, "--video", tmp_path / "v.avi"))
    assert "--video" in line and "write a .gif or an .mp4 file" in line
    line = single_error_line(jaxrl("evaluate", run_dir, "--video", tmp_path / "v.gif",
                                   "--seed-index", "2"))  # fmt: skip
    assert "--seed-index 2: the run has 2 seeds (0-1)" in line
    assert not (tmp_path / "v.gif").exists()

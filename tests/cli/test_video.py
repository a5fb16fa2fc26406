"""Videos of a run's policy: ``jaxrl evaluate RUN_DIR --video FILE`` and ``jaxrl train
--video FILE``, rendered headless (gymnax Pendulum through gymnasium's renderer from the same
states; MuJoCo through EGL), one frame per step, frames that change."""

from __future__ import annotations

import sys

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


def _unset(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Unset ``name`` for the test (and as it was after: the code may set it)."""
    monkeypatch.setenv(name, "")
    monkeypatch.delenv(name)


# Cost: about 15 s (a 128-step Hopper run, a video, and a refused one).
def test_a_mujoco_policy_is_rendered_headless_without_being_told_how(jaxrl, tmp_path, monkeypatch):
    """No display and no MUJOCO_GL: EGL is picked (gymnasium alone tried GLFW and ended in a
    53-line traceback); a backend that cannot render here is one line naming MUJOCO_GL=egl."""
    pytest.importorskip("mujoco")
    _unset(monkeypatch, "MUJOCO_GL")
    _unset(monkeypatch, "DISPLAY")
    _unset(monkeypatch, "WAYLAND_DISPLAY")
    run_dir, video = tmp_path / "hopper", tmp_path / "hopper.mp4"
    budget = ["--num-envs", "2", "--num-steps", "64", "--total-steps", "128", "--num-seeds", "1"]
    jaxrl("train", "trpo", "--env", "Hopper-v5", *budget, "--run-dir", run_dir).check()
    result = jaxrl("evaluate", run_dir, "--video", video).check()
    frames = _frames(video)
    assert f"({len(frames)} frames;" in result.stdout
    assert 1 < len(frames) <= 1000 and frames[0].shape == (480, 480, 3)
    assert not all(np.array_equal(frames[0], f) for f in frames[1:])
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # needs a display
    line = single_error_line(jaxrl("evaluate", run_dir, "--video", tmp_path / "glfw.gif"))
    assert "MuJoCo cannot render with MUJOCO_GL=glfw here" in line
    assert "without a display use MUJOCO_GL=egl" in line


# Cost: about 3 s each (the run's policy loaded and compiled; nothing is rendered).
@pytest.mark.parametrize(
    ("module", "needs"),
    [("pygame", "drawing Pendulum-v1 needs pygame"), ("imageio", "writing a video needs imageio")],
)
def test_a_video_without_its_packages_names_the_extra(trpo_run, tmp_path, monkeypatch, module,
                                                      needs):  # fmt: skip
    """The base install has neither pygame (gymnasium's classic-control drawings) nor imageio:
    the error names what is missing and the extra that installs it."""
    from jaxrl.runs.video import record_video

    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(ValueError) as error:
        record_video(trpo_run[0], tmp_path / "v.gif")
    assert str(error.value) == f"record_video: {needs}: pip install 'jaxrl[video]'"
    assert not (tmp_path / "v.gif").exists()


# Cost: under 0.1 s.
def test_the_tensorboard_line_names_the_extra_where_tensorboard_is_missing(monkeypatch):
    import importlib.util

    from jaxrl.cli.train import tensorboard_line

    assert (
        tensorboard_line("runs/r/tensorboard")
        == "TensorBoard:    tensorboard --logdir runs/r/tensorboard"
    )
    find_spec = importlib.util.find_spec

    def without_tensorboard(name: str, *args: object) -> object:
        return None if name == "tensorboard" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_tensorboard)
    assert tensorboard_line("runs/r/tensorboard").endswith(
        "  (to view them: pip install 'jaxrl[tensorboard]')"
    )


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
    assert f"--video {tmp_path / 'v.avi'}: write a .gif or an .mp4 file" in line
    line = single_error_line(jaxrl("evaluate", run_dir, "--video", tmp_path / "v.gif",
                                   "--seed-index", "2"))  # fmt: skip
    assert "--seed-index: seed 2 is not one of the run's 2 seeds (0 to 1)" in line
    # The options of the one and of the other: none is taken and ignored.
    line = single_error_line(jaxrl("evaluate", run_dir, "--seed-index", "1"))
    assert "--seed-index and --video-episodes go with --video (evaluating reports every" in line
    line = single_error_line(jaxrl("evaluate", run_dir, "--video", tmp_path / "v.gif",
                                   "--episodes", "3"))  # fmt: skip
    assert "--video records --video-episodes episodes instead of evaluating: --episodes" in line
    assert not (tmp_path / "v.gif").exists()


def test_evaluate_s_seed_is_the_video_episodes_seed(trpo_run, tmp_path, monkeypatch):
    """``--seed`` seeds the episodes a video records, as it seeds evaluated ones (it was
    ignored: every video started from seed 0's episodes)."""
    import jaxrl.runs.video
    from jaxrl import cli

    called = {}

    def record(*args, **kwargs):
        called.update(kwargs)
        raise ValueError("record_video: recorded nothing")

    monkeypatch.setattr(jaxrl.runs.video, "record_video", record)
    argv = ["evaluate", str(trpo_run[0]), "--video", str(tmp_path / "v.gif"), "--seed", "3"]
    assert cli.main(argv) == 2
    assert called["seed"] == 3 and called["seed_index"] == 0

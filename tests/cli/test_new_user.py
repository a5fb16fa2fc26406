"""A new user's path, end to end: train on Pendulum with wandb offline and a video of the
final policy, train a second run, compare the two with the robust statistics."""

from __future__ import annotations

import json

import numpy as np

from jaxrl.studies import statistics as st

from .helpers import TRPO_RUN
from .wandb_records import assert_history_is_the_csvs, offline_runs


def test_train_with_wandb_and_a_video_then_compare_two_runs(jaxrl, tmp_path, offline_wandb):
    import imageio.v2 as imageio

    first, second, video = tmp_path / "first", tmp_path / "second", tmp_path / "final.mp4"
    jaxrl(*TRPO_RUN, "--run-dir", first, "--logger", "wandb", "--video", video).check()
    jaxrl(*TRPO_RUN, "--run-dir", second, "--seed", "1").check()

    (run,) = offline_runs(first / "wandb")  # the tracked history is the run's CSVs
    assert_history_is_the_csvs(first, [run])
    assert run.config == {"_wandb": run.config["_wandb"]} | json.loads(
        (first / "config.json").read_text()
    )
    frames = [np.asarray(frame) for frame in imageio.get_reader(video)]
    assert len(frames) == 200  # one Pendulum-v1 episode
    assert not all(np.array_equal(frames[0], f) for f in frames[1:])

    result = jaxrl("compare", first, second, "-o", tmp_path / "c.png").check()
    finals = [
        np.asarray(json.loads((d / "final_eval.json").read_text())["deterministic"])
        for d in (first, second)
    ]
    labels = ["TRPO Pendulum-v1 seed=0", "TRPO Pendulum-v1 seed=1"]  # where the runs differ
    for label, scores in zip(labels, finals, strict=True):
        low, high = st.bootstrap_interval(scores)
        iqm = np.sort(scores)[len(scores) // 4 : len(scores) - len(scores) // 4].mean()
        assert f"  {label}: {iqm:.1f} [{low:.1f}, {high:.1f}]" in result.stdout
    wins = np.mean(finals[0][:, None] > finals[1][None, :])  # returns are never tied
    assert f"P({labels[0]} > {labels[1]}) = {wins:.2f} (a seed of each)" in result.stdout

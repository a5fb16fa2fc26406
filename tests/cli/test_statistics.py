"""Robust aggregate statistics (:mod:`jaxrl.studies.statistics`): against plain loops, against the
rliable package on its own kind of example, and in ``jaxrl compare`` and sweep rankings."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest

from jaxrl.studies import statistics as st

from .helpers import single_error_line


def test_iqm_and_probability_of_improvement_against_plain_loops():
    rng = np.random.RandomState(0)
    scores = rng.normal(size=(8, 3))  # 24 scores: the middle 12 pooled
    middle = np.sort(scores.ravel())[6:18]
    assert st.iqm(scores) == pytest.approx(middle.mean(), rel=1e-12)
    other = np.round(rng.normal(size=(5, 3)), 1)
    x = np.round(scores, 1)  # ties count one half
    per_task = []
    for task in range(3):
        wins = 0.0
        for a, b in itertools.product(x[:, task], other[:, task]):
            wins += 1.0 if a > b else 0.5 if a == b else 0.0
        per_task.append(wins / (8 * 5))
    assert st.probability_of_improvement(x, other) == pytest.approx(np.mean(per_task))
    assert st.probability_of_improvement(x, x) == pytest.approx(0.5)
    profile = st.performance_profile(scores, [-10.0, 0.0, 10.0])
    np.testing.assert_allclose(profile, [1.0, np.mean(np.mean(scores > 0, axis=0)), 0.0])


@pytest.mark.parametrize("aggregate", [st.mean, st.iqm, lambda s: float(np.median(s))])
@pytest.mark.parametrize("chunk", [None, 30])
def test_a_bootstrap_interval_resamples_runs_within_tasks(aggregate, chunk, monkeypatch):
    """Against a plain loop (a draw per resample), whether the resamples are computed
    together, a chunk at a time (``chunk`` scores held at once: 2 resamples of 6 x 2), or one
    by one (an aggregate of the caller's)."""
    if chunk is not None:
        monkeypatch.setattr(st, "_CHUNK", chunk)
    rng = np.random.RandomState(1)
    scores = rng.normal(size=(6, 2))
    low, high = st.bootstrap_interval(scores, aggregate, reps=301, seed=3)
    draws = np.random.RandomState(3)
    values = [
        aggregate(scores[draws.choice(6, (6, 2), replace=True), np.arange(2)[None, :]])
        for _ in range(301)
    ]
    np.testing.assert_allclose((low, high), np.percentile(values, [2.5, 97.5]), rtol=1e-12)
    assert low < aggregate(scores) < high
    assert all(np.isnan(st.bootstrap_interval(scores[:1])))  # one run: no interval


def test_equal_to_rliable():
    rliable = pytest.importorskip("rliable")
    from rliable import library, metrics

    del rliable
    rng = np.random.RandomState(5)
    scores_x, scores_y = rng.normal(size=(10, 5)), rng.normal(size=(7, 5)) + 0.3
    assert st.iqm(scores_x) == metrics.aggregate_iqm(scores_x)
    assert st.probability_of_improvement(scores_x, scores_y) == pytest.approx(
        metrics.probability_of_improvement(scores_x, scores_y), rel=1e-12
    )
    np.random.seed(7)  # noqa: NPY002 (rliable's bootstrap draws from NumPy's global generator)
    _, intervals = library.get_interval_estimates(
        {"x": scores_x}, lambda s: np.array([metrics.aggregate_iqm(s)]), reps=500
    )
    np.testing.assert_allclose(
        st.bootstrap_interval(scores_x, st.iqm, reps=500, seed=7), intervals["x"].ravel()
    )
    taus = np.linspace(-2, 2, 9)
    distributions, _ = library.create_performance_profile({"x": scores_x}, taus, reps=10)
    np.testing.assert_allclose(st.performance_profile(scores_x, taus), distributions["x"])


def test_compare_reports_robust_statistics_and_draws_a_profile(jaxrl, trpo_run, tmp_path):
    run_dir, _ = trpo_run
    profile, copy = tmp_path / "profile.png", tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    result = jaxrl("compare", run_dir, copy, "-o", tmp_path / "c.png", "--profile", profile)
    result.check()
    assert "interquartile mean [95% stratified bootstrap CI]" in result.stdout
    assert "= 0.50 (a seed of each)" in result.stdout  # a run against its copy
    assert profile.stat().st_size > 0
    refused = jaxrl("compare", run_dir, tmp_path / "nope", "--profile", profile)
    assert "does not exist" in single_error_line(refused)


# Cost: about 4 s (two comparisons of copies of the shared run; nothing trains).
def test_compare_names_the_differing_settings_and_keeps_each_comparisons_figure(
    jaxrl, trpo_run, tmp_path
):
    """Runs that differ in a hyperparameter are labelled by it; ``--json`` carries the
    probability of improvement; the figure is named after the runs compared, so comparing
    other runs (here: the same in another order) writes another file."""
    runs = tmp_path / "runs"
    low, high = runs / "kl-low", runs / "kl-high"
    for copy, max_kl in ((low, 0.01), (high, 0.02)):
        shutil.copytree(trpo_run[0], copy)
        config = json.loads((copy / "config.json").read_text())
        config["hyperparameters"]["max_kl"] = max_kl  # the copies differ in this alone
        (copy / "config.json").write_text(json.dumps(config))
    data = json.loads(jaxrl("compare", low, high, "--json").check().stdout)
    labels = ["TRPO Pendulum-v1 max_kl=0.01", "TRPO Pendulum-v1 max_kl=0.02"]
    assert [row["run"] for row in data["runs"]] == labels
    # The same returns on both sides: a seed of each wins half the time.
    assert data["probability_of_improvement"] == [
        {"run": labels[0], "other": labels[1], "probability": 0.5}
    ]
    assert data["figure"] == str(runs / "compare-kl-low-vs-kl-high.png")
    again = jaxrl("compare", high, low).check().stdout
    assert f"Learning curves: {runs / 'compare-kl-high-vs-kl-low.png'}" in again
    assert (runs / "compare-kl-low-vs-kl-high.png").is_file()  # the first one is still there


# Cost: about 3 s (copies of the shared run; nothing trains).
def test_compare_computes_no_probability_of_improvement_across_environments(
    jaxrl, trpo_run, tmp_path
):
    """Returns of different tasks are not comparable: a run on another environment gets no
    P(first > it), a line says why, and its label names no setting (settings are compared
    between runs on one environment)."""
    runs = {"base": ("Pendulum-v1", 0.01), "kl": ("Pendulum-v1", 0.02), "car": ("Acrobot-v1", 0.02)}
    for name, (env, max_kl) in runs.items():
        shutil.copytree(trpo_run[0], tmp_path / name)
        config = json.loads((tmp_path / name / "config.json").read_text())
        config["env"], config["hyperparameters"]["max_kl"] = env, max_kl
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    dirs = [tmp_path / name for name in runs]
    data = json.loads(jaxrl("compare", *dirs, "--json").check().stdout)
    labels = ["TRPO Pendulum-v1 max_kl=0.01", "TRPO Pendulum-v1 max_kl=0.02", "TRPO Acrobot-v1"]
    assert [row["run"] for row in data["runs"]] == labels
    assert [row["env"] for row in data["runs"]] == ["Pendulum-v1", "Pendulum-v1", "Acrobot-v1"]
    assert data["probability_of_improvement"] == [
        {"run": labels[0], "other": labels[1], "probability": 0.5}
    ]
    text = jaxrl("compare", *dirs).check().stdout
    assert f"P({labels[0]} > {labels[1]}) = 0.50" in text
    assert f"No P({labels[0]} > ...) for TRPO Acrobot-v1: another environment's" in text

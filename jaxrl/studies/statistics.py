"""Aggregate statistics of many runs (rliable's definitions: Agarwal et al., "Deep
reinforcement learning at the edge of the statistical precipice", NeurIPS 2021).

Scores are ``[runs, tasks]`` (one column per task, one row per run or seed):

- :func:`iqm`: the interquartile mean, the mean of the middle 50% of all scores pooled over
  tasks (robust to outlying runs, more efficient than the median);
- :func:`bootstrap_interval`: a 95% stratified bootstrap interval of any aggregate: runs
  resampled with replacement within each task, the percentiles of the aggregate over the
  resamples;
- :func:`probability_of_improvement`: ``P(X > Y)`` per task (a run of X against a run of Y,
  ties counting one half: the Mann-Whitney U statistic over ``n_x n_y``), averaged over tasks;
- :func:`performance_profile`: the fraction of runs whose score exceeds each threshold.

They equal the ``rliable`` package's on its own examples (``tests/cli/test_statistics.py``,
where it is installed); fewer than two runs have no interval (NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _scores(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, np.float64)
    return scores[:, None] if scores.ndim == 1 else scores


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean of ``scores [runs, tasks]`` (or ``[runs]``), pooled: the mean
    after cutting the lowest and highest 25% (``scipy.stats.trim_mean(..., 0.25)``)."""
    from scipy import stats

    return float(stats.trim_mean(_scores(scores), 0.25, axis=None))


def mean(scores: np.ndarray) -> float:
    """The mean over tasks of each task's mean score (rliable's ``aggregate_mean``)."""
    return float(np.mean(np.mean(_scores(scores), axis=0)))


def bootstrap_interval(
    scores: np.ndarray,
    aggregate: Callable[[np.ndarray], float] = iqm,
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """The ``confidence`` stratified bootstrap interval of ``aggregate(scores)``: ``reps``
    resamples of the runs of each task (with replacement, ``[runs, tasks]`` indices drawn by
    ``numpy.random.RandomState(seed)``), the percentile interval of the aggregate over them.
    NaN for fewer than two runs."""
    scores = _scores(scores)
    runs, tasks = scores.shape
    if runs < 2:
        return float("nan"), float("nan")
    rng = np.random.RandomState(seed)
    columns = np.arange(tasks)[None, :]
    values = np.empty(reps)
    for rep in range(reps):
        values[rep] = aggregate(scores[rng.choice(runs, (runs, tasks), replace=True), columns])
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """``P(X > Y)`` averaged over tasks: per task, the fraction of (run of X, run of Y) pairs
    where X scores higher, ties counting one half."""
    x, y = _scores(scores_x), _scores(scores_y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"scores_x has {x.shape[1]} tasks, scores_y {y.shape[1]}")
    per_task = []
    for task in range(x.shape[1]):
        a, b = x[:, task][:, None], y[:, task][None, :]
        per_task.append(float(np.mean((a > b) + 0.5 * (a == b))))
    return float(np.mean(per_task))


def performance_profile(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """``[len(thresholds)]``: the mean over tasks of the fraction of runs scoring above each
    threshold (rliable's run-score distribution)."""
    scores = _scores(scores)
    above = scores[None, :, :] > np.asarray(thresholds, np.float64)[:, None, None]
    return np.mean(np.mean(above, axis=1), axis=1)


__all__ = [
    "bootstrap_interval",
    "iqm",
    "mean",
    "performance_profile",
    "probability_of_improvement",
]

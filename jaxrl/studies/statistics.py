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
    return float(_iqm_each(_scores(scores)[None])[0])


def mean(scores: np.ndarray) -> float:
    """The mean over tasks of each task's mean score (rliable's ``aggregate_mean``)."""
    return float(_mean_each(_scores(scores)[None])[0])


def _iqm_each(samples: np.ndarray) -> np.ndarray:
    """:func:`iqm` of each ``samples[i]`` (``[samples, runs, tasks]`` -> ``[samples]``)."""
    from scipy import stats

    return stats.trim_mean(samples.reshape(len(samples), -1), 0.25, axis=1)


def _mean_each(samples: np.ndarray) -> np.ndarray:
    """:func:`mean` of each ``samples[i]`` (``[samples, runs, tasks]`` -> ``[samples]``)."""
    return np.mean(np.mean(samples, axis=1), axis=1)


# The aggregates computed over many resamples at once (called once per resample, 2,000 of
# them, they spent most of their time in scipy's per-call checks); any other aggregate is
# called per resample.
_EACH: dict[Callable[[np.ndarray], float], Callable[[np.ndarray], np.ndarray]] = {
    iqm: _iqm_each,
    mean: _mean_each,
}
_CHUNK = 1 << 22  # resampled scores held at once (32 MiB of float64)


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
    each = _EACH.get(aggregate, lambda samples: np.array([aggregate(s) for s in samples]))
    values = []
    step = max(1, _CHUNK // scores.size)
    for start in range(0, reps, step):
        # Drawn a chunk of resamples at a time: the same numbers as a draw per resample.
        rows = rng.choice(runs, (min(step, reps - start), runs, tasks), replace=True)
        values.append(each(scores[rows, np.arange(tasks)]))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(np.concatenate(values), [tail, 100 - tail])
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

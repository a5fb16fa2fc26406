"""Many tasks at once (``jaxrl compare --normalize tianshou RUN_DIR...``): each run's scores
normalized by a per-task reference, then aggregated over tasks x seeds per group of runs
(rliable's statistics, :mod:`jaxrl.studies.statistics`).

The score of a seed is its final policy's deterministic return (``final_eval.json``), the
value ``jaxrl compare`` ranks runs by. ``tianshou`` normalizes it as

    (return - random) / (tianshou - random)

with, per task (:mod:`jaxrl.runs.published`): ``tianshou`` the best of Tianshou's published
1M-step means on the task (over its TRPO, NPG and DDPG: ``tianshou_best``), ``random`` the
uniform random policy's mean return on the gymnasium v5 task (``RANDOM_RETURNS``, measured by
``benchmarks/random_scores.py``). 0 is the random policy, 1 Tianshou's best published result.

Runs are grouped by algorithm (or by ``--labels``: runs with the same label pool their
seeds); a group's scores are ``[seeds, tasks]`` (a task's seeds from every run of the group
on it). Per group: the interquartile mean and the mean (over tasks of each task's mean) with
95% stratified bootstrap intervals; between the first group and each other, the probability
of improvement over the tasks both ran.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.runs.published import RANDOM_RETURNS, task_of, tianshou_best
from jaxrl.runs.report import FinalEvaluation
from jaxrl.runs.run_dir import RunDir

REFERENCES = ("tianshou",)
"""The references ``--normalize`` names."""
DESCRIPTION = {
    "tianshou": "0 = uniform random policy, 1 = the best of Tianshou's published 1M-step means"
}


class NormalizeError(ValueError):
    """A run that cannot be normalized (no reference for its task, not finished), or groups
    whose scores cannot be aggregated."""


def reference_pair(reference: str, env_id: str) -> tuple[float, float] | None:
    """``(zero, one)`` of ``reference`` on ``env_id``'s task (the returns normalized to 0 and
    1), or None where it has none."""
    if reference not in REFERENCES:
        raise NormalizeError(f"--normalize {reference}: expected one of {', '.join(REFERENCES)}")
    if env_id.startswith("brax:"):
        return None
    task = task_of(env_id)
    best = tianshou_best(task)
    if best is None or task not in RANDOM_RETURNS:
        return None
    return RANDOM_RETURNS[task], best


def normalize(returns: np.ndarray, pair: tuple[float, float]) -> np.ndarray:
    """``(returns - zero) / (one - zero)``."""
    zero, one = pair
    return (np.asarray(returns, np.float64) - zero) / (one - zero)


@dataclasses.dataclass(frozen=True)
class Group:
    """One group's normalized scores.

    Attributes:
      label: the group's label.
      tasks: its tasks (gymnasium ids, as the runs' config.json names them), in order.
      scores: ``[seeds, tasks]`` normalized scores.
    """

    label: str
    tasks: tuple[str, ...]
    scores: np.ndarray


def _run_task(run_dir: Path) -> tuple[str, str]:
    """``(algo, env)`` of a run directory's config.json."""
    try:
        config = json.loads(RunDir(run_dir).config.read_text())
        return str(config["algo"]), str(config["env"])
    except (OSError, ValueError, KeyError, TypeError):
        raise NormalizeError(f"{run_dir}: no readable config.json (not a jaxrl run)") from None


def normalized_groups(
    run_dirs: Sequence[str | Path], reference: str, labels: Sequence[str] | None = None
) -> list[Group]:
    """The runs' normalized final scores, grouped by ``labels`` (default: algorithm), groups
    in the order of their first run, tasks in the order of first appearance.

    Raises:
      NormalizeError: a run on a task ``reference`` has no value for (naming the run and the
        task), a run without a final policy, or a group with unequal seeds across its tasks.
    """
    per_group: dict[str, dict[str, list[np.ndarray]]] = {}
    for i, run_dir in enumerate(Path(d) for d in run_dirs):
        algo, env = _run_task(run_dir)
        pair = reference_pair(reference, env)
        if pair is None:
            raise NormalizeError(
                f"--normalize {reference}: {run_dir} is on {env}, a task {reference} has no "
                f"reference for (tasks: {', '.join(sorted(RANDOM_RETURNS))})"
            )
        final = FinalEvaluation.load(RunDir(run_dir).final_eval)
        if final is None:
            raise NormalizeError(
                f"--normalize {reference}: {run_dir} has not finished (no final_eval.json)"
            )
        label = labels[i] if labels is not None else algo.upper()
        per_group.setdefault(label, {}).setdefault(env, []).append(
            normalize(final.deterministic, pair)
        )
    return [_group(label, tasks) for label, tasks in per_group.items()]


def _group(label: str, tasks: dict[str, list[np.ndarray]]) -> Group:
    columns = {env: np.concatenate(parts) for env, parts in tasks.items()}
    counts = {env: len(column) for env, column in columns.items()}
    if len(set(counts.values())) > 1:
        seeds = ", ".join(f"{n} on {env}" for env, n in counts.items())
        raise NormalizeError(
            f"--normalize: {label} has unequal seeds across its tasks ({seeds}); the "
            "stratified bootstrap needs as many seeds on each task"
        )
    return Group(label, tuple(columns), np.stack(list(columns.values()), axis=1))


def aggregate(group: Group) -> dict[str, Any]:
    """``label``, ``tasks``, ``seeds``, ``iqm``, ``iqm_low``, ``iqm_high``, ``mean``,
    ``mean_low``, ``mean_high`` of a group (95% stratified bootstrap intervals)."""
    from jaxrl.studies import statistics

    iqm_low, iqm_high = statistics.bootstrap_interval(group.scores, statistics.iqm)
    mean_low, mean_high = statistics.bootstrap_interval(group.scores, statistics.mean)
    return {
        "label": group.label,
        "tasks": list(group.tasks),
        "seeds": int(group.scores.shape[0]),
        "iqm": statistics.iqm(group.scores),
        "iqm_low": iqm_low,
        "iqm_high": iqm_high,
        "mean": statistics.mean(group.scores),
        "mean_low": mean_low,
        "mean_high": mean_high,
    }


def improvement(first: Group, other: Group) -> tuple[float, tuple[str, ...]]:
    """``P(first > other)`` over the tasks both ran
    (:func:`~jaxrl.studies.statistics.probability_of_improvement`), and those tasks; NaN where
    they share none."""
    from jaxrl.studies.statistics import probability_of_improvement

    shared = tuple(task for task in first.tasks if task in other.tasks)
    if not shared:
        return float("nan"), shared
    x = first.scores[:, [first.tasks.index(t) for t in shared]]
    y = other.scores[:, [other.tasks.index(t) for t in shared]]
    return probability_of_improvement(x, y), shared


def _interval(low: float, high: float) -> str:
    return f"[{low:.2f}, {high:.2f}]" if np.isfinite(low) else "(no interval: one seed)"


def normalized_lines(groups: Sequence[Group], reference: str) -> list[str]:
    """The lines ``jaxrl compare --normalize`` prints: each group's IQM and mean with their
    intervals, then the probability of improvement of the first group over each other."""
    lines = [
        f"Normalized final policy, deterministic ({reference}: {DESCRIPTION[reference]}); "
        "over tasks x seeds, 95% stratified bootstrap CIs:"
    ]
    for group in groups:
        stat = aggregate(group)
        size = f"{len(group.tasks)} task{'s' if len(group.tasks) != 1 else ''}"
        lines.append(
            f"  {group.label} ({size} x {stat['seeds']} seeds): IQM {stat['iqm']:.2f} "
            f"{_interval(stat['iqm_low'], stat['iqm_high'])}, mean {stat['mean']:.2f} "
            f"{_interval(stat['mean_low'], stat['mean_high'])}"
        )
    for other in groups[1:]:
        chance, shared = improvement(groups[0], other)
        if shared:
            lines.append(
                f"P({groups[0].label} > {other.label}) = {chance:.2f} (a seed of each, over "
                f"the {len(shared)} task{'s' if len(shared) != 1 else ''} both ran)"
            )
        else:
            lines.append(f"P({groups[0].label} > {other.label}): no task both ran")
    return lines


__all__ = [
    "DESCRIPTION",
    "Group",
    "NormalizeError",
    "REFERENCES",
    "aggregate",
    "improvement",
    "normalize",
    "normalized_groups",
    "normalized_lines",
    "reference_pair",
]

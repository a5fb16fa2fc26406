"""One period arithmetic for every driver.

A run is whole collections of ``num_envs * num_steps`` env steps, grouped into whole
evaluation periods of ``round(eval_every / steps_per_collect)`` collections (at least one);
it has ``total_steps // steps_per_collect // collections_per_period`` periods and evaluates
after each. The jitted driver scans over periods and the host driver loops over them with the
same numbers, so one request means the same run on both.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The shape of a run in collections and evaluation periods.

    Attributes:
      num_envs: parallel environments (per seed).
      num_steps: vector steps per collection.
      collections_per_period: collections (each followed by learning) between evaluations.
      num_periods: evaluation periods of the run.
    """

    num_envs: int
    num_steps: int
    collections_per_period: int
    num_periods: int

    @classmethod
    def of(cls, num_envs: int, num_steps: int, total_steps: int, eval_every: int) -> RunLayout:
        """The layout of a request; ``ValueError`` naming the field for a non-positive value
        or a budget shorter than one evaluation period."""
        for name, value in (
            ("num_envs", num_envs),
            ("num_steps", num_steps),
            ("total_steps", total_steps),
            ("eval_every", eval_every),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        steps_per_collect = num_envs * num_steps
        per_period = max(1, round(eval_every / steps_per_collect))
        num_periods = total_steps // steps_per_collect // per_period
        if num_periods < 1:
            raise ValueError(
                f"total_steps={total_steps} is less than one evaluation interval "
                f"({per_period * steps_per_collect} env steps)"
            )
        return cls(num_envs, num_steps, per_period, num_periods)

    @property
    def steps_per_collect(self) -> int:
        """Env steps per collection (per seed)."""
        return self.num_envs * self.num_steps

    @property
    def steps_per_period(self) -> int:
        """Env steps per evaluation period (per seed)."""
        return self.steps_per_collect * self.collections_per_period

    @property
    def num_collections(self) -> int:
        """Collections of the whole run."""
        return self.collections_per_period * self.num_periods

    @property
    def total_steps(self) -> int:
        """Env steps the run takes (per seed): whole periods of the requested budget."""
        return self.steps_per_period * self.num_periods


# A period program: ``carry -> (carry, metrics)`` for all seeds at once, where ``metrics`` holds
# per-collection arrays ``[S, C]`` and the evaluation's ``eval/env_steps`` and
# ``eval/return``, ``[S]`` each (``jax.vmap(TrainLoop.run_period)`` and
# ``HostTrainLoop.run_period``).
RunPeriod = Callable[[Any], tuple[Any, dict[str, Any]]]


def join_periods(periods: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """One run's metrics from its periods' (host arrays): per-evaluation ``eval/*`` stacked
    to ``[S, P]``, per-collection arrays joined to ``[S, P * C]``. A name some periods lack
    (stats of collections inside DDPG's warm-up, which run no update) is NaN there."""
    names = dict.fromkeys(name for period in periods for name in period)
    metrics = {}
    for name in names:
        if name.startswith("eval/"):
            metrics[name] = np.stack([period[name] for period in periods], axis=1)
            continue
        like = next(period[name] for period in periods if name in period)
        parts = []
        for period in periods:
            width = np.shape(period["env_steps"])[1]
            value = period.get(name)
            if value is None:
                value = np.full((np.shape(like)[0], width), np.nan)
            parts.append(np.asarray(value))
        metrics[name] = np.concatenate(parts, axis=1)
    return metrics


def stop_requested(stop: Callable[[Any], Any] | None, returns: np.ndarray, single: bool) -> bool:
    """Whether ``stop`` ends the run after its latest evaluation.

    The one ``stop`` signature of the drivers: ``stop`` gets the evaluation returns so far,
    ``[S, periods_so_far]``; a single unbatched seed (``num_seeds=None`` on the host driver)
    gets its latest return as a float, as Tianshou's ``stop_fn`` does."""
    if stop is None:
        return False
    return bool(stop(float(returns[0, -1]) if single else returns))


def drive(
    run_period: RunPeriod,
    carry: Any,
    num_periods: int,
    *,
    stop: Callable[[Any], Any] | None = None,
    progress: Callable[[dict], None] | None = None,
    single: bool = False,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Run ``num_periods`` periods of ``run_period`` from ``carry``, or fewer if ``stop``
    says so (:func:`stop_requested`); the period loop of :func:`train_until` and
    ``train_gymnasium``.

    ``progress``, when given, is called after each evaluation with one payload for every
    driver: ``env_steps``, ``eval_return`` (mean over seeds), ``eval_returns`` (``[S]``),
    ``seconds`` (since the call), ``state`` (the agent state: unstacked with ``single``),
    ``carry`` (the carry after the period: the caller may keep it) and ``metrics`` (the
    period's, ``[S, C]`` per collection).

    Returns ``(carry, metrics)``: the last carry and :func:`join_periods` of the periods run.
    """
    start = time.perf_counter()
    periods: list[dict[str, Any]] = []
    for _ in range(num_periods):
        carry, metrics = run_period(carry)
        metrics = jax.device_get(metrics)
        periods.append(metrics)
        returns = np.asarray(metrics["eval/return"])
        if progress is not None:
            state = carry.state
            if single:
                state = jax.tree_util.tree_map(lambda x: x[0], state)
            progress(
                {
                    "env_steps": int(np.asarray(metrics["eval/env_steps"]).reshape(-1)[0]),
                    "eval_return": float(np.mean(returns)),
                    "eval_returns": returns,
                    "seconds": time.perf_counter() - start,
                    "state": state,
                    "carry": carry,
                    "metrics": metrics,
                }
            )
        history = np.stack([np.asarray(p["eval/return"]) for p in periods], axis=1)
        if stop_requested(stop, history, single):
            break
    return carry, join_periods(periods)

"""The period loop of every driver: a run as evaluation periods of whole collections (their
counts come from :class:`jaxrl.config.settings.RunLayout`), joined metrics, and the one
``stop`` signature."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

# A period program: ``(carry, collections) -> (carry, metrics)`` for all seeds at once: that
# many collections with their learning, then an evaluation. ``metrics`` holds per-collection
# arrays ``[S, collections]`` and the evaluation's ``eval/env_steps`` and ``eval/return``,
# ``[S]`` each (``TrainLoop.run_period`` over seeds and ``HostLoop.run_period``).
RunPeriod = Callable[[Any, int], tuple[Any, dict[str, Any]]]


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


# What a driver does after each period: ``(carry, metrics) -> stop`` with the carry after the
# period and its metrics as host arrays (:data:`RunPeriod`); True ends the run there.
AfterPeriod = Callable[[Any, dict[str, Any]], bool]


def drive(run_period: RunPeriod, carry: Any, periods: Sequence[int], after: AfterPeriod) -> Any:
    """The period loop of every driver and of the runner (Brax's outer loop): each period of
    ``periods`` (collections of each,
    :attr:`~jaxrl.config.settings.RunLayout.period_collections`) run from ``carry``, then
    ``after(carry, metrics)``, until it returns True or the periods are spent. Returns the
    last carry."""
    for collections in periods:
        carry, metrics = run_period(carry, collections)
        if after(carry, jax.device_get(metrics)):
            break
    return carry


def train_watched(
    run_period: RunPeriod,
    carry: Any,
    periods: Sequence[int],
    *,
    stop: Callable[[Any], Any] | None = None,
    progress: Callable[[dict], None] | None = None,
    single: bool = False,
) -> tuple[Any, dict[str, np.ndarray]]:
    """:func:`drive` as the API's drivers run it
    (:func:`~jaxrl.training.jax_driver.train_until`, ``train_gymnasium``): ended early by
    ``stop`` (:func:`stop_requested`), watched by ``progress``.

    ``progress``, when given, is called after each evaluation with one payload for every
    driver: ``env_steps``, ``eval_return`` (mean over seeds), ``eval_returns`` (``[S]``),
    ``seconds`` (since the call), ``state`` (the agent state: unstacked with ``single``),
    ``carry`` (the carry after the period: the caller may keep it) and ``metrics`` (the
    period's, ``[S, C]`` per collection).

    Returns ``(carry, metrics)``: the last carry and :func:`join_periods` of the periods run.
    """
    start = time.perf_counter()
    done: list[dict[str, Any]] = []

    def after(carry: Any, metrics: dict[str, Any]) -> bool:
        done.append(metrics)
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
        history = np.stack([np.asarray(p["eval/return"]) for p in done], axis=1)
        return stop_requested(stop, history, single)

    carry = drive(run_period, carry, periods, after)
    return carry, join_periods(done)

"""One period arithmetic for every driver: the run a budget means, and the counts that follow.

The rule (the same for the jitted and the host driver, the command, checkpoints and the
learning-rate schedule):

- A run is ``C = total_steps // (num_envs * num_steps)`` whole collections (each followed by
  learning): the budget rounded down to whole collections, so a run takes at most one
  collection less than ``total_steps`` (:meth:`RunLayout.shortfall`), never more.
- Where a budget is given without an interval, the interval adapts
  (:func:`evaluation_interval`): a short run evaluates at least about 10 times.
- It evaluates after every ``k = round(eval_every / (num_envs * num_steps))`` collections (at
  least 1, at most ``C``) and after the last collection: ``ceil(C / k)`` evaluation periods,
  all of ``k`` collections but the last, which holds the remaining ``C - (P - 1) k`` (a
  shorter period when ``k`` does not divide ``C``). Periods end at absolute collection counts
  (multiples of ``k``, and ``C``), so a run extended with a larger budget continues with the
  same period boundaries.
- Agent updates: one per collection for on-policy agents; ``update_per_step *
  num_envs * num_steps`` per collection for off-policy agents, for the collections that do not
  start inside the random warm-up (:meth:`RunLayout.agent_updates`). A learning-rate schedule
  is sized with this count, so it reaches its end on the run's last update.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

MIN_EVALUATIONS = 10


def evaluation_interval(
    total_steps: int, steps_per_collect: int, default_total: int, default_eval_every: int
) -> int:
    """The evaluation interval of a budget ``total_steps`` whose settings default to
    ``default_eval_every`` for a budget of ``default_total``: that interval, shortened for a
    smaller budget so the run evaluates at least as often as the default run does, up to
    :data:`MIN_EVALUATIONS` times (at most after every collection). A short run so keeps a
    learning curve; a given ``eval_every`` is taken as it is."""
    wanted = min(MIN_EVALUATIONS, max(1, default_total // default_eval_every))
    return max(steps_per_collect, min(default_eval_every, total_steps // wanted))


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The shape of a run in collections and evaluation periods (per seed).

    Attributes:
      num_envs: parallel environments (per seed).
      num_steps: vector steps per collection.
      collections_per_period: collections (each followed by learning) between evaluations:
        the length of every period but perhaps the last.
      num_collections: collections of the whole run.
    """

    num_envs: int
    num_steps: int
    collections_per_period: int
    num_collections: int

    @classmethod
    def of(cls, num_envs: int, num_steps: int, total_steps: int, eval_every: int) -> RunLayout:
        """The layout of a request (see the module docstring for the rule).

        Raises:
          ValueError: naming the field, for a value that is not a positive int, or a budget
            shorter than one collection.
        """
        for name, value in (
            ("num_envs", num_envs),
            ("num_steps", num_steps),
            ("total_steps", total_steps),
            ("eval_every", eval_every),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        steps_per_collect = num_envs * num_steps
        collections = total_steps // steps_per_collect
        if collections < 1:
            raise ValueError(
                f"total_steps={total_steps} is less than one collection (num_envs x num_steps "
                f"= {num_envs} x {num_steps} = {steps_per_collect} env steps)"
            )
        per_period = min(collections, max(1, round(eval_every / steps_per_collect)))
        return cls(num_envs, num_steps, per_period, collections)

    @property
    def steps_per_collect(self) -> int:
        """Env steps per collection (per seed)."""
        return self.num_envs * self.num_steps

    @property
    def steps_per_period(self) -> int:
        """Env steps of a whole evaluation period (per seed); the last may be shorter."""
        return self.steps_per_collect * self.collections_per_period

    @property
    def num_periods(self) -> int:
        """Evaluation periods of the run (one evaluation after each)."""
        return math.ceil(self.num_collections / self.collections_per_period)

    @property
    def period_collections(self) -> tuple[int, ...]:
        """Collections of each period, ``[P]``: ``k`` each, the last perhaps fewer."""
        return self.periods_after(0)

    def periods_after(self, done: int) -> tuple[int, ...]:
        """Collections of each period still to run after ``done`` collections (a resumed
        run; a run extended after a shorter last period first completes that period)."""
        periods = []
        while done < self.num_collections:
            periods.append(self.collections_in(done))
            done += periods[-1]
        return tuple(periods)

    def collections_in(self, done: int) -> int:
        """Collections of the period that starts after ``done`` collections: up to the next
        multiple of ``collections_per_period``, or to the end of the run."""
        k = self.collections_per_period
        return min(k - done % k, self.num_collections - done)

    @property
    def total_steps(self) -> int:
        """Env steps the run takes (per seed): its whole collections."""
        return self.steps_per_collect * self.num_collections

    def shortfall(self, requested: int) -> int:
        """Env steps of ``requested`` the run leaves out (fewer than one collection)."""
        return requested - self.total_steps

    @property
    def eval_steps(self) -> tuple[int, ...]:
        """Env steps (per seed) after which the run evaluates, ``[P]``."""
        ends = np.cumsum(self.period_collections) * self.steps_per_collect
        return tuple(int(e) for e in ends)

    def agent_updates(self, update_per_step: float | None = None, warmup_steps: int = 0) -> int:
        """Calls of ``agent.update`` over the run: one per collection (on-policy, with
        ``update_per_step`` None); off-policy, ``update_per_step * num_envs * num_steps`` per
        collection that starts at or after ``warmup_steps`` env steps (the updates of a
        collection that starts inside the warm-up do not take effect)."""
        if update_per_step is None:
            return self.num_collections
        per_collect = round(update_per_step * self.steps_per_collect)
        starts = np.arange(self.num_collections) * self.steps_per_collect
        return int(per_collect * np.sum(starts >= warmup_steps))

    def describe(self) -> str:
        """One line: ``"61 evaluations, every 16 collections of 16 x 64 env steps; ..."``."""
        short = self.period_collections[-1]
        last = (
            f"; the last period {short} collection{'s' if short != 1 else ''}"
            if short != self.collections_per_period
            else ""
        )
        return (
            f"{self.num_collections:,} collections of {self.num_envs} x {self.num_steps} env "
            f"steps ({self.total_steps:,} env steps), {self.num_periods} evaluation"
            f"{'s' if self.num_periods != 1 else ''} every {self.collections_per_period} "
            f"collection{'s' if self.collections_per_period != 1 else ''}{last}"
        )


# A period program: ``(carry, collections) -> (carry, metrics)`` for all seeds at once: that
# many collections with their learning, then an evaluation. ``metrics`` holds per-collection
# arrays ``[S, collections]`` and the evaluation's ``eval/env_steps`` and ``eval/return``,
# ``[S]`` each (``TrainLoop.run_period`` over seeds and ``HostTrainLoop.run_period``).
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


def drive(
    run_period: RunPeriod,
    carry: Any,
    periods: Sequence[int],
    *,
    stop: Callable[[Any], Any] | None = None,
    progress: Callable[[dict], None] | None = None,
    single: bool = False,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Run the ``periods`` (collections of each, :attr:`RunLayout.period_collections`) of
    ``run_period`` from ``carry``, or fewer if ``stop`` says so (:func:`stop_requested`); the
    period loop of :func:`train_until` and ``train_gymnasium``.

    ``progress``, when given, is called after each evaluation with one payload for every
    driver: ``env_steps``, ``eval_return`` (mean over seeds), ``eval_returns`` (``[S]``),
    ``seconds`` (since the call), ``state`` (the agent state: unstacked with ``single``),
    ``carry`` (the carry after the period: the caller may keep it) and ``metrics`` (the
    period's, ``[S, C]`` per collection).

    Returns ``(carry, metrics)``: the last carry and :func:`join_periods` of the periods run.
    """
    start = time.perf_counter()
    done: list[dict[str, Any]] = []
    for collections in periods:
        carry, metrics = run_period(carry, collections)
        metrics = jax.device_get(metrics)
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
        if stop_requested(stop, history, single):
            break
    return carry, join_periods(done)

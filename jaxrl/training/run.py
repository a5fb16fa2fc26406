"""A run's period loop: :func:`~jaxrl.training.run.run_periods` drives a
:class:`~jaxrl.training.loop.Loop` through the initial policy's evaluation, the evaluation
periods left and the final policy's evaluation, each reported to one
:class:`~jaxrl.training.run.Recorder` per setting of the loop.

:func:`jaxrl.runs.train_run` drives it with a recorder that writes a run directory
(:class:`jaxrl.runs.bookkeeping.RunBook`); the API's drivers (:func:`jaxrl.training.train_until`,
``train_gymnasium``) with :class:`Watch`, which keeps the metrics in memory; research code
may pass its own::

    loop = jaxrl.runs.make_loop(config, config.make_agent())
    run_periods(loop, [recorder], loop.init(), start_steps=0, done=0, eval_episodes=10)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import jax
import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes
from jaxrl.training.loop import Loop


@runtime_checkable
class Recorder(Protocol):
    """Where one setting of a loop reports as it trains.

    Attributes:
      period: evaluation periods done (of the whole run, over all resumes).
      num_periods: evaluation periods of the whole run.
      env_steps: env steps per seed done.
      eval_returns: each seed's latest evaluation return ``[S]``.
    """

    period: int
    num_periods: int
    env_steps: int
    eval_returns: np.ndarray

    def log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        """Each seed's evaluation ``returns [S]`` after ``env_steps`` env steps per seed."""

    def end_period(self, metrics: dict[str, np.ndarray], first_update: int) -> None:
        """One more evaluation period done: advance ``period``, ``env_steps`` and
        ``eval_returns`` and log them. ``metrics``: per-update values ``[S, U]`` and the
        period's evaluation (``eval/return``, ``eval/env_steps``: ``[S]``); its first
        collection is number ``first_update`` of the run."""

    def checkpoint_due(self) -> bool:
        """Whether the period just ended is to be checkpointed."""

    def save(self, tree: Any) -> None:
        """Checkpoint ``tree`` (this setting's part of the loop's carry) as this period."""

    def finish(
        self, episodes: int, deterministic: np.ndarray, stochastic: np.ndarray | None
    ) -> None:
        """After the last period: the final policy's mean return per seed ``[S]`` over
        ``episodes`` episodes, deterministic and (NPG, TRPO) stochastic."""


def run_periods(
    loop: Loop,
    recorders: Sequence[Recorder],
    carry: Any,
    start_steps: int,
    done: int,
    eval_episodes: int,
    stop_after_periods: int | None = None,
    stop: Callable[[], bool] | None = None,
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None = None,
) -> Any:
    """Train the ``recorders``' runs (one per setting of ``loop``) from ``carry``, after
    ``start_steps`` env steps and ``done`` collections per seed. Returns the last carry.

    The initial policy is evaluated at period 0 (by the first period, for a loop that
    evaluates alongside its training); then each period left (at most
    ``stop_after_periods`` of them) trains and evaluates, each setting's share of its metrics
    goes to its recorder, and a checkpoint is taken where due; after the last period of the
    run the final policy is evaluated (``eval_episodes`` per seed and mode, evaluation seed
    0). ``stop``, asked after every period but the run's last, ends the call there with a
    checkpoint; ``on_period(period, env_steps, returns per setting)`` returning True ends it
    without one (pruned).
    """
    carry = loop.start(carry, start_steps)
    try:
        # The learning curve's first point (the first period reports it when it evaluates
        # alongside its training).
        if recorders[0].period == 0 and not loop.evaluates_alongside:
            deterministic = loop.agent.evaluates_deterministically
            returns = loop.evaluate(carry.state, carry.obs_stats, eval_episodes, 0, deterministic)
            for g, recorder in enumerate(recorders):
                recorder.log_evals(loop.part(returns, g), 0)
        carry = train_periods(loop, recorders, carry, done, stop_after_periods, stop, on_period)
        if recorders[0].period >= recorders[0].num_periods:
            final_evaluations(loop, recorders, carry, eval_episodes)
    finally:
        loop.close()
    return carry


def train_periods(
    loop: Loop,
    recorders: Sequence[Recorder],
    carry: Any,
    done: int,
    stop_after_periods: int | None = None,
    stop: Callable[[], bool] | None = None,
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None = None,
) -> Any:
    """The evaluation periods left after ``done`` collections per seed (at most
    ``stop_after_periods``; ``stop`` and ``on_period`` as in :func:`run_periods`), driven by
    Returns the carry after the last period trained."""
    first = recorders[0]

    def after(carry: Any, metrics: dict[str, Any]) -> bool:
        nonlocal done
        for g, recorder in enumerate(recorders):
            recorder.end_period(loop.part(metrics, g), first_update=done + 1)
        done += np.shape(metrics["env_steps"])[1]  # the period's collections
        pruned = on_period is not None and on_period(
            first.period, first.env_steps, [r.eval_returns for r in recorders]
        )
        stopping = not pruned and first.period < first.num_periods and stop is not None and stop()
        due = [g for g, r in enumerate(recorders) if r.checkpoint_due() or stopping]
        whole = loop.to_checkpoint(carry) if due else None  # gathered by every process
        for g in due:
            recorders[g].save(loop.part(whole, g))
        return stopping or pruned

    for collections in loop.layout.periods_after(done)[:stop_after_periods]:
        carry, metrics = loop.run_period(carry, collections)
        if after(carry, metrics):
            break
    return carry


def final_evaluations(loop: Loop, recorders: Sequence[Recorder], carry: Any, episodes: int) -> None:
    """The final policy of each setting evaluated deterministically and (NPG, TRPO, unless
    the loop evaluates alongside its training) stochastically, ``episodes`` episodes per
    seed and mode on evaluation seed 0, told to its recorder (:meth:`Recorder.finish`)."""
    state, stats = carry.state, carry.obs_stats
    deterministic = loop.evaluate(state, stats, episodes, 0, True)
    stochastic = None
    if evaluates_both_modes(loop.agent) and not loop.evaluates_alongside:
        stochastic = loop.evaluate(state, stats, episodes, 0, False)
    for g, recorder in enumerate(recorders):
        own = None if stochastic is None else loop.part(stochastic, g)
        recorder.finish(episodes, loop.part(deterministic, g), own)


class Watch:
    """The :class:`Recorder` of the API's drivers (:func:`jaxrl.training.train_until`,
    ``train_gymnasium``): it keeps every period's metrics in memory (:meth:`metrics` joins
    them), asks ``stop`` after each evaluation (:meth:`stops`, :func:`train_periods`'s
    ``on_period``) and tells ``progress``.

    ``progress``, when given, is called after each evaluation with one payload for every
    driver: ``env_steps``, ``eval_return`` (mean over seeds), ``eval_returns`` (``[S]``),
    ``seconds`` (since the watch began), ``state`` (the agent state: unstacked with
    ``single``), ``carry`` (the loop's carry after the period: the caller may keep it) and
    ``metrics`` (the period's, ``[S, C]`` per collection). The carry comes as a checkpoint
    would (``checkpoint_due`` is True with ``progress``): this recorder's checkpoint is
    the payload.

    Args:
      loop: the loop it watches (one setting).
      stop: ``eval_returns [S, periods so far] -> bool`` (a single seed's latest return, a
        float, with ``single``): True ends the run after that evaluation.
      progress: the callback above.
      single: one unbatched seed (``train_gymnasium(num_seeds=None)``).
    """

    def __init__(
        self,
        loop: Loop,
        stop: Callable[[Any], Any] | None = None,
        progress: Callable[[dict], None] | None = None,
        single: bool = False,
    ) -> None:
        for name, given in (("stop", stop), ("progress", progress)):
            if given is not None and not callable(given):
                raise TypeError(f"{name} must be a function or None, got {given!r}")
        self.loop, self.stop, self.progress, self.single = loop, stop, progress, single
        self.period, self.num_periods, self.env_steps = 0, loop.layout.num_periods, 0
        self.eval_returns = np.zeros(0)
        self.periods: list[dict[str, np.ndarray]] = []
        self.final: tuple[np.ndarray, np.ndarray | None] | None = None
        self._start = time.perf_counter()

    def log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        self.eval_returns, self.env_steps = np.asarray(returns), env_steps

    def end_period(self, metrics: dict[str, np.ndarray], first_update: int) -> None:
        del first_update  # the periods' metrics are kept whole
        self.periods.append(metrics)
        self.period += 1
        self.log_evals(metrics["eval/return"], int(np.asarray(metrics["env_steps"])[0, -1]))

    def stops(self, *_: Any) -> bool:
        """Whether ``stop`` ends the run after the latest evaluation (:func:`stop_requested`)."""
        history = np.stack([np.asarray(p["eval/return"]) for p in self.periods], axis=1)
        return stop_requested(self.stop, history, self.single)

    def checkpoint_due(self) -> bool:
        return self.progress is not None

    def save(self, tree: Any) -> None:
        carry = self.loop.from_checkpoint(tree)
        state = carry.state
        if self.single:
            state = jax.tree_util.tree_map(lambda x: x[0], state)
        self.progress(
            {
                "env_steps": self.env_steps,
                "eval_return": float(np.mean(self.eval_returns)),
                "eval_returns": self.eval_returns,
                "seconds": time.perf_counter() - self._start,
                "state": state,
                "carry": carry,
                "metrics": self.periods[-1],
            }
        )

    def finish(
        self, episodes: int, deterministic: np.ndarray, stochastic: np.ndarray | None
    ) -> None:
        self.final = (deterministic, stochastic)

    def metrics(self) -> dict[str, np.ndarray]:
        """The run's metrics so far: :func:`join_periods` of its periods."""
        return join_periods(self.periods)


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
    verdict = stop(float(returns[0, -1]) if single else returns)
    if np.shape(verdict) != () or np.asarray(verdict).dtype != bool:
        raise TypeError(f"stop must return one bool, got {verdict!r}")
    return bool(verdict)

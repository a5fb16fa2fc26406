"""A run's period loop: the :class:`~jaxrl.training.loop.Loop` for a configuration
(:func:`~jaxrl.training.run.make_loop`), and the loop that drives it
(:func:`~jaxrl.training.run.run_periods`): the initial policy's evaluation, the evaluation
periods left, the final policy's evaluation, each reported to one
:class:`~jaxrl.training.run.Recorder` per setting of the loop.

:func:`jaxrl.runs.train_run` drives it with a recorder that writes a run directory
(:class:`jaxrl.runs.bookkeeping.RunBook`); research code may pass its own::

    loop = make_loop(config, config.make_agent())
    run_periods(loop, [recorder], loop.init(), start_steps=0, done=0, eval_episodes=10)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes
from jaxrl.training.loop import Loop
from jaxrl.training.periods import drive
from jaxrl.training.sharding import SeedPlacement, several_processes

if TYPE_CHECKING:
    from jaxrl.algorithms.protocol import Agent
    from jaxrl.config.run_config import RunConfig


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


def make_loop(config: RunConfig, agent: Agent) -> Loop:
    """The :class:`jaxrl.training.loop.Loop` that trains ``config`` (``config.backend``) with
    ``agent``.

    Raises:
      ValueError: a host-driver run in a job of several processes.
    """
    if config.backend == "jax":
        from jaxrl.training.jax_loop import JaxLoop

        return JaxLoop([agent], config.env, [config], SeedPlacement.for_job())
    if several_processes():
        raise ValueError(
            f"several processes need the jitted driver (a gymnax or Brax id): {config.env} "
            "runs on the host driver"
        )
    from jaxrl.training.gymnasium_driver import HostLoop

    return HostLoop(agent, config.env, config)


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

    The initial policy is evaluated at period 0; then each period left (at most
    ``stop_after_periods`` of them) trains and evaluates, each setting's share of its metrics
    goes to its recorder, and a checkpoint is taken where due; after the last period of the
    run the final policy is evaluated (``eval_episodes`` per seed and mode, evaluation seed
    0). ``stop``, asked after every period but the run's last, ends the call there with a
    checkpoint; ``on_period(period, env_steps, returns per setting)`` returning True ends it
    without one (pruned).
    """
    carry = loop.start(carry, start_steps)
    try:
        if recorders[0].period == 0:  # the learning curve's first point
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
    :func:`jaxrl.training.periods.drive`. Returns the carry after the last period trained."""
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

    periods = loop.layout.periods_after(done)
    return drive(loop.run_period, carry, periods[:stop_after_periods], after)


def final_evaluations(loop: Loop, recorders: Sequence[Recorder], carry: Any, episodes: int) -> None:
    """The final policy of each setting evaluated deterministically and (NPG, TRPO)
    stochastically, ``episodes`` episodes per seed and mode on evaluation seed 0, told to
    its recorder (:meth:`Recorder.finish`)."""
    state, stats = carry.state, carry.obs_stats
    deterministic = loop.evaluate(state, stats, episodes, 0, True)
    stochastic = None
    if evaluates_both_modes(loop.agent):
        stochastic = loop.evaluate(state, stats, episodes, 0, False)
    for g, recorder in enumerate(recorders):
        own = None if stochastic is None else loop.part(stochastic, g)
        recorder.finish(episodes, loop.part(deterministic, g), own)

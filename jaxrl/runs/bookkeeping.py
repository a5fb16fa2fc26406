"""What a training call of :mod:`jaxrl.runs.runner` writes to a run directory as it goes
(:class:`~jaxrl.runs.bookkeeping.RunBook`, the period loop's recorder,
:class:`jaxrl.training.run.Recorder`: metrics, checkpoints, the progress bar, the plot, the
final evaluation) and what it returns (:class:`TrainResult`)."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.files import DamagedFile
from jaxrl.config.run_config import RunConfig
from jaxrl.runs.checkpoints import CheckpointError, CheckpointStore
from jaxrl.runs.metrics import Columns, MetricsLogger, evaluation_means
from jaxrl.runs.plots import plot_runs
from jaxrl.runs.progress import RunProgress
from jaxrl.runs.report import FinalEvaluation
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.tracking import DEFAULT_TRACKING, NoTracker, Tracking, open_tracker
from jaxrl.training.sharding import is_primary


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What a call of :func:`~jaxrl.runs.runner.train_run` did.

    Attributes:
      run_dir: the run directory.
      config: the run's configuration.
      period: evaluation periods completed (in total, over all resumes).
      num_periods: evaluation periods of the whole run.
      env_steps: env steps per seed completed.
      eval_returns: the latest evaluation return of each seed.
      checkpoint: the newest checkpoint directory (None if none was written).
      plot: the learning-curve image.
      seconds: wall time of this call.
      final: evaluations of the final policy (when this call finished the run), else None.
    """

    run_dir: RunDir
    config: RunConfig
    period: int
    num_periods: int
    env_steps: int
    eval_returns: np.ndarray
    checkpoint: Path | None
    plot: Path
    seconds: float
    final: FinalEvaluation | None = None

    @property
    def finished(self) -> bool:
        """Whether the run reached its last period."""
        return self.period >= self.num_periods


def update_columns(
    metrics: dict[str, np.ndarray],
    period: int,
    steps_offset: int = 0,
    first_update: int | None = None,
) -> Columns:
    """The rows of a period's per-update metrics ``[S, U]``, one per seed and update
    (seed-major), as :data:`jaxrl.runs.metrics.Columns`; ``steps_offset`` is added to
    ``env_steps`` (the backends count from the run's start); ``first_update`` numbers the
    period's first collection (default: whole periods of ``U`` before it)."""
    per_update = {k: np.asarray(v) for k, v in metrics.items() if not k.startswith("eval/")}
    num_seeds, updates = per_update["env_steps"].shape
    first = (period - 1) * updates + 1 if first_update is None else first_update
    columns = {name: value.reshape(-1) for name, value in per_update.items()}
    columns.update(
        seed=np.repeat(np.arange(num_seeds), updates),
        period=np.full(num_seeds * updates, period),
        update=np.tile(np.arange(first, first + updates), num_seeds),
        env_steps=columns["env_steps"].astype(np.int64) + steps_offset,
    )
    return columns


def checkpoint_env_steps(store: CheckpointStore, steps: list[int]) -> dict[int, int]:
    """``{step: env steps per seed}`` of the finalized ``steps`` (the env steps of the policy
    each holds, from its metadata); a step whose metadata does not read is left out."""
    found = {}
    for step in steps:
        with contextlib.suppress(CheckpointError, KeyError, TypeError, ValueError):
            found[step] = int(store.metadata(step)["env_steps"])
    return found


def best_checkpoint(run_dir: RunDir, steps: list[int]) -> list[int]:
    """Of the run's finalized checkpoint ``steps``, the one whose policy's evaluation during
    training (the ``evals.csv`` rows of its env steps) has the best mean across seeds (the
    earliest of equals), as a list of one; empty where none of them was evaluated. The run's
    :class:`~jaxrl.runs.checkpoints.CheckpointStore` keeps it whatever its age."""
    try:
        means = evaluation_means(run_dir.evals_csv)
    except DamagedFile:  # no evaluation to go by: the newest checkpoints alone are kept
        return []
    held = checkpoint_env_steps(CheckpointStore(run_dir.checkpoints), steps)
    scored = {
        step: means[env_steps][1]
        for step, env_steps in held.items()
        if env_steps in means and np.isfinite(means[env_steps][1])
    }
    return [max(scored, key=lambda step: (scored[step], -step))] if scored else []


class _NoMetrics:
    """The metrics of a process that writes none (not process 0 of a job)."""

    def log_updates(self, rows: Any) -> None: ...

    def log_evals(self, rows: Any) -> None: ...

    def close(self) -> None: ...


class RunBook:
    """The bookkeeping of one run's training call (:mod:`jaxrl.runs.runner`): metrics,
    checkpoints, progress, the plot at the end, final evaluation (written by the primary
    process only, :func:`jaxrl.training.sharding.is_primary`). ``period`` and ``env_steps``
    are where the run stands; the runner advances them."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: RunDir,
        store: CheckpointStore,
        start_period: int,
        start_steps: int,
        elapsed: float,
        resumed: bool,
        num_periods: int,
        total_steps: int,
        progress: bool,
        tracking: Tracking = DEFAULT_TRACKING,
    ) -> None:
        self.config, self.run_dir, self.store = config, run_dir, store
        self.period, self.env_steps = start_period, start_steps
        self.num_periods = num_periods
        self.elapsed0, self.started = elapsed, time.perf_counter()
        self.primary = is_primary()
        # A run resumed without a checkpoint starts over: its files are cleared (period -1),
        # and every run that starts at period 0 first logs the initial policy's evaluation.
        self.metrics: MetricsLogger | _NoMetrics = _NoMetrics()
        if self.primary:
            self.metrics = MetricsLogger(
                run_dir.path,
                config.num_seeds,
                resume_period=(start_period if start_period > 0 else -1) if resumed else None,
                resume_steps=start_steps,
                tensorboard=tracking.tensorboard,
            )
        self.tracker = open_tracker(tracking, run_dir) if self.primary else NoTracker()
        if start_period == 0 and self.primary:
            run_dir.final_eval.unlink(missing_ok=True)
        self.final: FinalEvaluation | None = None
        self.eval_returns = np.full(config.num_seeds, np.nan)
        self.checkpoint: Path | None = (
            run_dir.checkpoints / str(start_period) if start_period in store.steps() else None
        )
        description = f"{config.algo.upper()} {config.env}" + (
            f" x{config.num_seeds}" if config.num_seeds > 1 else ""
        )
        self.progress = RunProgress(
            description, total_steps, config.num_seeds, start_steps=start_steps
        )
        if not progress or not self.primary:
            self.progress.console.quiet = True

    def wall_time(self) -> float:
        return self.elapsed0 + time.perf_counter() - self.started

    def finish(
        self, episodes: int, deterministic: np.ndarray, stochastic: np.ndarray | None
    ) -> None:
        """After the last period: keep the final policy's evaluation (``final_eval.json``)."""
        final = FinalEvaluation(episodes, self.env_steps, deterministic, stochastic)
        self.final = final
        if self.primary:
            final.save(self.run_dir.final_eval)
        self.tracker.log_final(final)

    def end_period(self, metrics: dict[str, np.ndarray], first_update: int) -> None:
        """Log one more evaluation period (:meth:`jaxrl.training.run.Recorder.end_period`):
        its rows of ``updates.csv`` and its evaluation."""
        self.period += 1
        updates = update_columns(metrics, self.period, first_update=first_update)
        self.env_steps = int(metrics["env_steps"][0, -1])
        self.eval_returns = np.asarray(metrics["eval/return"], np.float64)
        self.metrics.log_updates(updates)
        self.tracker.log_updates(updates)
        # The policy evaluated: the period's last (or, evaluated alongside, its first).
        self.log_evals(self.eval_returns, int(metrics["eval/env_steps"][0]))
        returns = self.eval_returns
        self.progress.update(self.env_steps, float(np.mean(returns)), float(np.std(returns)))

    def log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        """Log each seed's evaluation ``returns [S]`` after ``env_steps`` env steps."""
        returns = np.asarray(returns, np.float64)
        seeds = len(returns)
        columns = {
            "seed": np.arange(seeds),
            "period": np.full(seeds, self.period),
            "env_steps": np.full(seeds, env_steps),
            "eval_return": returns,
            "wall_time": np.full(seeds, round(self.wall_time(), 3)),
        }
        self.metrics.log_evals(columns)
        self.tracker.log_evals(columns)

    def checkpoint_due(self) -> bool:
        every = self.config.checkpoint_every
        return self.period >= self.num_periods or (every > 0 and self.period % every == 0)

    def save(self, tree: Any) -> None:
        """Checkpoint ``tree`` as this period, in the background (the primary process; the
        others only note where it is). The learning curve is drawn when the training call
        ends (``plot``); ``jaxrl plot`` draws it from the metrics at any time."""
        self.checkpoint = self.run_dir.checkpoints / str(self.period)
        if not self.primary:
            return
        self.store.save(
            self.period,
            tree,
            {
                "period": self.period,
                "env_steps": self.env_steps,
                "elapsed": self.wall_time(),
                "algo": self.config.algo,
                "env": self.config.env,
                "backend": self.config.backend,
            },
        )

    def plot(self) -> Path:
        if not self.primary:
            return self.run_dir.plot
        return plot_runs([self.run_dir.path], self.run_dir.plot)

    def close(self) -> None:
        """Finish the checkpoint writes and the metrics; the trackers get the learning curve
        as drawn last (``plot``)."""
        self.store.close()
        self.metrics.close()
        self.tracker.close(self.run_dir.plot)

    def result(self) -> TrainResult:
        return TrainResult(
            run_dir=self.run_dir,
            config=self.config,
            period=self.period,
            num_periods=self.num_periods,
            env_steps=self.env_steps,
            eval_returns=self.eval_returns,
            checkpoint=self.checkpoint,
            plot=self.run_dir.plot,
            seconds=time.perf_counter() - self.started,
            final=self.final,
        )

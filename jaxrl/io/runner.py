"""Training, resuming and evaluating runs kept in a run directory (:mod:`jaxrl.io.run_dir`).

One loop for both drivers (:mod:`jaxrl.io.backends`): the run's backend gives a fresh or
restored carry and its ``run_period``; after each evaluation period the runner writes the
metrics, updates the progress bar and, every ``checkpoint_every`` periods and at the end,
checkpoints what the backend keeps (the jitted driver's whole ``TrainCarry``, bit-identical
on resume; the host driver's ``HostCarry``, resumed on fresh environments with a seed
offset).

In a job of several processes (:func:`jaxrl.training.initialize_distributed`) every process
runs this loop on its share of the seeds; each period's metrics, the evaluations and the
checkpoints are gathered whole to every process, and process 0 alone writes the run
directory (``config.json``, CSVs, TensorBoard, plots, checkpoints, ``final_eval.json``). A
resumed run reads its checkpoint in every process (the run directory must be on a
filesystem every process reads).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes
from jaxrl.io.backends import resolve_backend, run_backend, seed_keys
from jaxrl.io.checkpoints import CheckpointError, CheckpointStore
from jaxrl.io.config import RunConfig
from jaxrl.io.metrics import MetricsLogger
from jaxrl.io.plots import plot_runs
from jaxrl.io.progress import RunProgress
from jaxrl.io.report import FinalEvaluation
from jaxrl.io.run_dir import RunDir
from jaxrl.training.sharding import barrier, is_primary, several_processes


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What a call of :func:`train_run` did.

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


@dataclasses.dataclass(frozen=True)
class LoadedRun:
    """A run's policy loaded from a checkpoint (:func:`load_run`).

    Attributes:
      config: the run's configuration.
      agent: the algorithm object.
      state: the agent state; on JAX runs every leaf has a leading seed axis.
      carry: the whole ``TrainCarry`` of a JAX run (None for gymnasium runs).
      metadata: the checkpoint's metadata (``period``, ``env_steps``, ...).
      step: the checkpoint step (the period it was written after).
    """

    config: RunConfig
    agent: Any
    state: Any
    carry: Any
    metadata: dict[str, Any]
    step: int


class _NoMetrics:
    """The metrics of a process that writes none (not process 0 of a job)."""

    def log_updates(self, rows: Any) -> None:
        del rows

    def log_evals(self, rows: Any) -> None:
        del rows

    def close(self) -> None:
        pass


class _Run:
    """Shared bookkeeping of a training call: metrics, checkpoints, progress, plot (written
    by the primary process only, :func:`jaxrl.training.sharding.is_primary`)."""

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
            )
        if start_period == 0 and self.primary:
            run_dir.final_eval.unlink(missing_ok=True)
        self.final: FinalEvaluation | None = None
        self.eval_returns = np.full(config.num_seeds, np.nan)
        self.checkpoint: Path | None = (
            run_dir.checkpoints / str(start_period) if start_period in store.steps() else None
        )
        self.saved_period = start_period if self.checkpoint is not None else -1
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

    def start(self, agent: Any, state: Any, obs_stats: Any) -> None:
        """At period 0, evaluate the initial policy: the learning curve's first point."""
        if self.period == 0:
            returns = evaluate_policy(
                self.config, agent, state, obs_stats, self.config.eval_episodes
            )
            self._log_evals(returns, 0)

    def finish(self, agent: Any, state: Any, obs_stats: Any) -> None:
        """After the last period: evaluate the final policy (``final_eval.json``)."""
        if self.period >= self.num_periods:
            self.final = final_evaluation(self.config, agent, state, obs_stats, self.env_steps)
            if self.primary:
                self.final.save(self.run_dir.final_eval)

    def end_period(
        self, update_rows: list[dict[str, Any]], eval_returns: np.ndarray, env_steps: int
    ) -> None:
        """Log one evaluation period (``self.period`` already advanced)."""
        self.env_steps = env_steps
        self.eval_returns = np.asarray(eval_returns, np.float64)
        self.metrics.log_updates(update_rows)
        self._log_evals(self.eval_returns, env_steps)
        per_seed = jnp.asarray(self.eval_returns)
        self.progress.update(env_steps, float(jnp.mean(per_seed)), float(jnp.std(per_seed)))

    def _log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        wall = self.wall_time()
        self.metrics.log_evals(
            [
                {
                    "seed": seed,
                    "period": self.period,
                    "env_steps": env_steps,
                    "eval_return": float(value),
                    "wall_time": round(wall, 3),
                }
                for seed, value in enumerate(returns)
            ]
        )

    def checkpoint_due(self) -> bool:
        every = self.config.checkpoint_every
        return self.period >= self.num_periods or (every > 0 and self.period % every == 0)

    def save(self, tree: Any) -> None:
        """Checkpoint ``tree`` as this period (in the background) and redraw the plot (the
        primary process; the others only note where it is)."""
        self.checkpoint = self.run_dir.checkpoints / str(self.period)
        self.saved_period = self.period
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
        if self.period < self.num_periods:  # the last one is drawn after the final evaluation
            self.plot()

    def plot(self) -> Path:
        if not self.primary:
            return self.run_dir.plot
        return plot_runs([self.run_dir.path], self.run_dir.plot)

    def close(self) -> None:
        self.store.close()
        self.metrics.close()

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


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def train_run(
    config: RunConfig,
    run_dir: RunDir,
    *,
    resume: bool = False,
    stop_after_periods: int | None = None,
    stop: Callable[[], bool] | None = None,
    progress: bool = True,
    on_setup: Callable[[str], None] | None = None,
    on_period: Callable[[int, int, np.ndarray], None] | None = None,
) -> TrainResult:
    """Train (or resume) the run ``config`` in ``run_dir``.

    Args:
      config: the run's configuration (saved to ``config.json`` first).
      run_dir: its directory.
      resume: continue from the newest checkpoint that restores (else from scratch).
      stop_after_periods: end after this many periods of this call, as an interruption would.
      stop: asked after every evaluation period but the last; ``True`` ends the call there,
        after checkpointing that period, so that a later ``resume=True`` call continues from
        it (a wall-time budget: ``lambda: time.time() > deadline``). In a job of several
        processes it must answer the same on every process.
      progress: show the progress bar on stderr.
      on_setup: told once the run is set up (and of each damaged checkpoint it skipped).
      on_period: called after each period, before ``stop``, with the period, the env steps
        per seed and each seed's evaluation return ``[num_seeds]`` (a tuner's reports).

    In a job of several processes every process calls it with the same arguments; process 0
    alone writes ``run_dir`` (see the module docstring).

    Raises:
      ValueError, TypeError: invalid configuration (before anything is trained).
      KeyboardInterrupt: after finishing pending checkpoint writes.
    """
    agent = config.make_agent()
    if is_primary():
        config.save(run_dir.config)
    backend = run_backend(config, agent)
    store = CheckpointStore(run_dir.checkpoints)
    say = on_setup or (lambda line: warnings.warn(line, stacklevel=3))
    restored, meta = _resume_point(store, backend.template(), resume, say)
    carry = backend.fresh() if restored is None else backend.from_checkpoint(restored)
    layout = backend.layout
    start_period = meta["period"] if meta else 0
    # A checkpoint records its env steps (periods before it may differ in length).
    start_steps = meta.get("env_steps", start_period * layout.steps_per_period) if meta else 0
    done = start_steps // layout.steps_per_collect  # collections so far
    run = _Run(
        config,
        run_dir,
        store,
        start_period=start_period,
        start_steps=start_steps,
        elapsed=meta["elapsed"] if meta else 0.0,
        resumed=resume,
        num_periods=start_period + len(layout.periods_after(done)),
        total_steps=layout.total_steps,
        progress=progress,
    )
    if on_setup is not None:
        on_setup(_setup_message(run))
    try:
        with run.progress, backend.periods(carry, start_steps) as (carry, run_period):
            run.start(agent, carry.state, carry.obs_stats)
            carry = _train_periods(
                run,
                backend,
                carry,
                run_period,
                layout.periods_after(done),
                done,
                stop_after_periods,
                stop,
                on_period,
            )
            run.finish(agent, carry.state, carry.obs_stats)
        run.plot()
    finally:
        run.close()
    return run.result()


def _train_periods(
    run: _Run,
    backend: Any,
    carry: Any,
    run_period: Callable[[Any, int], tuple[Any, dict[str, Any]]],
    periods: Sequence[int],
    done: int,
    stop_after_periods: int | None,
    stop: Callable[[], bool] | None,
    on_period: Callable[[int, int, np.ndarray], None] | None = None,
) -> Any:
    """The evaluation periods of one :func:`train_run` call (``periods``: the collections of
    each; ``done``: collections before them): each period trained, its metrics gathered and
    logged, and checkpointed when due or when ``stop`` ends the call there. Returns the
    carry after the last period trained."""
    for count, collections in enumerate(periods):
        if stop_after_periods is not None and count >= stop_after_periods:
            break
        carry, metrics = run_period(carry, collections)
        run.period += 1
        metrics = backend.gather(metrics)
        run.end_period(
            update_rows(metrics, run.period, first_update=done + 1),
            metrics["eval/return"],
            int(metrics["eval/env_steps"][0]),
        )
        done += collections
        if on_period is not None:
            on_period(run.period, run.env_steps, run.eval_returns)
        stopping = run.period < run.num_periods and stop is not None and stop()
        if run.checkpoint_due() or stopping:
            run.save(backend.to_checkpoint(carry))  # gathered by every process
        if stopping:
            break
    return carry


__all__ = [
    "LoadedRun",
    "TrainResult",
    "check_config",
    "evaluate_policy",
    "evaluate_run",
    "final_evaluation",
    "load_run",
    "resolve_backend",
    "seed_keys",
    "train_run",
    "update_rows",
]


def check_config(config: RunConfig) -> None:
    """Build what the run needs (agent, environment, driver) without training.

    Raises:
      ValueError, TypeError: the problem, naming the field or setting.
    """
    run_backend(config, config.make_agent()).check()


def _resume_point(
    store: CheckpointStore, like: Any, resume: bool, say: Callable[[str], None]
) -> tuple[Any, dict[str, Any] | None]:
    """The newest checkpoint that restores (every process reads it; a damaged newer one is
    skipped and ``say`` told why) and its metadata, or None; the primary process then
    removes newer and incomplete checkpoints."""
    tree, meta, skipped = None, None, []
    if resume and store.latest_step() is not None:
        tree, meta, skipped = store.restore_newest(like)
    for _, reason in skipped if is_primary() else ():
        say(f"{reason}; skipped it, resuming from an older checkpoint")
    barrier("jaxrl-resume-point")  # every process has read it before any is removed
    if is_primary():
        store.prune_after(meta["period"] if meta else 0)
    return tree, meta


def update_rows(
    metrics: dict[str, np.ndarray],
    period: int,
    steps_offset: int = 0,
    first_update: int | None = None,
) -> list[dict[str, Any]]:
    """One row per seed and update of a period's per-update metrics ``[S, U]``;
    ``steps_offset`` is added to ``env_steps`` (the backends count from the run's start);
    ``first_update`` numbers the period's first collection (default: whole periods of ``U``
    before it)."""
    per_update = {k: np.asarray(v) for k, v in metrics.items() if not k.startswith("eval/")}
    num_seeds, updates = per_update["env_steps"].shape
    first = (period - 1) * updates + 1 if first_update is None else first_update
    rows = []
    for seed in range(num_seeds):
        for index in range(updates):
            row = {name: value[seed, index] for name, value in per_update.items()}
            row.update(seed=seed, period=period, update=first + index)
            row["env_steps"] = int(row["env_steps"]) + steps_offset
            rows.append(row)
    return rows


def _setup_message(run: _Run) -> str:
    config = run.config
    where = (
        f"resuming at period {run.period}/{run.num_periods} ({run.env_steps:,} env steps)"
        if run.period
        else config.describe()
    )
    seeds = f"{config.num_seeds} seed{'s' if config.num_seeds != 1 else ''}"
    driver = "in one jitted program" if config.backend == "jax" else "on the host driver"
    if several_processes():
        driver += f" over {jax.device_count()} devices of {jax.process_count()} processes"
    return (
        f"{config.algo.upper()} on {config.env}: {seeds} {driver}, {where}; "
        f"run directory {run.run_dir.path}"
    )


# ---------------------------------------------------------------------------------------------
# Loading and evaluation
# ---------------------------------------------------------------------------------------------


def load_run(run_dir: str | Path | RunDir, step: int | None = None) -> LoadedRun:
    """Load a run's policy from its newest finalized checkpoint (or ``step``).

    Raises:
      CheckpointError: the run has no finalized checkpoint (or none at ``step``).
    """
    run_dir = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    config = RunConfig.load(run_dir.config)
    agent = config.make_agent()
    store = CheckpointStore(run_dir.checkpoints)
    if store.latest_step() is None:
        raise CheckpointError(f"run {str(run_dir.path)!r} has no finished checkpoint yet")
    backend = run_backend(config, agent)
    tree, meta = store.restore(backend.template(), step)
    carry = backend.from_checkpoint(tree)
    return LoadedRun(config, agent, carry.state, carry, meta, meta["step"])


def evaluate_policy(
    config: RunConfig,
    agent: Any,
    state: Any,
    obs_stats: Any,
    episodes: int,
    seed: int = 0,
    deterministic: bool | None = None,
) -> np.ndarray:
    """Mean return per seed ``[S]`` of ``episodes`` episodes of each seed's policy (``state``
    and ``obs_stats`` with a leading seed axis), on the run's environments. The policy acts
    as the algorithm evaluates (``agent.evaluates_deterministically``) unless
    ``deterministic`` says otherwise. Compiled once per agent, environment, episode count and
    mode."""
    if deterministic is None:
        deterministic = agent.evaluates_deterministically
    backend = run_backend(config, agent)
    return backend.evaluate(state, obs_stats, episodes, seed, bool(deterministic))


def final_evaluation(
    config: RunConfig, agent: Any, state: Any, obs_stats: Any, env_steps: int
) -> FinalEvaluation:
    """Evaluate the final policy deterministically and (NPG/TRPO) stochastically,
    ``eval_episodes`` episodes per seed and mode; the deterministic figure is what
    ``jaxrl evaluate RUN_DIR --episodes <eval_episodes>`` reproduces for a deterministic
    evaluator."""
    episodes = config.eval_episodes
    deterministic = evaluate_policy(config, agent, state, obs_stats, episodes, 0, True)
    stochastic = None
    if evaluates_both_modes(agent):
        stochastic = evaluate_policy(config, agent, state, obs_stats, episodes, 0, False)
    return FinalEvaluation(episodes, env_steps, deterministic, stochastic)


def evaluate_run(
    run_dir: str | Path | RunDir, episodes: int = 10, seed: int = 0, step: int | None = None
) -> tuple[LoadedRun, np.ndarray]:
    """Evaluate a run's checkpointed policy: ``(loaded run, mean return per seed)``.

    Each seed's policy plays ``episodes`` episodes (deterministically where the algorithm
    evaluates so: DDPG always, NPG/TRPO with ``deterministic_eval``).
    """
    loaded = load_run(run_dir, step)
    returns = evaluate_policy(
        loaded.config, loaded.agent, loaded.state, loaded.carry.obs_stats, episodes, seed
    )
    return loaded, returns

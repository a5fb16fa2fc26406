"""Training, resuming and evaluating runs kept in a run directory (:mod:`jaxrl.runs.run_dir`).

The runner opens a run directory's books (:class:`~jaxrl.runs.bookkeeping.RunBook`: where
the run stands, from its newest checkpoint that restores) and hands them to the period loop,
:func:`jaxrl.training.run.run_periods`, as its recorders: after each evaluation period they
write the metrics, update the progress bar and, every ``checkpoint_every`` periods and at the
end, checkpoint what the loop keeps (the jitted driver's whole ``TrainCarry``, bit-identical
on resume; the host driver's ``HostCarry``, resumed on fresh environments with a seed
offset). A sweep group (:func:`train_group`) is the same loop over several settings, each
with its run directory.

In a job of several processes (:func:`jaxrl.training.initialize_distributed`) every process
runs this loop on its share of the seeds; each period's metrics, the evaluations and the
checkpoints are gathered whole to every process, and process 0 alone writes the run
directory (``config.json``, CSVs, TensorBoard, plots, checkpoints, ``final_eval.json``). A
resumed run reads its checkpoint in every process (the run directory must be on a
filesystem every process reads).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from jaxrl.algorithms.protocol import Agent
from jaxrl.config.run_config import RunConfig
from jaxrl.core._checks import check_bool
from jaxrl.runs.bookkeeping import RunBook, TrainResult, best_checkpoint
from jaxrl.runs.build import make_loop
from jaxrl.runs.checkpoints import CheckpointError, CheckpointStore
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.tracking import DEFAULT_TRACKING, Tracking
from jaxrl.training.loop import Loop
from jaxrl.training.run import run_periods
from jaxrl.training.sharding import SeedPlacement, barrier, is_primary, several_processes

if TYPE_CHECKING:
    from jaxrl.training.jax_loop import JaxLoop


@dataclasses.dataclass(frozen=True)
class LoadedRun:
    """A run's whole checkpoint as its driver carries it (:func:`load_run`); a policy to act
    with is :func:`jaxrl.runs.policy.load`'s.

    Attributes:
      config: the run's configuration.
      agent: the algorithm object.
      state: the agent state; every leaf has a leading seed axis ``[S]``.
      carry: what the driver checkpointed: the jitted driver's whole ``TrainCarry``, the
        host driver's ``HostCarry``; both hold the agent ``state`` and the observation
        statistics ``obs_stats`` (None without observation normalization), seed axis first.
      metadata: the checkpoint's metadata (``period``, ``env_steps``, ...).
      step: the checkpoint step (the period it was written after).
    """

    config: RunConfig
    agent: Agent
    state: Any
    carry: Any
    metadata: dict[str, Any]
    step: int


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def _run_dir_at(path: Path, resume: bool) -> RunDir:
    """The run directory at ``path``: created by process 0 (a new run's must not exist or be
    empty; a resumed one's is created where it does not exist yet)."""
    if not is_primary():
        return RunDir(path)
    if not resume:
        return RunDir.create(path)
    path.mkdir(parents=True, exist_ok=True)
    return RunDir(path)


def _check_arguments(config: Any, run_dir: Any, **flags: Any) -> None:
    """``TypeError`` naming the argument of :func:`train_run` that is not what it takes."""
    if not isinstance(config, RunConfig):
        raise TypeError(
            f"config must be a RunConfig (jaxrl.make_config(algo, env, ...) makes one), got "
            f"{type(config).__name__} {config!r:.80}"
        )
    for name, flag in flags.items():
        check_bool(name, flag)
    if not isinstance(run_dir, RunDir | str | os.PathLike):
        raise TypeError(f"run_dir must be a path, got {type(run_dir).__name__} {run_dir!r:.60}")


def train_run(
    config: RunConfig,
    run_dir: RunDir | str | Path,
    *,
    resume: bool = False,
    stop_after_periods: int | None = None,
    stop: Callable[[], bool] | None = None,
    progress: bool = True,
    on_setup: Callable[[str], None] | None = None,
    on_period: Callable[[int, int, np.ndarray], None] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
) -> TrainResult:
    """Train (or resume) the run ``config`` in ``run_dir``.

    Args:
      config: the run's configuration (saved to ``config.json`` first).
      run_dir: its directory: a path is created (it must not exist or be empty), or, with
        ``resume``, continued (created if it does not exist).
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
      tracking: the experiment trackers it logs to (:mod:`jaxrl.runs.tracking`; default
        TensorBoard).

    In a job of several processes every process calls it with the same arguments; process 0
    alone writes ``run_dir`` (see the module docstring).

    Raises:
      ValueError, TypeError: invalid configuration, ``resume`` or ``progress`` no bool,
        ``run_dir`` no path (before anything is trained).
      RunDirError: a new run's path holds files already.
      KeyboardInterrupt: after finishing pending checkpoint writes.
    """
    _check_arguments(config, run_dir, resume=resume, progress=progress)
    agent = config.make_agent()
    if not isinstance(run_dir, RunDir):
        run_dir = _run_dir_at(Path(run_dir), resume)
    # One process trains a run directory at a time (a second one is refused, naming it).
    with run_dir.claimed() if is_primary() else contextlib.nullcontext():
        if is_primary():
            config.save(run_dir.config)
        loop = make_loop(config, agent)
        say = on_setup or (lambda line: warnings.warn(line, stacklevel=3))
        carry, (run,), start_steps, done = _open_books(
            loop, [config], [run_dir], resume, say, progress, tracking
        )
        if on_setup is not None:
            on_setup(_setup_message(run))
        report = _one_setting(on_period)
        try:
            with run.progress:
                run_periods(
                    loop,
                    [run],
                    carry,
                    start_steps,
                    done,
                    config.eval_episodes,
                    stop_after_periods,
                    stop,
                    report,
                )
            run.plot()
        finally:
            run.close()
        return run.result()


def _one_setting(
    on_period: Callable[[int, int, np.ndarray], None] | None,
) -> Callable[[int, int, list[np.ndarray]], bool] | None:
    """A run's ``on_period`` as :func:`run_periods` reports to it: the returns of its one
    setting, and never a stop."""
    if on_period is None:
        return None

    def report(period: int, env_steps: int, returns: list[np.ndarray]) -> bool:
        on_period(period, env_steps, returns[0])
        return False

    return report


def train_group(
    configs: Sequence[RunConfig],
    run_dirs: Sequence[RunDir],
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None = None,
    *,
    resume: bool = False,
    stop: Callable[[], bool] | None = None,
    on_setup: Callable[[str], None] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
) -> JaxLoop:
    """Train the settings ``configs`` of one sweep group (runs on JAX environments that
    differ only in numeric hyperparameters) in one program, each setting's run directory
    written as :func:`train_run` writes it. Returns the loop (its ``compile_seconds``).

    ``on_period(period, env_steps, returns)`` is called after each evaluation period with
    each setting's evaluation returns ``[num_seeds]``; ``True`` stops the group there (its
    runs stay unfinished: a tuner has pruned every setting of the group). ``resume``:
    continue from the newest period every setting has a checkpoint of that restores (else
    from scratch); ``stop`` and ``on_setup`` as in :func:`train_run` (``stop`` checkpoints
    every setting at the period it ends); ``tracking``: the experiment trackers each run
    logs to (:mod:`jaxrl.runs.tracking`).

    In a job of several processes every process calls it with the same arguments: the
    settings x seeds axis is split over every process's devices
    (:meth:`~jaxrl.training.sharding.SeedPlacement.for_job`), and process 0 alone writes
    the run directories (every process reads a resumed group's checkpoints: the sweep
    directory must be on a filesystem every process reads)."""
    from jaxrl.training.jax_loop import JaxLoop

    agents = [config.make_agent() for config in configs]
    loop = JaxLoop(agents, configs[0].env, configs, SeedPlacement.for_job())
    loop.placement.check(loop.num_seeds)
    with contextlib.ExitStack() as claims:  # each run directory, as train_run claims it
        for config, run_dir in zip(configs, run_dirs, strict=True):
            if is_primary():
                claims.enter_context(run_dir.claimed())
                config.save(run_dir.config)
        say = on_setup or (lambda line: None)
        carry, runs, start_steps, done = _open_books(
            loop, configs, run_dirs, resume, say, False, tracking
        )
        if runs[0].period:
            first = runs[0]
            where = f"{first.period}/{first.num_periods} ({first.env_steps:,} env steps)"
            say(f"resuming at period {where}")
        try:
            episodes = configs[0].eval_episodes
            run_periods(
                loop, runs, carry, start_steps, done, episodes, stop=stop, on_period=on_period
            )
            for run in runs:
                run.plot()
        finally:
            for run in runs:
                run.close()
        return loop


def _open_books(
    loop: Loop,
    configs: Sequence[RunConfig],
    run_dirs: Sequence[RunDir],
    resume: bool,
    say: Callable[[str], None],
    progress: bool,
    tracking: Tracking = DEFAULT_TRACKING,
) -> tuple[Any, list[RunBook], int, int]:
    """Where the runs of ``loop`` (one per setting) start: ``(carry, books, env steps per
    seed, collections done)``. With ``resume``, from the newest checkpoint of each run that
    restores (:func:`_resume_point`), their trees joined along the ``[G * S]`` axis; where
    the settings' checkpoints are of different periods (one was damaged), or one has none,
    every run starts over."""

    @functools.cache
    def template() -> Any:  # what one setting's checkpoint holds (its S seeds), when asked
        whole, seeds = loop.checkpoint_template(), configs[0].num_seeds
        if loop.num_settings == 1:
            return whole
        return jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct((seeds, *x.shape[1:]), x.dtype), whole
        )

    # The best-evaluated checkpoint outlives the rotation (jaxrl.load's "best").
    stores = [
        CheckpointStore(run_dir.checkpoints, preserve=functools.partial(best_checkpoint, run_dir))
        for run_dir in run_dirs
    ]
    points = [_resume_point(store, template, resume, say) for store in stores]
    metas = [meta for _, meta in points]
    if all(m is not None for m in metas) and len({m["period"] for m in metas}) == 1:
        trees = [tree for tree, _ in points]
        joined = trees[0] if len(trees) == 1 else jax.tree_util.tree_map(_join, *trees)
        carry = loop.from_checkpoint(joined)
    else:
        if any(m is not None for m in metas):
            say("the settings' checkpoints are of different periods; the group starts over")
            for store in stores if is_primary() else ():
                store.prune_after(-1)
        carry, metas = loop.init(), [None] * len(metas)
    meta = metas[0]
    layout = loop.layout
    start_period = meta["period"] if meta else 0
    # A checkpoint records its env steps (periods before it may differ in length).
    start_steps = meta.get("env_steps", start_period * layout.steps_per_period) if meta else 0
    done = start_steps // layout.steps_per_collect  # collections so far
    num_periods = start_period + len(layout.periods_after(done))
    books = [
        RunBook(config, run_dir, store, start_period, start_steps,
                own["elapsed"] if own else 0.0, resume, num_periods, layout.total_steps,
                progress, tracking)
        for config, run_dir, store, own in zip(configs, run_dirs, stores, metas, strict=True)
    ]  # fmt: skip
    return carry, books, start_steps, done


def _join(*parts: Any) -> Any:
    """Settings' restored arrays ``[S, ...]`` as one ``[G * S, ...]`` array."""
    return jax.numpy.concatenate(parts)


def _resume_point(
    store: CheckpointStore, like: Callable[[], Any], resume: bool, say: Callable[[str], None]
) -> tuple[Any, dict[str, Any] | None]:
    """The newest checkpoint that restores into ``like()`` (asked only when there is one;
    every process reads it; a damaged newer one is skipped and ``say`` told why) and its
    metadata, or None; the primary process then removes newer and incomplete checkpoints."""
    tree, meta, skipped = None, None, []
    if resume and store.latest_step() is not None:
        tree, meta, skipped = store.restore_newest(like())
    for _, reason in skipped if is_primary() else ():
        say(f"{reason}; skipped it, resuming from an older checkpoint")
    barrier("jaxrl-resume-point")  # every process has read it before any is removed
    if is_primary():
        store.prune_after(meta["period"] if meta else 0)
    return tree, meta


def _setup_message(run: RunBook) -> str:
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
# Loading
# ---------------------------------------------------------------------------------------------


def load_run(run_dir: str | Path | RunDir, step: int | None = None) -> LoadedRun:
    """Load a run's whole checkpoint, its newest finalized one (or ``step``'s), onto this
    process's default device (:func:`jaxrl.runs.policy.load` makes a policy of it).

    Raises:
      CheckpointError: the run has no finalized checkpoint (or none at ``step``).
    """
    run_dir = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    config = RunConfig.load(run_dir.config)
    agent = config.make_agent()
    store = CheckpointStore(run_dir.checkpoints)
    if store.latest_step() is None:
        raise CheckpointError(f"run {str(run_dir.path)!r} has no finished checkpoint yet")
    loop = make_loop(config, agent)
    tree, meta = store.restore(loop.checkpoint_template(), step)
    carry = loop.from_checkpoint(tree)
    return LoadedRun(config, agent, carry.state, carry, meta, meta["step"])

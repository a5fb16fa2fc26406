"""Training, resuming and evaluating runs kept in a run directory (:mod:`jaxrl.runs.run_dir`).

One loop for both drivers: the runner drives a :class:`jaxrl.training.loop.Loop`
(:func:`make_loop`: the jitted :class:`jaxrl.training.jax_loop.JaxLoop` or the host
:class:`jaxrl.training.gymnasium_driver.HostLoop`), which gives a fresh or restored carry and
its ``run_period``; after each evaluation period the runner writes the metrics, updates the
progress bar and, every ``checkpoint_every`` periods and at the end, checkpoints what the loop
keeps (the jitted driver's whole ``TrainCarry``, bit-identical on resume; the host driver's
``HostCarry``, resumed on fresh environments with a seed offset). A sweep group
(:func:`train_group`) is the same loop over several settings, each with its run directory.

In a job of several processes (:func:`jaxrl.training.initialize_distributed`) every process
runs this loop on its share of the seeds; each period's metrics, the evaluations and the
checkpoints are gathered whole to every process, and process 0 alone writes the run
directory (``config.json``, CSVs, TensorBoard, plots, checkpoints, ``final_eval.json``). A
resumed run reads its checkpoint in every process (the run directory must be on a
filesystem every process reads).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes
from jaxrl.config.run_config import RunConfig
from jaxrl.runs.bookkeeping import RunBook, TrainResult
from jaxrl.runs.checkpoints import CheckpointError, CheckpointStore
from jaxrl.runs.metrics import Columns
from jaxrl.runs.report import FinalEvaluation
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.tracking import DEFAULT_TRACKING, Tracking
from jaxrl.training.loop import Loop
from jaxrl.training.periods import drive
from jaxrl.training.sharding import SeedPlacement, barrier, is_primary, several_processes

if TYPE_CHECKING:
    from jaxrl.training.jax_loop import JaxLoop


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
    tracking: Tracking = DEFAULT_TRACKING,
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
      tracking: the experiment trackers it logs to (:mod:`jaxrl.runs.tracking`; default
        TensorBoard).

    In a job of several processes every process calls it with the same arguments; process 0
    alone writes ``run_dir`` (see the module docstring).

    Raises:
      ValueError, TypeError: invalid configuration (before anything is trained).
      KeyboardInterrupt: after finishing pending checkpoint writes.
    """
    agent = config.make_agent()
    if is_primary():
        config.save(run_dir.config)
    loop = make_loop(config, agent)
    say = on_setup or (lambda line: warnings.warn(line, stacklevel=3))
    carry, (run,), start_steps, done = _open_books(
        loop, [config], [run_dir], resume, say, progress, tracking
    )
    if on_setup is not None:
        on_setup(_setup_message(run))
    report = None
    if on_period is not None:

        def report(period: int, env_steps: int, returns: list[np.ndarray]) -> bool:
            on_period(period, env_steps, returns[0])
            return False

    try:
        with run.progress:
            _drive(loop, [run], carry, start_steps, done, stop_after_periods, stop, report)
        run.plot()
    finally:
        run.close()
    return run.result()


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
    for config, run_dir in zip(configs, run_dirs, strict=True):
        if is_primary():
            config.save(run_dir.config)
    say = on_setup or (lambda line: None)
    carry, runs, start_steps, done = _open_books(
        loop, configs, run_dirs, resume, say, False, tracking
    )
    if runs[0].period:
        first = runs[0]
        say(
            f"resuming at period {first.period}/{first.num_periods} ({first.env_steps:,} env steps)"
        )
    try:
        _drive(loop, runs, carry, start_steps, done, stop=stop, on_period=on_period)
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

    stores = [CheckpointStore(run_dir.checkpoints) for run_dir in run_dirs]
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


def make_loop(config: RunConfig, agent: Any) -> Loop:
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


def _drive(
    loop: Loop,
    runs: Sequence[RunBook],
    carry: Any,
    start_steps: int,
    done: int,
    stop_after_periods: int | None = None,
    stop: Callable[[], bool] | None = None,
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None = None,
) -> Any:
    """Train the ``runs`` (one per setting of ``loop``) from ``carry``, after ``start_steps``
    env steps and ``done`` collections per seed: the initial policy's evaluation at period 0,
    the periods left (:func:`_train_periods`), the final policy's evaluation after the last
    one. Returns the last carry."""
    carry = loop.start(carry, start_steps)
    try:
        first = runs[0]
        if first.period == 0:  # the learning curve's first point
            episodes = first.config.eval_episodes
            deterministic = loop.agent.evaluates_deterministically
            returns = loop.evaluate(carry.state, carry.obs_stats, episodes, 0, deterministic)
            for g, run in enumerate(runs):
                run.log_evals(loop.part(returns, g), 0)
        periods = loop.layout.periods_after(done)
        carry = _train_periods(
            loop, runs, carry, periods, done, stop_after_periods, stop, on_period
        )
        if first.period >= first.num_periods:
            episodes = first.config.eval_episodes
            finals = _final_evaluations(loop, carry.state, carry.obs_stats, episodes)
            for run, (deterministic, stochastic) in zip(runs, finals, strict=True):
                run.finish(FinalEvaluation(episodes, run.env_steps, deterministic, stochastic))
    finally:
        loop.close()
    return carry


def _train_periods(
    loop: Loop,
    runs: Sequence[RunBook],
    carry: Any,
    periods: Sequence[int],
    done: int,
    stop_after_periods: int | None,
    stop: Callable[[], bool] | None,
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None,
) -> Any:
    """The evaluation periods of one call (``periods``: the collections of each; ``done``:
    collections before them), driven by :func:`jaxrl.training.periods.drive`: after each,
    each setting's share of its metrics logged to its run, and checkpointed when due or when
    ``stop`` ends the call there (``on_period`` returning True ends it without that
    checkpoint: pruned). Returns the carry after the last period trained."""
    first = runs[0]

    def after(carry: Any, metrics: dict[str, Any]) -> bool:
        nonlocal done
        for g, run in enumerate(runs):
            own = loop.part(metrics, g)
            run.period += 1
            updates = update_columns(own, run.period, first_update=done + 1)
            run.end_period(updates, own["eval/return"], int(own["eval/env_steps"][0]))
        done += np.shape(metrics["env_steps"])[1]  # the period's collections
        pruned = on_period is not None and on_period(
            first.period, first.env_steps, [run.eval_returns for run in runs]
        )
        stopping = not pruned and first.period < first.num_periods and stop is not None and stop()
        due = [g for g, run in enumerate(runs) if run.checkpoint_due() or stopping]
        whole = loop.to_checkpoint(carry) if due else None  # gathered by every process
        for g in due:
            runs[g].save(loop.part(whole, g))
        return stopping or pruned

    return drive(loop.run_period, carry, periods[:stop_after_periods], after)


def _final_evaluations(
    loop: Loop, state: Any, obs_stats: Any, episodes: int
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per setting of ``loop``, ``(deterministic [S], stochastic [S] or None)``: the final
    policy evaluated deterministically and (NPG/TRPO) stochastically, ``episodes`` episodes
    per seed and mode, on evaluation seed 0."""
    deterministic = loop.evaluate(state, obs_stats, episodes, 0, True)
    stochastic = None
    if evaluates_both_modes(loop.agent):
        stochastic = loop.evaluate(state, obs_stats, episodes, 0, False)
    return [
        (loop.part(deterministic, g), None if stochastic is None else loop.part(stochastic, g))
        for g in range(loop.num_settings)
    ]


def check_config(config: RunConfig) -> None:
    """Build what the run needs (agent, environment, driver) without training.

    Raises:
      ValueError, TypeError: the problem, naming the field or setting.
    """
    make_loop(config, config.make_agent()).check()


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
    loop = make_loop(config, agent)
    tree, meta = store.restore(loop.checkpoint_template(), step)
    carry = loop.from_checkpoint(tree)
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
    return make_loop(config, agent).evaluate(state, obs_stats, episodes, seed, bool(deterministic))


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

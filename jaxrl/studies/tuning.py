"""Tuning (``jaxrl tune``): an Optuna study over hyperparameters and run settings.

:func:`tune` asks a study (Optuna's ask-and-tell) for a batch of trials, trains the batch as
a study's groups train (:mod:`jaxrl.studies.sweeps`: on a JAX environment, trials that differ
only in numeric hyperparameters train in ONE program over trials x seeds; on a host
environment, one after another), reports each evaluation period and tells the study each
trial's objective. The tuning directory (:mod:`jaxrl.studies.tuning_report`) holds the study's
description, its storage, a run directory per trial, the tables and the best preset file.

**The objective** of a trial is the mean over its seeds (the search seeds) of each seed's
mean evaluation return over the last ``objective_evals`` periods: where training ended, not
a lucky maximum. Each period the trial reports the same statistic over the periods so far.

**Pruning** (Optuna's median pruner by default, after a warm-up of a quarter of the periods
and 5 finished trials): a pruned host trial stops at once, which frees its compute; in a JAX
group a pruned trial stops reporting, and the group stops where all its trials are pruned.

**Workers**: processes on one machine or several may run :func:`tune` on one study (the
same ``storage`` and ``study_name``): each asks its own trials, so none is trained twice;
the study ends when ``trials`` trials are complete, pruned or failed. A worker that starts
takes over the RUNNING trials of dead workers (:mod:`jaxrl.studies.tuning_study`): this
machine's whose process is gone (or that ran before a reboot), and another machine's whose
heartbeat (renewed each evaluation period) is older than a lease
(:data:`~jaxrl.studies.tuning_study.LEASE_SECONDS`; a worker that finds its trial taken over stops
training it and tells nothing, so no trial is trained twice to the end). A trial with a
checkpoint continues from it (the trials of a JAX group from the newest period they all
have), any other is asked again. SIGTERM (``stop``) leaves the trials under way so,
checkpointed at their period.

**Seeds**: the command line's search seeds start at 1000 (``jaxrl train``'s at 0); a preset
file records them, and ``jaxrl train --preset-file`` refuses to report on them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.run_config import RunConfig, check_base
from jaxrl.runs.metrics import read_csv
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.tracking import DEFAULT_TRACKING, Tracking
from jaxrl.studies.grid import Setting, SweepError, groups, make_setting
from jaxrl.studies.search_space import Dimension, TuneError, label
from jaxrl.studies.sweeps import resumed_only
from jaxrl.studies.tuning_report import TuneResult, write_summary
from jaxrl.studies.tuning_study import (
    base_values,
    open_study,
    retry_orphans,
    same_worker,
    this_worker,
    trial_counts,
)
from jaxrl.training.sharding import SeedPlacement, several_processes

TUNE_SEED = 1000
"""The first search seed of ``jaxrl tune`` (``jaxrl train``'s first seed is 0)."""


# ---------------------------------------------------------------------------------------------
# The objective
# ---------------------------------------------------------------------------------------------


def objective(returns: np.ndarray, last: int) -> float:
    """The mean over seeds of each seed's mean return over the last ``last`` evaluations.

    Args:
      returns: ``[P, S]`` evaluation returns of ``P`` periods (the initial policy's
        evaluation not among them) and ``S`` seeds.
      last: evaluations averaged (all of them where there are fewer).
    """
    returns = np.asarray(returns, np.float64)
    if returns.shape[0] == 0:
        return float("nan")
    return float(np.mean(returns[-last:]))


def _trained_returns(run_dir: Path) -> np.ndarray:
    """``[P, S]`` evaluation returns of a run's periods (``evals.csv`` rows of period >= 1)."""
    table = read_csv(run_dir / "evals.csv")
    by_period: dict[int, dict[int, float]] = {}
    columns = (table.get(name, ()) for name in ("period", "seed", "eval_return"))
    for period, seed, value in zip(*columns, strict=True):
        if period >= 1:
            by_period.setdefault(int(period), {})[int(seed)] = float(value)
    return np.asarray(
        [[seeds[s] for s in sorted(seeds)] for _, seeds in sorted(by_period.items())], np.float64
    ).reshape(len(by_period), -1)


# ---------------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Training a batch
# ---------------------------------------------------------------------------------------------


class _Reporter:
    """One trial's progress: each period's evaluation returns in, the running objective out
    to the study, and whether the pruner stopped it (``pruned``) or another worker took it
    over (``lost``: this worker's heartbeat came too late,
    :data:`~jaxrl.studies.tuning_study.LEASE_SECONDS`); each period renews this worker's heartbeat
    on the trial."""

    def __init__(self, trial: Any, objective_evals: int) -> None:
        self.trial, self.last = trial, objective_evals
        self.history: list[np.ndarray] = []
        self.pruned = self.lost = False

    @property
    def ended(self) -> bool:
        """Whether this worker trains the trial no further."""
        return self.pruned or self.lost

    def report(self, period: int, returns: np.ndarray, run_dir: Path | None = None) -> None:
        if self.ended or self.trial is None:  # None: a process of a job other than process 0
            return
        import optuna

        held = self.trial.study._storage.get_trial(self.trial._trial_id)
        if held.state != optuna.trial.TrialState.RUNNING or not same_worker(
            held.user_attrs.get("worker", {}), this_worker()
        ):
            self.lost = True
            return
        self.trial.set_user_attr("worker", this_worker())
        if not self.history and period > 1 and run_dir is not None:  # a resumed trial
            self.history = list(_trained_returns(run_dir)[: period - 1])
        self.history.append(np.asarray(returns, np.float64))
        value = objective(np.stack(self.history), self.last)
        if not np.isfinite(value):
            return
        self.trial.report(value, period)
        self.pruned = self.trial.should_prune()


def _train_batch(
    batch: Sequence[tuple[Any, Setting]],
    path: Path,
    objective_evals: int,
    say: Callable,
    resume: bool = False,
    stop: Callable[[], bool] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
    progress: bool = False,
) -> bool:
    """Train a batch of trials (as a study's groups) and tell the study how each ended;
    ``resume``: trials a dead worker left, continued from their checkpoints. ``stop``
    (SIGTERM) checkpoints the group under way at its period and leaves its trials and the
    batch's others running in the study, for the next worker on this machine to continue;
    returns whether it stopped so. ``tracking``: the experiment trackers each trial's run
    logs to. ``progress``: ``jaxrl train``'s progress on stderr, per group of trials.

    In a job of several processes every process calls it with the same settings; the trials
    are process 0's (None in the others), which alone reports, writes and tells, and decides
    for every process where a group stops (all its trials pruned)."""

    from jaxrl.runs.progress import group_progress, update_group
    from jaxrl.runs.runner import train_group, train_run
    from jaxrl.training.sharding import is_primary, primary_value

    resumed = resumed_only(say)
    reporters = {s.name: _Reporter(trial, objective_evals) for trial, s in batch}
    trials = {s.name: trial for trial, s in batch}
    for group in groups([s for _, s in batch]):
        if stop is not None and stop():
            return True
        open_dir = RunDir if resume or not is_primary() else RunDir.create
        run_dirs = [open_dir(path / "trials" / s.name) for s in group]
        dirs = {s.name: d.path for s, d in zip(group, run_dirs, strict=True)}
        say(f"  training {', '.join(s.name for s in group)}")

        def on_period(period: int, env_steps: int, returns: list, group=group, dirs=dirs) -> bool:
            del env_steps
            for setting, own in zip(group, returns, strict=True):
                reporters[setting.name].report(period, own, dirs[setting.name])
            pruned = all(reporters[s.name].ended for s in group)
            return bool(primary_value(np.asarray(pruned, np.int32)))

        if group[0].config.backend == "jax":
            label = "trial" + ("s " if len(group) > 1 else " ")
            label += ", ".join(str(int(s.name[6:])) for s in group)
            configs = [s.config for s in group]
            with group_progress(label, configs, quiet=not (progress and is_primary())) as bar:
                train_group(
                    configs, run_dirs, update_group(bar, on_period), resume=resume, stop=stop,
                    on_setup=resumed, tracking=tracking,
                )  # fmt: skip
        for setting, run_dir in zip(group, run_dirs, strict=True):
            if group[0].config.backend == "jax" or (stop is not None and stop()):
                break
            reporter = reporters[setting.name]
            train_run(
                setting.config, run_dir, resume=resume, progress=progress, on_setup=resumed,
                on_period=lambda p, _, returns, r=reporter, d=run_dir.path: r.report(p, returns, d),
                stop=lambda r=reporter: r.ended or (stop is not None and stop()),
                tracking=tracking,
            )  # fmt: skip
        stopped = stop is not None and stop()  # asked in every process alike
        _tell(group, run_dirs, trials, reporters, stopped, objective_evals, say)
        if stopped:
            return True
    return False


def _tell(
    group: Sequence[Setting],
    run_dirs: Sequence[RunDir],
    trials: dict[str, Any],
    reporters: dict[str, _Reporter],
    stopped: bool,
    objective_evals: int,
    say: Callable[[str], None],
) -> None:
    """Tell the study how each trial of a trained group ended (process 0's trials; None in
    the other processes of a job): pruned, complete with its objective, left running
    (``stopped``: checkpointed, for the next worker), failed, or taken over by another
    worker (nothing to tell)."""
    import optuna

    for setting, run_dir in zip(group, run_dirs, strict=True):
        trial, reporter = trials[setting.name], reporters[setting.name]
        if trial is None:
            continue
        returns = _trained_returns(run_dir.path)
        trial.set_user_attr("env_steps", _env_steps(run_dir.path))
        if reporter.lost:
            say(f"  {setting.name}: taken over by another worker (its lease ran out)")
        elif reporter.pruned:
            trial.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            say(f"  {setting.name}: pruned after {returns.shape[0]} evaluation periods")
        elif run_dir.final_eval.is_file():
            value = objective(returns, objective_evals)
            trial.study.tell(trial, value)
            say(f"  {setting.name}: objective {value:.1f}")
        elif stopped:
            say(f"  {setting.name}: stopped at period {returns.shape[0] - 1} (checkpointed)")
        else:
            trial.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            say(f"  {setting.name}: stopped before its last period (failed)")


def _env_steps(run_dir: Path) -> int:
    steps = read_csv(run_dir / "evals.csv").get("env_steps", ())
    return int(max(steps, default=0))


# ---------------------------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------------------------


def tune(
    base: RunConfig,
    space: Sequence[Dimension],
    tune_dir: str | Path,
    *,
    trials: int = 20,
    batch: int = 4,
    sampler: str = "tpe",
    sampler_seed: int = 0,
    pruner: str = "median",
    storage: str | None = None,
    study_name: str | None = None,
    objective_evals: int = 5,
    enqueue_base: bool = True,
    stop_after_batches: int | None = None,
    on_batch: Callable[[str], None] | None = None,
    stop: Callable[[], bool] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
) -> TuneResult | None:
    """Run (or resume, or join as another worker) the study of ``space`` over ``base``.

    Args:
      base: the run every trial starts from (its seeds are the search seeds).
      space: the searched fields (:func:`~jaxrl.studies.search_space.parse_search`).
      tune_dir: the tuning directory (created, or resumed when it holds this study).
      trials: end when this many trials are complete, pruned or failed.
      batch: trials asked at once and trained together.
      sampler: an Optuna sampler (``tpe``, ``random``, ``cmaes``, ``qmc``, ``gp`` or a class
        name of ``optuna.samplers``), seeded with ``sampler_seed``.
      pruner: ``median`` (the default), ``percentile``, ``hyperband``,
        ``successive-halving``, ``none`` or a class name of ``optuna.pruners``.
      storage: where the study lives (see :mod:`jaxrl.studies.tuning_study`); default
        ``TUNE_DIR/study.log``.
      study_name: the study's name in the storage; default the tuning directory's name.
      objective_evals: evaluations the objective averages (see the module docstring).
      enqueue_base: a new study's first trial is ``base``'s own values of the searched
        fields (where the sampler starts from a known setting).
      stop_after_batches: stop after this many batches, as an interruption would.
      on_batch: called with a line as each batch starts and each trial ends.
      stop: asked after every evaluation period and before each group (SIGTERM on the
        command line): ``True`` checkpoints the trials under way at that period and ends the
        call, leaving them running in the study; the next worker on this machine (the same
        command) continues them from those checkpoints.
      tracking: the experiment trackers each trial's run logs to
        (:mod:`jaxrl.runs.tracking`), grouped by the tuning directory's name.

    In a job of several processes (:func:`jaxrl.training.initialize_distributed`; JAX
    environments only) every process calls it with the same arguments: process 0 alone
    asks and tells the study and writes the tuning directory, and sends each batch's
    settings to the others; each group's trials x seeds are split over every process's
    devices as a sweep's. Process 0 returns the result, the others None.

    Returns:
      The study's result (None in a process of a job other than process 0).

    Raises:
      TuneError: an invalid space, sampler, pruner or directory, before anything compiles.
    """
    say = on_batch or (lambda line: None)
    _check_request(base, space, trials, batch, objective_evals)
    path = Path(tune_dir)
    tracking = tracking.grouped(path.resolve().name)
    study = _open_in_step(
        lambda: open_study(
            base, space, path, sampler, sampler_seed, pruner, storage, study_name,
            objective_evals,
        )
    )  # fmt: skip

    def train(trials: Sequence[tuple[Any, Setting]], resume: bool = False) -> bool:
        shown = on_batch is not None  # train's progress line, with the batches' lines
        return _train_batch(trials, path, objective_evals, say, resume, stop, tracking, shown)

    def summary() -> TuneResult | None:
        return None if study is None else write_summary(path, study, space, base, objective_evals)

    if study is not None and _begin(study, base, space, path, say, train, enqueue_base):
        return summary()
    last = _run_batches(study, base, space, trials, batch, stop_after_batches, train, summary, say)
    return summary() if last is None else last


def _check_request(
    base: RunConfig, space: Sequence[Dimension], trials: int, batch: int, objective_evals: int
) -> None:
    check_base(base)
    if several_processes():  # a JAX environment, its seeds split evenly over the devices
        if base.backend != "jax":
            raise TuneError(
                f"a study on a host environment ({base.env}) runs in one process: run more "
                "tune workers on the same --storage instead of several processes"
            )
        SeedPlacement.for_job().check(base.num_seeds)
    if not space:
        raise TuneError("the search space is empty: give at least one --search FIELD=...")
    if not all(isinstance(dimension, Dimension) for dimension in space):
        raise TypeError(f"space must be parse_search(algo, preset, specs)'s, got {space!r:.60}")
    counts = (("--trials", trials), ("--batch", batch), ("--objective-evals", objective_evals))
    for name, value in counts:
        whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
        if not whole or value < 1:
            raise TuneError(f"{name} must be a positive integer, got {value!r}")


def _run_batches(
    study: Any,
    base: RunConfig,
    space: Sequence[Dimension],
    trials: int,
    batch: int,
    stop_after_batches: int | None,
    train: Callable[[Sequence[tuple[Any, Setting]]], bool],
    summary: Callable[[], Any],
    say: Callable[[str], None],
) -> Any:
    """Batches asked (by process 0: ``study`` is None in the others, which train the
    batches it shares), trained and summarized, until the study has its ``trials``, a
    ``stop`` ends a batch, or ``stop_after_batches``. Returns the last batch's summary
    (None where no batch ran)."""
    batches, last = 0, None
    while stop_after_batches is None or batches < stop_after_batches:
        asked = None
        if study is not None:
            ended, running = trial_counts(study)
            asked = _ask(study, base, space, min(batch, trials - ended - running), say)
        asked = _shared_batch(asked, base)
        if asked is None:
            return last
        batches += 1
        say(f"batch {batches}: trials {', '.join(s.name[6:] for _, s in asked)}")
        stopped = train(asked)
        last = summary()
        if stopped:
            return last
    return last


def _begin(
    study: Any,
    base: RunConfig,
    space: Sequence[Dimension],
    path: Path,
    say: Callable[[str], None],
    train: Callable[..., bool],
    enqueue_base: bool,
) -> bool:
    """A worker's start (process 0's): the trials of dead workers that can be continued
    trained (:func:`~jaxrl.studies.tuning_study.retry_orphans`; the others are asked again), then,
    in a new study, the base run's values enqueued. Returns whether a ``stop`` ended it. A
    job of several processes trains only the batches all its processes share: there a dead
    worker's trials are asked again, not taken over."""
    say(f"Tuning directory {path}")
    adoptable = None if several_processes() else base
    adopted, retried = retry_orphans(study, adoptable, space, path)
    if retried:
        say(f"trials {', '.join(map(str, retried))} of a stopped worker: asked again")
    if adopted:
        numbers = ", ".join(s.name[6:] for _, s in adopted)
        say(f"trials {numbers} of a stopped worker: resumed from their checkpoints")
        if train(adopted, resume=True):
            return True
    if enqueue_base and not study.trials:
        own = base_values(base, space)
        values = {d.name: label(own[d.name]) for d in space}
        # another worker may have, just now; the report names it as the base run's values
        study.enqueue_trial(values, user_attrs={"base": True}, skip_if_exists=True)
    return False


def _open_in_step(open_study: Callable[[], Any]) -> Any:
    """``open_study()`` by process 0 of a job of several processes (the only process of one),
    which alone talks to the study: the study there, None in the others. If it fails, every
    process stops."""
    from jaxrl.training.sharding import is_primary, processes_agree

    if not several_processes():
        return open_study()
    study, failure = None, None
    if is_primary():
        try:
            study = open_study()
        except (TuneError, SweepError) as error:
            failure = error
    if not processes_agree(failure is None):
        raise failure or TuneError("another process of the job could not open the study")
    return study


def _shared_batch(
    asked: list[tuple[Any, Setting]] | None, base: RunConfig
) -> list[tuple[Any, Setting]] | None:
    """Process 0's batch (``asked``: its trials and their settings; None: the study has
    ended) in every process of a job: the settings made anew from their values, the trials
    None outside process 0."""
    from jaxrl.training.sharding import is_primary, primary_value

    if not several_processes():
        return asked
    if is_primary():
        described = None if asked is None else [[s.name, s.values] for _, s in asked]
        data = np.frombuffer(json.dumps(described).encode(), np.uint8)
    else:
        data = np.zeros(0, np.uint8)
    size = int(primary_value(np.asarray(data.size, np.int32)))
    data = primary_value(data if is_primary() else np.zeros(size, np.uint8))
    if is_primary():
        return asked
    described = json.loads(bytes(data).decode())
    if described is None:
        return None
    return [(None, make_setting(base, values, name, "trial")) for name, values in described]


def _ask(
    study: Any, base: RunConfig, space: Sequence[Dimension], wanted: int, say: Callable
) -> list[tuple[Any, Setting]] | None:
    """Up to ``wanted`` new trials with their settings (None when none is wanted); a trial
    whose values are no valid run fails at once, naming why."""
    import optuna

    if wanted <= 0:
        return None
    asked = []
    for _ in range(wanted):
        trial = study.ask()
        trial.set_user_attr("worker", this_worker())
        trial.set_user_attr("seeds", [base.seed + i for i in range(base.num_seeds)])
        values = {d.name: d.suggest(trial) for d in space}
        try:
            asked.append((trial, make_setting(base, values, f"trial-{trial.number}", "trial")))
        except SweepError as error:
            trial.set_user_attr("error", str(error))
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            say(f"  trial {trial.number} failed: {error}")
    return asked

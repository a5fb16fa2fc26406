"""Tuning (``jaxrl tune``): an Optuna study over hyperparameters and run settings.

:func:`tune` asks a study (Optuna's ask-and-tell) for a batch of trials, trains the batch as
a study's groups train (:mod:`jaxrl.io.studies`: on a JAX environment, the trials that differ
only in numeric hyperparameters train in ONE program over trials x seeds; on a host
environment, one after another), reports each evaluation period to the study and tells it
each trial's objective. A tuning directory holds::

    TUNE_DIR/tune.json        what is tuned: the base run, the search space, the objective
    TUNE_DIR/study.log        the study (Optuna's journal file; ``storage`` chooses another)
    TUNE_DIR/trials/trial-N/  one run directory per trial (``jaxrl plot`` etc. work on each)
    TUNE_DIR/tune.csv         one row per trial: its state, objective and values
    TUNE_DIR/tune.md          the trials ranked by objective, and the best trial's command
    TUNE_DIR/best.json        the best trial's values as a preset file (``--preset-file``)
    TUNE_DIR/history.png      Optuna's optimization history; importances.png: the values'
                              importances (from two finished trials on)

**The objective** of a trial is the mean, over its seeds (the search seeds), of each seed's
mean evaluation return over the run's last ``objective_evals`` evaluation periods: a
statistic of where training ended, not a lucky maximum. After each evaluation period the
trial reports the same statistic over the periods so far (the last ``objective_evals`` of
them), which the pruner compares across trials.

**Pruning** (Optuna's median pruner by default, after a warm-up of a quarter of the run's
periods and 5 finished trials): a pruned trial on a host environment stops at once, which
frees its compute for the next trial. On a JAX environment a pruned trial stops reporting,
and its group's program stops at the period where every trial of the group is pruned.

**Workers**: any number of processes (on one machine or several) may run :func:`tune` on
one study (the same ``storage`` and ``study_name``): each asks its own trials, so none is
trained twice, and the study ends when ``trials`` trials are complete or pruned. A worker
that is killed leaves its trials RUNNING; a worker that starts on the same machine marks
those of dead processes failed and asks for their values again.

**Seeds**: the command line's search seeds start at 1000 (``jaxrl train`` starts at 0), and
a preset file records them: ``jaxrl train --preset-file`` refuses to report on them.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import socket
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from jaxrl.io.config import RunConfig
from jaxrl.io.run_dir import RunDir
from jaxrl.io.studies import (
    Setting,
    SweepError,
    check_field,
    groups,
    make_setting,
    parse_value,
    split_values,
    sweepable_fields,
)

TUNE_SEED = 1000
"""The first search seed of ``jaxrl tune`` (``jaxrl train``'s first seed is 0)."""

SAMPLERS = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
    "gp": "GPSampler",
}
PRUNERS = {
    "median": "MedianPruner",
    "percentile": "PercentilePruner",
    "hyperband": "HyperbandPruner",
    "successive-halving": "SuccessiveHalvingPruner",
    "none": "NopPruner",
}


class TuneError(SweepError):
    """A search space, sampler, pruner or tuning directory :func:`tune` cannot use; the
    message names the option (``--search FIELD``, ``--sampler``, ...) and what was expected."""


# ---------------------------------------------------------------------------------------------
# The search space
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched field: a range (``low``, ``high``, ``log``) of an int or float field, or
    ``choices`` (values of the field's command-line type).

    Attributes:
      name: the field (a hyperparameter or run setting).
      kind: ``"float"``, ``"int"`` or ``"categorical"``.
    """

    name: str
    kind: Literal["float", "int", "categorical"]
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: Any) -> Any:
        """The trial's value (an Optuna trial's ``suggest_*``); a categorical value is asked
        by its label (Optuna's choices are numbers and strings) and returned as the value."""
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        labels = [label(choice) for choice in self.choices]
        return self.choices[labels.index(trial.suggest_categorical(self.name, labels))]

    def describe(self) -> str:
        """The spec as ``--search`` writes it (``max_kl=0.001:0.05:log``)."""
        if self.kind == "categorical":
            return f"{self.name}=" + ",".join(str(label(c)) for c in self.choices)
        return f"{self.name}={self.low:g}:{self.high:g}" + (":log" if self.log else "")


def label(value: Any) -> Any:
    """A value as Optuna and the tables show it: sequences as ``64x64``, None as ``"None"``."""
    if isinstance(value, tuple | list):
        return "x".join(str(v) for v in value)
    return "None" if value is None else value


def _numeric(kind: Any) -> type | None:
    """``int`` or ``float`` for a field of that command-line type (None allowed), else None."""
    members = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    return members[0] if len(members) == 1 and members[0] in (int, float) else None


def parse_search(algo: str, preset: str, specs: Sequence[str]) -> list[Dimension]:
    """``["max_kl=0.001:0.05:log", "hidden_sizes=64x64,256x256"]`` as dimensions: a range
    ``LOW:HIGH`` (``:log`` for a log scale) of an int or float field, or a list of values.

    Raises:
      TuneError: a malformed spec, an unknown field (with the closest names), a field that
        cannot be searched, a field given twice (also as ``-`` and ``_`` spellings), a range
        with LOW >= HIGH or a log range with LOW <= 0, a range of a field that is not
        numeric, an empty list, a list with a value twice or a single value.
    """
    kinds = sweepable_fields(algo, preset)
    dimensions: dict[str, Dimension] = {}
    for spec in specs:
        name, equals, text = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not text.strip():
            raise TuneError(
                f"--search {spec!r}: write FIELD=LOW:HIGH, FIELD=LOW:HIGH:log or "
                "FIELD=VALUE,VALUE,..."
            )
        try:
            check_field(name, kinds, algo, "--search")
        except SweepError as error:
            raise TuneError(str(error).replace("be swept", "be searched")) from None
        if name in dimensions:
            raise TuneError(f"--search {name} is given twice: search each field once")
        if ":" in text and "," not in text:
            dimensions[name] = _range(name, text.strip(), kinds[name])
        else:
            dimensions[name] = _choices(name, text, kinds[name])
    return list(dimensions.values())


def _range(name: str, text: str, kind: Any) -> Dimension:
    parts = text.split(":")
    log = parts[-1] == "log"
    if log:
        parts = parts[:-1]
    number = _numeric(kind)
    if len(parts) != 2:
        raise TuneError(f"--search {name}={text}: a range is LOW:HIGH or LOW:HIGH:log")
    if number is None:
        raise TuneError(
            f"--search {name}={text}: a range needs an int or float field; list {name}'s "
            "values instead (FIELD=VALUE,VALUE,...)"
        )
    try:
        low, high = (parse_value(name, part, number, "--search") for part in parts)
    except SweepError as error:
        raise TuneError(str(error)) from None
    if not low < high:
        raise TuneError(f"--search {name}={text}: LOW must be below HIGH")
    if log and low <= 0:
        raise TuneError(f"--search {name}={text}: a log range needs LOW > 0")
    return Dimension(name, "int" if number is int else "float", low, high, log)


def _choices(name: str, text: str, kind: Any) -> Dimension:
    written = split_values(text)
    if not written:
        raise TuneError(f"--search {name}={text}: list at least two values")
    try:
        values = [parse_value(name, value, kind, "--search") for value in written]
    except SweepError as error:
        raise TuneError(str(error)) from None
    labels = [label(value) for value in values]
    repeated = sorted({str(x) for x in labels if labels.count(x) > 1})
    if repeated:
        raise TuneError(f"--search {name}={text}: {', '.join(repeated)} is listed twice")
    if len(values) < 2:
        raise TuneError(
            f"--search {name}={text}: one value is not a search; set it with --"
            f"{name.replace('_', '-')} {written[0]}"
        )
    return Dimension(name, "categorical", choices=tuple(values))


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
    by_period: dict[int, dict[int, float]] = {}
    with open(run_dir / "evals.csv") as handle:
        for row in csv.DictReader(handle):
            if int(row["period"]) >= 1:
                by_period.setdefault(int(row["period"]), {})[int(row["seed"])] = float(
                    row["eval_return"]
                )
    return np.asarray(
        [[seeds[s] for s in sorted(seeds)] for _, seeds in sorted(by_period.items())], np.float64
    ).reshape(len(by_period), -1)


# ---------------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------------


def _sampler(name: str, seed: int) -> Any:
    import optuna

    cls = getattr(optuna.samplers, SAMPLERS.get(name, name), None)
    if not isinstance(cls, type) or not issubclass(cls, optuna.samplers.BaseSampler):
        raise TuneError(
            f"--sampler {name}: not an Optuna sampler; choose from {', '.join(SAMPLERS)} "
            "or a class name of optuna.samplers"
        )
    if cls is optuna.samplers.TPESampler:  # concurrent asks kept apart (a batch, workers)
        return cls(seed=seed, constant_liar=True)
    try:
        return cls(seed=seed)
    except TypeError:
        return cls()


def _pruner(name: str, warmup: int) -> Any:
    import optuna

    cls = getattr(optuna.pruners, PRUNERS.get(name, name), None)
    if not isinstance(cls, type) or not issubclass(cls, optuna.pruners.BasePruner):
        raise TuneError(
            f"--pruner {name}: not an Optuna pruner; choose from {', '.join(PRUNERS)} or a "
            "class name of optuna.pruners"
        )
    if cls is optuna.pruners.MedianPruner:
        return cls(n_startup_trials=5, n_warmup_steps=warmup)
    if cls is optuna.pruners.PercentilePruner:
        return cls(25.0, n_startup_trials=5, n_warmup_steps=warmup)
    return cls()


def _storage(storage: str | None, path: Path) -> Any:
    """A journal file in the tuning directory by default; a URL with ``://``
    (``sqlite:///study.db``, PostgreSQL, MySQL) as Optuna's RDB storage; any other string
    as the path of a journal file (for a shared filesystem)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if storage is not None and "://" in storage:
        return storage
    journal = Path(storage) if storage is not None else path / "study.log"
    journal.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(journal)))


def _describe(base: RunConfig, space: Sequence[Dimension], objective_evals: int) -> dict:
    return {
        "base": base.to_dict(),
        "search": [d.describe() for d in space],
        "objective": f"mean over seeds of the mean of the last {objective_evals} evaluations",
        "objective_evals": objective_evals,
    }


def _open_tune_dir(path: Path, described: dict[str, Any]) -> None:
    saved_path = path / "tune.json"
    if saved_path.is_file():
        if json.loads(saved_path.read_text()) != json.loads(json.dumps(described)):
            raise TuneError(
                f"{path} holds another study (its tune.json differs); resume it with the same "
                "run, search and objective, or choose another --tune-dir"
            )
        return
    if path.exists() and any(path.iterdir()):
        raise TuneError(f"{path} exists and is not a tuning directory; choose another --tune-dir")
    (path / "trials").mkdir(parents=True, exist_ok=True)
    saved_path.write_text(json.dumps(described, indent=2) + "\n")


def _me() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _alive(pid: int) -> bool:
    if pid == os.getpid():  # an earlier call in this process left it
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _retry_orphans(study: Any) -> list[int]:
    """Trials left RUNNING by a dead worker of this machine: failed, their values asked
    again (``enqueue_trial``). Returns their numbers."""
    import optuna

    host, retried = socket.gethostname(), []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker", {})
        if worker.get("host") != host or _alive(int(worker.get("pid", -1))):
            continue
        optuna.trial.Trial(study, trial._trial_id).set_user_attr("orphaned", True)
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})
        retried.append(trial.number)
    return retried


def _counts(study: Any) -> tuple[int, int]:
    """``(ended, running)``: trials complete, pruned or failed (a dead worker's failed
    trials are asked again, so they do not count), and trials running."""
    import optuna

    states = optuna.trial.TrialState
    ended = running = 0
    for trial in study.get_trials(deepcopy=False):
        if trial.state == states.RUNNING:
            running += 1
        elif trial.state in (states.COMPLETE, states.PRUNED) or (
            trial.state == states.FAIL and not trial.user_attrs.get("orphaned")
        ):
            ended += 1
    return ended, running


# ---------------------------------------------------------------------------------------------
# Training a batch
# ---------------------------------------------------------------------------------------------


class _Reporter:
    """One trial's progress: each period's evaluation returns in, the running objective out
    to the study, and whether the pruner stopped it."""

    def __init__(self, trial: Any, objective_evals: int) -> None:
        self.trial, self.last = trial, objective_evals
        self.history: list[np.ndarray] = []
        self.pruned = False

    def report(self, period: int, returns: np.ndarray) -> None:
        if self.pruned:
            return
        self.history.append(np.asarray(returns, np.float64))
        value = objective(np.stack(self.history), self.last)
        if not np.isfinite(value):
            return
        self.trial.report(value, period)
        self.pruned = self.trial.should_prune()


def _train_batch(
    batch: Sequence[tuple[Any, Setting]], path: Path, objective_evals: int, say: Callable
) -> None:
    """Train a batch of trials (as a study's groups) and tell the study how each ended."""
    import optuna

    from jaxrl.io.runner import train_run
    from jaxrl.io.studies import _train_jax_group

    reporters = {s.name: _Reporter(trial, objective_evals) for trial, s in batch}
    trials = {s.name: trial for trial, s in batch}
    for group in groups([s for _, s in batch]):
        run_dirs = [RunDir.create(path / "trials" / s.name) for s in group]
        say(f"  training {', '.join(s.name for s in group)}")
        if group[0].config.backend == "jax":

            def on_period(period: int, env_steps: int, returns: list, group=group) -> bool:
                del env_steps
                for setting, own in zip(group, returns, strict=True):
                    reporters[setting.name].report(period, own)
                return all(reporters[s.name].pruned for s in group)

            _train_jax_group(group, run_dirs, on_period)
        else:
            for setting, run_dir in zip(group, run_dirs, strict=True):
                reporter = reporters[setting.name]
                train_run(
                    setting.config,
                    run_dir,
                    progress=False,
                    on_period=lambda period, steps, returns, r=reporter: r.report(period, returns),
                    stop=lambda r=reporter: r.pruned,
                )
        for setting, run_dir in zip(group, run_dirs, strict=True):
            trial, reporter = trials[setting.name], reporters[setting.name]
            returns = _trained_returns(run_dir.path)
            trial.set_user_attr("env_steps", _env_steps(run_dir.path))
            if reporter.pruned:
                trial.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                say(f"  {setting.name}: pruned after {returns.shape[0]} evaluation periods")
            elif run_dir.final_eval.is_file():
                value = objective(returns, objective_evals)
                trial.study.tell(trial, value)
                say(f"  {setting.name}: objective {value:.1f}")
            else:
                trial.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                say(f"  {setting.name}: stopped before its last period (failed)")


def _env_steps(run_dir: Path) -> int:
    with open(run_dir / "evals.csv") as handle:
        return max((int(row["env_steps"]) for row in csv.DictReader(handle)), default=0)


# ---------------------------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """What a study holds.

    Attributes:
      tune_dir: the tuning directory.
      study: the Optuna study.
      rows: one dict per trial (the rows of ``tune.csv``).
      best: the best complete trial's row, or None.
      complete, pruned, failed, running: trials in each state.
    """

    tune_dir: Path
    study: Any
    rows: list[dict[str, Any]]
    best: dict[str, Any] | None
    complete: int
    pruned: int
    failed: int
    running: int


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
) -> TuneResult:
    """Run (or resume, or join as another worker) the study of ``space`` over ``base``.

    Args:
      base: the run every trial starts from (its seeds are the search seeds).
      space: the searched fields (:func:`parse_search`).
      tune_dir: the tuning directory (created, or resumed when it holds this study).
      trials: end when this many trials are complete, pruned or failed.
      batch: trials asked at once and trained together.
      sampler: an Optuna sampler (``tpe``, ``random``, ``cmaes``, ``qmc``, ``gp`` or a class
        name of ``optuna.samplers``), seeded with ``sampler_seed``.
      pruner: ``median`` (the default), ``percentile``, ``hyperband``,
        ``successive-halving``, ``none`` or a class name of ``optuna.pruners``.
      storage: where the study lives (see :func:`_storage`); default
        ``TUNE_DIR/study.log``.
      study_name: the study's name in the storage; default the tuning directory's name.
      objective_evals: evaluations the objective averages (see the module docstring).
      enqueue_base: a new study's first trial is ``base``'s own values of the searched
        fields (where the sampler starts from a known setting).
      stop_after_batches: stop after this many batches, as an interruption would.
      on_batch: called with a line as each batch starts and each trial ends.

    Raises:
      TuneError: an invalid space, sampler, pruner or directory, before anything compiles.
    """
    say = on_batch or (lambda line: None)
    if not space:
        raise TuneError("the search space is empty: give at least one --search FIELD=...")
    counts = (("--trials", trials), ("--batch", batch), ("--objective-evals", objective_evals))
    for name, value in counts:
        if value < 1:
            raise TuneError(f"{name} must be a positive integer, got {value}")
    path = Path(tune_dir)
    study = _open_study(
        base, space, path, sampler, sampler_seed, pruner, storage, study_name, objective_evals
    )
    say(f"Tuning directory {path}")
    retried = _retry_orphans(study)
    if retried:
        say(f"trials {', '.join(map(str, retried))} of a stopped worker: asked again")
    if enqueue_base and not study.trials:
        base_values = _base_values(base, space)
        values = {d.name: label(base_values[d.name]) for d in space}
        study.enqueue_trial(values, skip_if_exists=True)  # another worker may have, just now
    batches = 0
    while stop_after_batches is None or batches < stop_after_batches:
        ended, running = _counts(study)
        asked = _ask(study, base, space, min(batch, trials - ended - running), say)
        if asked is None:
            break
        batches += 1
        say(f"batch {batches}: trials {', '.join(s.name[6:] for _, s in asked)}")
        _train_batch(asked, path, objective_evals, say)
        write_summary(path, study, space, base, objective_evals)
    return write_summary(path, study, space, base, objective_evals)


def _open_study(
    base: RunConfig,
    space: Sequence[Dimension],
    path: Path,
    sampler: str,
    sampler_seed: int,
    pruner: str,
    storage: str | None,
    study_name: str | None,
    objective_evals: int,
) -> Any:
    """The study in its storage, created or loaded, once everything is checked and the
    tuning directory opened."""
    import optuna

    sampler_object = _sampler(sampler, sampler_seed)
    pruner_object = _pruner(pruner, max(1, base.layout.num_periods // 4))
    make_setting(base, _base_values(base, space), "the base run", "--search")
    _open_tune_dir(path, _describe(base, space, objective_evals))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(
        study_name=study_name or path.resolve().name,
        storage=_storage(storage, path),
        sampler=sampler_object,
        pruner=pruner_object,
        direction="maximize",
        load_if_exists=True,
    )


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
        trial.set_user_attr("worker", _me())
        trial.set_user_attr("seeds", [base.seed + i for i in range(base.num_seeds)])
        values = {d.name: d.suggest(trial) for d in space}
        try:
            asked.append((trial, make_setting(base, values, f"trial-{trial.number}", "trial")))
        except SweepError as error:
            trial.set_user_attr("error", str(error))
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            say(f"  trial {trial.number} failed: {error}")
    return asked


def _base_values(base: RunConfig, space: Sequence[Dimension]) -> dict[str, Any]:
    """The base run's own value of each searched field."""
    settings = base.to_dict()["run"]
    values = {}
    for dim in space:
        value = base.hyperparameters.get(dim.name, settings.get(dim.name))
        if isinstance(value, list):
            value = tuple(value)
        if dim.kind == "categorical" and label(value) not in [label(c) for c in dim.choices]:
            raise TuneError(
                f"--search {dim.describe()}: the base run's {dim.name} {label(value)} is not "
                "among the values; list it too, or pass --no-enqueue-base"
            )
        values[dim.name] = value
    return values


# ---------------------------------------------------------------------------------------------
# The tuning directory's tables, figures and preset file
# ---------------------------------------------------------------------------------------------


def write_summary(
    path: Path, study: Any, space: Sequence[Dimension], base: RunConfig, objective_evals: int
) -> TuneResult:
    """``tune.csv``, ``tune.md``, ``best.json`` and the figures of the study so far."""
    import optuna

    states = optuna.trial.TrialState
    rows = []
    for trial in study.get_trials(deepcopy=False):
        row = {"trial": trial.number, "state": trial.state.name.lower()}
        row["objective"] = trial.value if trial.state == states.COMPLETE else None
        row.update({d.name: trial.params.get(d.name) for d in space})
        row["env_steps"] = trial.user_attrs.get("env_steps")
        row["seeds"] = " ".join(map(str, trial.user_attrs.get("seeds", [])))
        rows.append(row)
    with open(path / "tune.csv", "w", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["trial", "state", "objective", *[d.name for d in space],
                                "env_steps", "seeds"],
        )  # fmt: skip
        writer.writeheader()
        writer.writerows(rows)
    complete = sorted(
        (r for r in rows if r["state"] == "complete"), key=lambda r: -float(r["objective"])
    )
    best = complete[0] if complete else None
    count = {s: sum(r["state"] == s for r in rows) for s in ("complete", "pruned", "fail")}
    running = sum(r["state"] == "running" for r in rows)
    if best is not None:
        _write_preset_file(path / "best.json", base, space, best, len(rows), objective_evals)
    pruned_steps = [int(r["env_steps"] or 0) for r in rows if r["state"] == "pruned"]
    markdown = _markdown(path, base, space, complete, count, running, pruned_steps)
    (path / "tune.md").write_text(markdown)
    _figures(path, study, len(complete))
    return TuneResult(
        path, study, rows, best, count["complete"], count["pruned"], count["fail"], running
    )


def _values_of(row: Mapping[str, Any], space: Sequence[Dimension]) -> dict[str, Any]:
    """A trial's values as the run takes them (labels read back as values)."""
    values = {}
    for dim in space:
        value = row[dim.name]
        if dim.kind == "categorical":
            value = dim.choices[[label(c) for c in dim.choices].index(value)]
        values[dim.name] = list(value) if isinstance(value, tuple) else value
    return values


# Run settings a preset file leaves out: the seeds (the report's own), and how or where a
# run is carried out, which does not change what it learns.
_NOT_IN_PRESET_FILE = (
    "seed",
    "num_seeds",
    "checkpoint_every",
    "checkpoint_buffer",
    "check_finite",
    "env_backend",
    "brax_backend",
)


def _write_preset_file(
    file: Path,
    base: RunConfig,
    space: Sequence[Dimension],
    best: dict,
    total: int,
    objective_evals: int,
) -> None:
    from jaxrl.training.settings import settings_fields

    values = _values_of(best, space)
    run_names = {f.name for f in settings_fields()}
    # The base run's own departures from its preset come along (a trial is base + values);
    # what only says how or where to run does not.
    reference = RunConfig.from_preset(base.algo, base.env, base.preset, backend=base.backend)
    own, preset_values = base.to_dict(), reference.to_dict()
    hyper = {
        k: v
        for k, v in own["hyperparameters"].items()
        if preset_values["hyperparameters"].get(k) != v
    }
    run = {k: v for k, v in own["run"].items() if preset_values["run"].get(k) != v}
    run = {k: v for k, v in run.items() if k not in _NOT_IN_PRESET_FILE}
    hyper.update({k: v for k, v in values.items() if k not in run_names})
    run.update({k: v for k, v in values.items() if k in run_names})
    seeds = [base.seed + i for i in range(base.num_seeds)]
    preset = {
        "algo": base.algo,
        "env": base.env,
        "preset": base.preset,
        "hyperparameters": hyper,
        "run": run,
        "search_seeds": seeds,
        "provenance": {
            "study": file.parent.name,
            "trial": best["trial"],
            "objective": best["objective"],
            "objective_is": _describe(base, space, objective_evals)["objective"],
            "search": [d.describe() for d in space],
            "trials_in_study": total,
            "env_steps_per_trial": base.layout.total_steps,
        },
    }
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(json.dumps(preset, indent=2) + "\n")
    tmp.replace(file)


def _pruning_line(pruned_steps: Sequence[int], pruned: int, total: int) -> str:
    """What pruning saved: the env steps pruned trials did not train."""
    if not pruned:
        return "Pruning: no trial pruned."
    saved = pruned * total - sum(pruned_steps)
    return (
        f"Pruning: {pruned} trials pruned after {sum(pruned_steps):,} of their "
        f"{pruned * total:,} env steps per seed: {saved:,} saved ({saved / (pruned * total):.0%})."
    )


def _markdown(
    path: Path,
    base: RunConfig,
    space: Sequence[Dimension],
    complete: Sequence[dict],
    count: Mapping[str, int],
    running: int,
    pruned_steps: Sequence[int],
) -> str:
    names = [d.name for d in space]
    seeds = f"{base.seed}-{base.seed + base.num_seeds - 1}"
    total = base.layout.total_steps
    lines = [
        f"# Tuning {base.algo.upper()} on {base.env}",
        "",
        f"{count['complete']} complete, {count['pruned']} pruned, {count['fail']} failed, "
        f"{running} running. Search seeds {seeds}; {base.layout.total_steps:,} env steps per "
        "trial; objective: mean over seeds of the mean of the last evaluations.",
        "",
        "Search: " + " ".join(f"`{d.describe()}`" for d in space),
        "",
        _pruning_line(pruned_steps, count["pruned"], total),
        "",
        "| rank | trial | objective | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for rank, row in enumerate(complete[:20], 1):
        values = " | ".join(str(row[n]) for n in names)
        lines.append(f"| {rank} | {row['trial']} | {row['objective']:.1f} | {values} |")
    if complete:
        lines += [
            "",
            "Report the best on seeds no search used (the preset file refuses the search seeds):",
            "",
            f"    jaxrl train {base.algo} --preset-file {path / 'best.json'} --num-seeds 10",
        ]
    return "\n".join(lines) + "\n"


def _figures(path: Path, study: Any, complete: int) -> None:
    """Optuna's optimization history and (from two complete trials) importances."""
    if complete < 1:
        return
    import warnings

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as figures

    drawings = [("history.png", figures.plot_optimization_history)]
    if complete >= 2:
        drawings.append(("importances.png", figures.plot_param_importances))
    for name, draw in drawings:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna marks its matplotlib figures experimental
            try:
                axes = draw(study)
            except (ValueError, RuntimeError):  # e.g. importances of a single-valued space
                continue
        axes.figure.savefig(path / name, dpi=110, bbox_inches="tight")
        plt.close(axes.figure)


__all__ = [
    "TUNE_SEED",
    "Dimension",
    "TuneError",
    "TuneResult",
    "objective",
    "parse_search",
    "tune",
]

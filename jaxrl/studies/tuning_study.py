"""The Optuna study of a tuning (:mod:`jaxrl.studies.tuning`) and the workers that train its
trials: the study opened in its storage (:func:`~jaxrl.studies.tuning_study.open_study`: the
sampler, the pruner, a journal file checked before Optuna reads it, the tuning directory's
``tune.json``), and which worker holds each trial
(:func:`~jaxrl.studies.tuning_study.this_worker`, its heartbeat renewed each evaluation period):
a trial a dead worker left RUNNING is taken over or asked again
(:func:`~jaxrl.studies.tuning_study.retry_orphans`).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxrl.config.files import DamagedFile, drop_cut_short, read_json, read_jsonl, write_text
from jaxrl.config.run_config import RunConfig
from jaxrl.studies.grid import Setting, SweepError, make_setting, saved_difference
from jaxrl.studies.search_space import Dimension, TuneError, label
from jaxrl.studies.tuning_report import objective_text, values_of

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


def _optuna_class(kind: str, name: str, names: dict[str, str]) -> Any:
    """The class ``name`` of ``optuna.samplers`` or ``optuna.pruners`` (``kind``), or the
    one ``names`` calls so."""
    import optuna

    module = getattr(optuna, f"{kind}s")
    cls = getattr(module, names.get(name, name), None)
    if not isinstance(cls, type) or not issubclass(cls, getattr(module, f"Base{kind.title()}")):
        raise TuneError(
            f"--{kind} {name}: not an Optuna {kind}; choose from {', '.join(names)} or a "
            f"class name of optuna.{kind}s"
        )
    return cls


def _sampler(name: str, seed: int) -> Any:
    import optuna

    cls = _optuna_class("sampler", name, SAMPLERS)
    if cls is optuna.samplers.TPESampler:  # concurrent asks kept apart (a batch, workers)
        return cls(seed=seed, constant_liar=True)
    try:
        return cls(seed=seed)
    except TypeError:
        return cls()


def _pruner(name: str, warmup: int) -> Any:
    import optuna

    cls = _optuna_class("pruner", name, PRUNERS)
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
    if journal.is_file():
        another = "another --storage" if storage is not None else "another --tune-dir"
        _check_journal(journal, f"restore it from a copy, or start the study in {another}")
    return optuna.storages.JournalStorage(JournalFileBackend(str(journal)))


def _check_journal(journal: Path, remedy: str) -> None:
    """A study's journal file, checked before Optuna reads it (under Optuna's lock of the
    file): an operation a killed worker left cut short (its last line, which Optuna never
    applied) is removed, so that the next one starts a line of its own; any other line that
    is not an operation of Optuna's journal is damage.

    Raises:
      DamagedFile: naming the journal, the line and what to do.
    """
    from optuna.storages.journal import JournalFileSymlinkLock

    lock = JournalFileSymlinkLock(str(journal))
    lock.acquire()
    try:
        drop_cut_short(journal)
        cut: list[int] = []
        read_jsonl(journal, remedy, ("op_code",), cut_short=cut)
        if cut:
            raise DamagedFile(journal, f"line {cut[0]}: not a whole operation", remedy)
    finally:
        lock.release()


def _describe(base: RunConfig, space: Sequence[Dimension], objective_evals: int) -> dict:
    return {
        "base": base.to_dict(),
        "search": [d.describe() for d in space],
        "objective": objective_text(objective_evals),
        "objective_evals": objective_evals,
    }


def _open_tune_dir(path: Path, described: dict[str, Any]) -> None:
    saved_path = path / "tune.json"
    if saved_path.is_file():
        remedy = "restore it from a copy, or start the study in another --tune-dir"
        saved = read_json(saved_path, remedy)
        differs = saved_difference(saved, described)
        if differs is not None:
            raise TuneError(
                f"{path} holds another study (its tune.json differs: {differs}); resume it with "
                "the same run, search and objective, or choose another --tune-dir"
            )
        return
    if path.exists() and any(path.iterdir()):
        raise TuneError(f"{path} exists and is not a tuning directory; choose another --tune-dir")
    (path / "trials").mkdir(parents=True, exist_ok=True)
    write_text(saved_path, json.dumps(described, indent=2) + "\n")


def boot_id() -> str:
    """This boot of the machine (a process id names a process only within one boot)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


LEASE_SECONDS = 1800.0
"""How long a trial stays another machine's worker's without a heartbeat (one each
evaluation period): after that, a worker that starts takes the trial as a dead worker's."""


def this_worker() -> dict[str, Any]:
    """This worker, with its heartbeat (the time it last said it runs)."""
    return {"host": socket.gethostname(), "boot": boot_id(), "pid": os.getpid(), "at": time.time()}


def same_worker(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(key) == b.get(key) for key in ("host", "boot", "pid"))


def alive(worker: dict[str, Any], lease: float = LEASE_SECONDS) -> bool:
    """Whether the worker that asked a trial runs still: on this machine, its boot and its
    process; on another, its heartbeat within ``lease`` seconds (a worker that records
    none is taken to be alive)."""
    if worker.get("host") != socket.gethostname():
        return "at" not in worker or time.time() - float(worker["at"]) < lease
    pid = int(worker.get("pid", -1))
    if worker.get("boot", boot_id()) != boot_id() or pid == os.getpid():  # rebooted; or this
        return False  # process's earlier call left it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def retry_orphans(
    study: Any,
    base: RunConfig | None = None,
    space: Sequence[Dimension] = (),
    path: Path = Path(),
    lease: float = LEASE_SECONDS,
) -> tuple[list[tuple[Any, Setting]], list[int]]:
    """Trials left RUNNING by a dead worker (:func:`alive`: of this machine, its process
    gone or the machine rebooted since; of another, no heartbeat for ``lease`` seconds): a
    trial whose run directory here holds a checkpoint is taken
    over, to be resumed from it (``[(trial, setting)]``); any other is failed and its values
    asked again (``enqueue_trial``; their numbers)."""
    import optuna

    from jaxrl.runs.checkpoints import CheckpointStore

    adopted, retried = [], []
    for frozen in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if alive(frozen.user_attrs.get("worker", {}), lease):
            continue
        trial = optuna.trial.Trial(study, frozen._trial_id)
        name = f"trial-{frozen.number}"
        store = CheckpointStore(path / "trials" / name / "checkpoints")
        if base is not None and store.latest_step() is not None:
            try:
                setting = make_setting(base, values_of(frozen.params, space), name, "trial")
            except (SweepError, KeyError, ValueError):
                setting = None
            if setting is not None:
                trial.set_user_attr("worker", this_worker())
                adopted.append((trial, setting))
                continue
        trial.set_user_attr("orphaned", True)
        study.tell(frozen.number, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(frozen.params, user_attrs={"retry_of": frozen.number})
        retried.append(frozen.number)
    return adopted, retried


def trial_counts(study: Any) -> tuple[int, int]:
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


def open_study(
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
    make_setting(base, base_values(base, space), "the base run", "--search")
    _open_tune_dir(path, _describe(base, space, objective_evals))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=study_name or path.resolve().name,
        storage=_storage(storage, path),
        sampler=sampler_object,
        pruner=pruner_object,
        direction="maximize",
        load_if_exists=True,
    )
    if study.trials:  # resumed: seeded as at its start, it would ask its first values again
        study.sampler = _sampler(sampler, sampler_seed + len(study.trials))
    return study


def base_values(base: RunConfig, space: Sequence[Dimension]) -> dict[str, Any]:
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

"""Studies: a grid of settings x seeds, each setting a run directory, compiled once per group.

:func:`sweep` trains every combination of a grid's values (hyperparameters and run settings)
with the same seeds, in a sweep directory: a run directory per setting, and the table,
ranking and figure of :mod:`jaxrl.studies.sweep_report`.

Settings form groups: the settings of a group differ only in numeric hyperparameters that
are pytree leaves of the algorithm object, and train together in ONE compiled program per
period length on JAX environments (:class:`jaxrl.training.jax_loop.JaxLoop`: the leaves are
arguments over a settings x seeds axis, mapped or vmapped as the seed axis is). A setting that
changes shapes or static structure (hidden sizes, ``num_envs``, a schedule...) starts another
group, compiled once. The host driver trains a group's settings one after another in the same
process. A sweep is resumable: a setting whose run finished (``final_eval.json``) is not
trained again; the others continue from their newest checkpoint (a group of the jitted
driver from the newest period all its settings have, bit-identical to an uninterrupted
sweep; a host setting as a resumed ``jaxrl train`` does), or start over where they have
none. ``stop`` (SIGTERM on the command line) checkpoints the group under way at the end of
its period.

On JAX environments a sweep runs as a job of several processes as ``jaxrl train`` does
(:func:`jaxrl.training.initialize_distributed`): every process calls :func:`sweep` with the
same arguments, each group's settings x seeds axis is split over every process's devices
(each device trains its block, as one process would), and process 0 alone reads and writes
the sweep directory: which settings remain is what it finds there.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxrl.config.files import read_json, write_text
from jaxrl.config.run_config import RunConfig, check_base
from jaxrl.runs.progress import group_progress, update_group
from jaxrl.runs.run_dir import RunDir
from jaxrl.runs.tracking import DEFAULT_TRACKING, Tracking
from jaxrl.studies.grid import Setting, SweepError, groups, resolve_settings, saved_difference
from jaxrl.studies.sweep_report import SweepResult, finished, write_summary

# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def _train_jax_group(
    settings: Sequence[Setting],
    run_dirs: Sequence[RunDir],
    on_period: Callable[[int, int, list[np.ndarray]], bool] | None = None,
    *,
    resume: bool = False,
    stop: Callable[[], bool] | None = None,
    on_setup: Callable[[str], None] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
) -> str:
    """One group on the jitted driver: one program over its settings x seeds; each setting's
    run directory written as :func:`jaxrl.runs.runner.train_run` writes it. Returns a line on
    its compile time.

    ``on_period(period, env_steps, returns)`` is called after each evaluation period with
    each setting's evaluation returns ``[num_seeds]``; ``True`` stops the group there (its
    runs stay unfinished: a tuner has pruned every setting of the group). ``resume``,
    ``stop``, ``on_setup`` and ``tracking``: :func:`jaxrl.runs.runner.train_group`."""
    from jaxrl.runs.runner import train_group

    configs = [s.config for s in settings]
    loop = train_group(
        configs, run_dirs, on_period, resume=resume, stop=stop, on_setup=on_setup,
        tracking=tracking,
    )  # fmt: skip
    return f"period programs compiled in {loop.compile_seconds:.1f} s"


def _train_host_group(
    settings: Sequence[Setting],
    run_dirs: Sequence[RunDir],
    *,
    resume: bool = False,
    stop: Callable[[], bool] | None = None,
    on_setup: Callable[[str], None] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
    progress: bool = False,
) -> str:
    """One group on the host driver: its settings one after another in this process (a
    ``stop`` ends the setting under way at its period, checkpointed, and starts no other),
    each with ``jaxrl train``'s progress on stderr where ``progress``."""
    from jaxrl.runs.runner import train_run

    for setting, run_dir in zip(settings, run_dirs, strict=True):
        if stop is not None and stop():
            break
        say = on_setup or (lambda line: None)
        train_run(
            setting.config, run_dir, resume=resume, stop=stop, progress=progress, on_setup=say,
            tracking=tracking,
        )  # fmt: skip
    return "host driver, one setting after another"


# ---------------------------------------------------------------------------------------------
# The sweep directory
# ---------------------------------------------------------------------------------------------


def _describe(base: RunConfig, grid: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    return {
        "base": base.to_dict(),
        "grid": {name: [list(v) if isinstance(v, tuple) else v for v in values]
                 for name, values in grid.items()},
    }  # fmt: skip


def _open_sweep_dir(path: Path, described: dict[str, Any]) -> None:
    """Create the sweep directory, or check that it holds this sweep (to resume it)."""
    saved_path = path / "sweep.json"
    if saved_path.is_file():
        remedy = "restore it from a copy, or start the sweep in another --sweep-dir"
        saved = read_json(saved_path, remedy, ("base", "grid"))
        differs = saved_difference(saved, described)
        if differs is not None:
            raise SweepError(
                f"{path} holds another sweep (its sweep.json differs: {differs}); resume it "
                "with the same grid and settings, or choose another sweep directory"
            )
        return
    if path.exists() and any(path.iterdir()):
        raise SweepError(f"{path} exists and is not a sweep directory; choose another")
    (path / "runs").mkdir(parents=True, exist_ok=True)
    write_text(saved_path, json.dumps(described, indent=2) + "\n")


def sweep(
    base: RunConfig,
    grid: Mapping[str, Sequence[Any]],
    sweep_dir: str | Path,
    *,
    stop_after_groups: int | None = None,
    on_group: Callable[[str], None] | None = None,
    jobs: int = 1,
    stop: Callable[[], bool] | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
) -> SweepResult:
    """Train every setting of ``grid`` over ``base`` (each with ``base``'s seeds) in
    ``sweep_dir``, or the settings an earlier call did not finish, and write the sweep's
    table, ranking and figure.

    Args:
      base: the run every setting starts from
        (:meth:`~jaxrl.config.run_config.RunConfig.from_preset`).
      grid: field -> values (hyperparameters and run settings the drivers depend on;
        :func:`~jaxrl.studies.grid.parse_grid` reads command-line strings).
      sweep_dir: the sweep directory (created, or resumed when it holds this sweep).
      stop_after_groups: stop after training this many groups, as an interruption would.
      on_group: called with a line before each group trains (with ``jobs``, as each setting
        starts and ends).
      jobs: on a host environment, train up to this many settings at once, each in a
        process of its own on its own share of the CPUs (:mod:`jaxrl.studies.processes`; a
        setting's numbers are then those of a run on as many CPUs); the CPUs are dealt
        into ``min(jobs, settings to train)`` shares, and a single setting trains in this
        process. A JAX environment's settings train in one program: ``jobs`` must be 1
        there.
      stop: asked after every evaluation period (as :func:`jaxrl.runs.runner.train_run`'s)
        and before each group; ``True`` checkpoints the group under way at that period and
        ends the call (its settings stay unfinished: the same call again resumes them from
        those checkpoints, a JAX group bit-identical to an uninterrupted one).
      tracking: the experiment trackers each setting's run logs to
        (:mod:`jaxrl.runs.tracking`), grouped by the sweep directory's name.

    In a job of several processes (:func:`jaxrl.training.initialize_distributed`; JAX
    environments only) every process calls it with the same arguments; process 0 alone
    reads and writes ``sweep_dir`` (see the module docstring), and the others' result holds
    no rows, only the counts.

    Raises:
      SweepError: an invalid grid, ``jobs``, a directory holding another sweep, or a host
        environment in a job of several processes, before anything compiles.
      SettingError: in a job of several processes, seeds that do not split evenly over
        its devices.
      SettingsFailed: with ``jobs``, a setting's process failed (its traceback is printed; the
        others finished, and the sweep resumes it).
    """
    check_base(base)
    if not grid:
        raise SweepError("the grid is empty: give at least one --sweep FIELD=VALUE,...")
    _check_jobs(jobs, base)
    _check_processes(base)
    settings = resolve_settings(base, grid)
    path = Path(sweep_dir)
    _open_in_step(path, _describe(base, grid))
    ended = _primary_finished(path, settings)
    todo = groups([s for s, done in zip(settings, ended, strict=True) if not done])
    todo = todo if stop_after_groups is None else todo[:stop_after_groups]
    flat = [s for group in todo for s in group]
    tracking = tracking.grouped(path.resolve().name)
    if min(jobs, len(flat)) > 1:  # one setting left trains here, on all the CPUs
        _train_side_by_side(flat, path, min(jobs, len(flat)), on_group, tracking, stop)
        return write_summary(path, settings, list(grid))
    _train_groups(todo, path, on_group, stop, tracking)
    return _summary_in_step(path, settings, list(grid))


def _train_groups(
    todo: Sequence[Sequence[Setting]],
    path: Path,
    on_group: Callable[[str], None] | None,
    stop: Callable[[], bool] | None,
    tracking: Tracking,
) -> None:
    """The groups ``todo``, one after another in this process (every process of a job),
    each continued from its checkpoints where it has them; none starts once ``stop``."""
    from jaxrl.training.sharding import is_primary

    say = on_group or (lambda line: None)
    for number, group in enumerate(todo):
        if stop is not None and stop():
            break
        run_dirs = [_open_run_dir(path, setting) for setting in group]
        names = "; ".join(s.name for s in group)
        seeds = group[0].config.num_seeds
        say(f"group {number + 1}: {len(group)} setting(s) x {seeds} seeds: {names}")
        start = time.perf_counter()
        common = {"resume": True, "stop": stop, "on_setup": resumed_only(on_group),
                  "tracking": tracking}  # fmt: skip
        shown = on_group is not None and is_primary()  # train's progress line, per group
        if group[0].config.backend == "jax":
            label = f"group {number + 1}/{len(todo)}"
            with group_progress(label, [s.config for s in group], quiet=not shown) as progress:
                note = _train_jax_group(group, run_dirs, update_group(progress), **common)
        else:  # one setting after another, each with train's progress
            note = _train_host_group(group, run_dirs, progress=shown, **common)
        say(f"  group {number + 1} done in {time.perf_counter() - start:.1f} s ({note})")


def _check_processes(base: RunConfig) -> None:
    """In a job of several processes: a JAX environment, and seeds that split evenly over
    the job's devices (each setting's seeds are split over them as a run's)."""
    from jaxrl.training.sharding import SeedPlacement, several_processes

    if not several_processes():
        return
    if base.backend != "jax":
        raise SweepError(
            f"a sweep on a host environment ({base.env}) runs in one process: train its "
            "settings side by side with --jobs N instead of several processes"
        )
    SeedPlacement.for_job().check(base.num_seeds)


def _open_in_step(path: Path, described: dict[str, Any]) -> None:
    """:func:`_open_sweep_dir` by process 0 of a job of several processes (the only
    process of one); if it fails, every process stops."""
    from jaxrl.training.sharding import is_primary, processes_agree

    failure: SweepError | None = None
    if is_primary():
        try:
            _open_sweep_dir(path, described)
        except SweepError as error:
            failure = error
    if not processes_agree(failure is None):
        raise failure or SweepError(
            "another process of the job could not open the sweep directory (see its error)"
        )


def _primary_finished(path: Path, settings: Sequence[Setting]) -> list[bool]:
    """Which ``settings`` have finished, as process 0 reads the sweep directory (every
    process of a job then trains the same groups)."""
    from jaxrl.training.sharding import is_primary, primary_value

    own = [is_primary() and finished(path / "runs" / s.name) for s in settings]
    return [bool(flag) for flag in primary_value(np.asarray(own, np.int32))]


def _summary_in_step(path: Path, settings: Sequence[Setting], fields: Sequence[str]) -> SweepResult:
    """:func:`write_summary` by process 0; every process returns the count of finished
    settings it wrote (the others' results hold no rows)."""
    from jaxrl.training.sharding import is_primary, primary_value

    result = write_summary(path, settings, fields) if is_primary() else None
    count = int(primary_value(np.asarray(result.finished if result else 0, np.int32)))
    return result or SweepResult(path, [], [], {}, count, len(settings))


def resumed_only(on_group: Callable[[str], None] | None) -> Callable[[str], None]:
    """What a sweep says of a run's set-up: only where it resumes (or skipped a damaged
    checkpoint), not the description of every fresh run."""
    say = on_group or (lambda line: None)
    return lambda line: say(f"  {line}") if "resum" in line or "skipped" in line else None


def _check_jobs(jobs: int, base: RunConfig) -> None:
    from jaxrl.studies.processes import check_jobs

    try:
        check_jobs(jobs)
    except ValueError as error:
        raise SweepError(str(error)) from None
    if jobs > 1 and base.backend == "jax":
        raise SweepError(
            f"--jobs {jobs}: a sweep on a JAX environment trains its settings in one program "
            "(mapped or vmapped); --jobs is for host environments (gymnasium, EnvPool)"
        )


def _open_run_dir(path: Path, setting: Setting) -> RunDir:
    """The setting's run directory: an unfinished one that a stopped sweep left (resumed
    from its checkpoints), else made anew by process 0 of a job of several processes (the
    only process of one)."""
    from jaxrl.training.sharding import is_primary

    run_dir = path / "runs" / setting.name
    if (run_dir / "config.json").is_file() or not is_primary():
        return RunDir(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    return RunDir.create(run_dir)


def _train_side_by_side(
    settings: Sequence[Setting],
    path: Path,
    jobs: int,
    on_group: Callable[[str], None] | None,
    tracking: Tracking = DEFAULT_TRACKING,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Host settings, up to ``jobs`` at once, each in a process of its own on its share of
    the CPUs (:func:`jaxrl.studies.processes.run_in_processes`). Once ``stop`` is True no setting
    starts and those under way are sent SIGTERM: each checkpoints its period (within the
    grace of ``stop``, a :class:`jaxrl.runs.preemption.Preemption`, where it is one)."""
    from jaxrl.runs.preemption import DEFAULT_GRACE
    from jaxrl.studies.processes import Task, TaskEnd, run_in_processes

    grace = getattr(stop, "grace", DEFAULT_GRACE)

    say = on_group or (lambda line: None)
    started: dict[str, float] = {}

    def tasks() -> Iterator[Task]:
        for setting in settings:
            run_dir = _open_run_dir(path, setting)
            started[setting.name] = time.perf_counter()
            say(f"{setting.name}: {setting.config.num_seeds} seeds, started")
            args = (setting.config, str(run_dir.path), tracking, grace)
            yield Task(setting.name, _train_setting, args)

    def ended(end: TaskEnd) -> None:
        seconds = time.perf_counter() - started[end.task.label]
        how = {0: "done", INTERRUPTED: "interrupted"}.get(
            end.exit_status, f"FAILED (exit status {end.exit_status})"
        )
        say(f"  {end.task.label}: {how} in {seconds:.1f} s on CPUs {list(end.cpus)}")

    ends = run_in_processes(tasks(), jobs, on_end=ended, stop=stop)
    failed = [
        f"{end.task.label} (exit status {end.exit_status})"
        for end in ends
        if end.exit_status not in (0, INTERRUPTED)
    ]
    if failed:
        raise SettingsFailed(
            f"the process of setting(s) {', '.join(failed)} ended before the setting finished "
            "(a failure's traceback is above; a negative status: killed by that signal); the "
            "other settings went on, and the same command continues the sweep"
        )


class SettingsFailed(RuntimeError):
    """Settings of a sweep with ``jobs`` whose processes failed or were killed; the others
    finished, and the same sweep continues the failed ones from their checkpoints."""


INTERRUPTED = 130
"""The exit status of a setting's process (``jobs``) interrupted before a period ended."""


def _train_setting(config: RunConfig, run_dir: str, tracking: Tracking, grace: float) -> int:
    """One host setting, in a process of ``jobs`` (:func:`_train_side_by_side`); SIGTERM
    stops it at the end of its period, checkpointed."""
    from jaxrl.runs.preemption import Preemption
    from jaxrl.runs.runner import train_run

    stop = Preemption(grace).install()
    try:
        train_run(
            config, RunDir(Path(run_dir)), resume=True, progress=False, tracking=tracking, stop=stop
        )
    except KeyboardInterrupt:  # no period ended within the grace: its last checkpoint stays
        return INTERRUPTED
    return 0

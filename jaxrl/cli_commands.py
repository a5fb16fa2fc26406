"""What the ``jaxrl`` commands do, once :func:`jaxrl.cli.parse` has read the command line:
``train`` (resolve the run's configuration, or the resumed run's, then train it in its run
directory), ``evaluate``, ``plot`` and ``compare``. Each returns the exit status and raises
:class:`jaxrl.cli_usage.UsageError` for a problem the user can fix (one line, status 2)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl.cli_parse import (
    PROG,
    CompareCommand,
    EvaluateCommand,
    PlotCommand,
    command_spec,
    given_options,
    option_flag,
    preset_in_force,
    rewrite_aliases,
)
from jaxrl.cli_usage import UsageError, name_flags
from jaxrl.io.files import DamagedFile

# ---------------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------------


def _enable_compilation_cache() -> None:
    """Keep compiled programs between runs (JAX's persistent cache), so a repeated or resumed
    run starts in seconds. ``JAX_COMPILATION_CACHE_DIR`` chooses another place."""
    import jax

    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = root / "jaxrl" / "jax-compilation-cache"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", str(path))


def _check_options(values: dict[str, Any], given: set[str]) -> None:
    """The run settings written on the command line (``given``), checked by the one rule
    (:meth:`jaxrl.training.settings.RunSettings.validate`; None asks the command to choose),
    before a run directory is opened, and the command's own ``--stop-after-periods``."""
    from jaxrl.training.settings import RunSettings, settings_fields

    written = given & {f.name for f in settings_fields()}
    RunSettings.validate({n: values[n] for n in written if values[n] is not None})
    stop = values["stop_after_periods"]
    if stop is not None and stop < 1:
        raise UsageError(f"--stop-after-periods must be a positive integer, got {stop}")
    grace = values.get("preemption_grace", 1.0)
    if not grace > 0:
        raise UsageError(f"--preemption-grace must be positive seconds, got {grace}")


def _tracking(args: Any) -> Any:
    """``--logger``'s experiment trackers (:class:`jaxrl.io.tracking.Tracking`), their
    packages found; else a one-line usage error naming ``--logger`` or the missing extra."""
    from jaxrl.io.tracking import Tracking, TrackingError, parse_loggers

    try:
        return Tracking(parse_loggers(args.logger)).check()
    except TrackingError as error:
        raise UsageError(str(error)) from None


def _resolve_train(args: Any, argv: list[str]) -> tuple[Any, Any, bool]:
    """The run's configuration and directory (created or opened), and whether to resume."""
    from jaxrl.io.run_dir import RunDir, default_run_path
    from jaxrl.io.runner import check_config
    from jaxrl.training.sharding import is_primary

    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    _check_options(values, given)
    if values["resume"] is not None:
        config, run_dir = _resumed_config(algo, {**values, **hyper}, given)
        check_config(config)
        return config, run_dir, True
    config = _new_config(algo, values, hyper, given, preset_in_force(argv))
    if values["preset_file"] is not None:
        from jaxrl.io.config import PresetFile

        try:
            PresetFile.load(values["preset_file"]).check_seeds(config.seed, config.num_seeds)
        except ValueError as error:
            raise UsageError(f"--preset-file: {error}") from None
    check_config(config)
    path = values["run_dir"] or default_run_path(algo, values["env"])
    if not is_primary():  # process 0 of a job of several processes writes the run directory
        return config, RunDir(Path(path)), False
    return config, RunDir.create(path), False


def _resumed_config(algo: str, wanted: dict[str, Any], given: set[str]) -> tuple[Any, Any]:
    """The configuration of the run in ``--resume``'s directory, with the settings a resume
    may change (:data:`jaxrl.io.config.RESUME_OVERRIDES`) taken from ``given``."""
    from jaxrl.io.config import RESUME_OVERRIDES, ResumeConflict, RunConfig
    from jaxrl.io.run_dir import RunDir

    try:
        run_dir = RunDir.open(wanted["resume"])
    except ValueError as error:
        raise UsageError(f"--resume: {error}") from None
    saved = RunConfig.load(run_dir.config)
    if saved.algo != algo:
        raise UsageError(
            f"{wanted['resume']} is a {saved.algo} run; resume it with jaxrl train "
            f"{saved.algo} --resume {wanted['resume']}"
        )
    try:
        config = saved.resumed({name: wanted[name] for name in given if name in wanted})
    except ResumeConflict as conflict:
        allowed = ", ".join(option_flag(name) for name in RESUME_OVERRIDES)
        raise UsageError(
            f"{option_flag(conflict.name)} {conflict.given} differs from the resumed run's "
            f"{conflict.saved}: a resumed run keeps its configuration (only {allowed} may "
            "change)"
        ) from None
    return config, run_dir


def _new_config(
    algo: str, values: dict[str, Any], hyper: dict[str, Any], given: set[str], preset: str
) -> Any:
    """The configuration of a new run: the options' values, the drivers and backends
    resolved (:func:`_backends`), the evaluation interval adapted to a budget given without
    one (:meth:`jaxrl.training.settings.RunSettings.for_budget`)."""
    from jaxrl.io.config import RunConfig, run_defaults
    from jaxrl.training.settings import DEFAULT_NUM_SEEDS, RunSettings, settings_fields

    backend, env_backend, brax_backend = _backends(values)
    settings = {f.name: values[f.name] for f in settings_fields() if f.metadata["cli"]}
    written = {name: settings[name] for name in given if name in settings}
    settings.update(RunSettings.for_budget(run_defaults(algo, preset, values["env"]), written))
    settings.update(
        num_seeds=settings["num_seeds"] or DEFAULT_NUM_SEEDS[backend],
        env_backend=env_backend,
        brax_backend=brax_backend,
    )
    return RunConfig(
        algo=algo,
        env=values["env"],
        backend=backend,
        hyperparameters=hyper,
        preset=preset,
        **settings,
    )


def _backends(values: dict[str, Any]) -> tuple[str, str, str | None]:
    """``(backend, env_backend, brax_backend)`` of ``--env`` with ``--backend``,
    ``--env-backend`` and ``--brax-backend``: the driver, the host environments' library and
    Brax's physics, resolved (errors name the flag to change)."""
    from jaxrl.envs import resolve_backend, resolve_env_backend
    from jaxrl.envs.brax_env import DEFAULT_BRAX_BACKEND, is_brax_id

    env = values["env"]
    host_backend = values["env_backend"] != "auto"
    try:
        backend = resolve_backend(env, "gymnasium" if host_backend else values["backend"])
    except ValueError as error:  # an unknown id, or a Brax id on the host driver
        flag = "--env"
        if is_brax_id(env):
            flag = "--env-backend" if host_backend else "--backend"
        raise UsageError(f"{flag}: {error}") from None
    if host_backend and values["backend"] == "jax":
        raise UsageError(
            f"--env-backend {values['env_backend']} runs host environments: it cannot be "
            "combined with --backend jax"
        )
    env_backend = "auto"
    if backend == "gymnasium":
        env_backend = resolve_env_backend(env, values["env_backend"])
    brax_backend = values["brax_backend"]
    if is_brax_id(env):
        brax_backend = brax_backend or DEFAULT_BRAX_BACKEND
    elif brax_backend is not None:
        raise UsageError(f"--brax-backend is for Brax environments (--env brax:NAME), not {env}")
    return backend, env_backend, brax_backend


def _write_fault(error: OSError, resume_cmd: str) -> int:
    """A file that could not be written during training, as one line (exit status 1): the
    files written before it are whole (:mod:`jaxrl.io.files`, checkpoints committed only
    when complete), so the command continues from the last checkpoint."""
    where = f" {error.filename}" if error.filename else ""
    reason = error.strerror or str(error)
    print(
        f"{PROG}: error: cannot write{where}: {reason}; what was saved before is intact: fix "
        f"it (free space, permissions) and continue with: {resume_cmd}",
        file=sys.stderr,
    )
    return 1


def _format_seconds(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def _budget_notes(config: Any) -> list[str]:
    """What the run does where it differs from what its flags say (said before training)."""
    layout = config.layout
    notes = []
    if layout.total_steps != config.total_steps:
        notes.append(
            f"Note: --total-steps {config.total_steps:,} is not a whole number of collections "
            f"(--num-envs x --num-steps = {layout.steps_per_collect:,} env steps): the run "
            f"takes {layout.total_steps:,} env steps per seed."
        )
    if layout.period_collections[-1] != layout.collections_per_period:
        notes.append(
            f"Note: --eval-every {config.eval_every:,} does not divide the run: evaluations "
            f"every {layout.steps_per_period:,} env steps and after the last step "
            f"({layout.total_steps:,})."
        )
    return notes


def _join_job(args: Any, argv: list[str]) -> None:
    """Join the job of several processes the launch options describe (or a cluster manager
    launched: :func:`jaxrl.training.initialize_distributed`), before any other JAX call."""
    from jaxrl.training.settings import launch_settings
    from jaxrl.training.sharding import initialize_distributed

    try:
        initialize_distributed(**{name: args.run[name] for name in launch_settings()})
    except ValueError as error:
        flags = command_spec(argv, preset_in_force(argv)).options
        raise UsageError(name_flags(str(error), flags)) from None


def _resolve_in_step(args: Any, argv: list[str]) -> tuple[Any, Any, bool]:
    """:func:`_resolve_train` in every process of a job together: if it fails in one (process
    0 alone creates the run directory), every process stops, none waits for the others."""
    from jaxrl.training.sharding import processes_agree

    failure: UsageError | None = None
    resolved = None
    try:
        resolved = _resolve_train(args, argv)
    except UsageError as error:
        failure = error
    except DamagedFile as error:  # names a file, not flags
        failure = UsageError(str(error))
    except (ValueError, TypeError, ModuleNotFoundError) as error:
        # The library names Python fields (TRPO.max_kl); the user changes flags (--max-kl).
        flags = command_spec(argv, preset_in_force(argv)).options
        failure = UsageError(name_flags(str(error), flags))
    if not processes_agree(failure is None) or resolved is None:
        raise failure or UsageError(
            "another process of the job could not set up the run (see its error)"
        )
    return resolved


def train(args: Any, argv: list[str]) -> int:
    import numpy as np

    from jaxrl.envs import EnvironmentError_
    from jaxrl.io.checkpoints import CheckpointError
    from jaxrl.io.preemption import Preemption
    from jaxrl.io.runner import train_run
    from jaxrl.io.tracking import TrackingError
    from jaxrl.training.sharding import is_primary, leave_job, several_processes

    tracking = _tracking(args)
    _enable_compilation_cache()
    _join_job(args, argv)
    config, run_dir, resume = _resolve_in_step(args, argv)
    primary = is_primary()
    say = (lambda message: print(message, file=sys.stderr, flush=True)) if primary else None
    for line in _budget_notes(config) if primary else ():
        print(line, file=sys.stderr, flush=True)
    resume_cmd = f"jaxrl train {config.algo} --resume {run_dir.path}"
    preemption = Preemption(args.preemption_grace).install()
    try:
        result = train_run(
            config,
            run_dir,
            resume=resume,
            stop_after_periods=args.stop_after_periods,
            stop=preemption,
            on_setup=say,
            tracking=tracking,
        )
        preemption.disarm()  # a SIGTERM during the last period: the run finished anyway
    except KeyboardInterrupt:
        print(f"\nInterrupted. Continue with: {resume_cmd}", file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a directory that became unwritable
        again = resume_cmd if run_dir.config.is_file() else "jaxrl " + " ".join(argv)
        return _write_fault(error, again)
    except CheckpointError as error:  # no checkpoint of the run restores
        raise UsageError(f"--resume {run_dir.path}: {error}; train it anew") from None
    except TrackingError as error:  # wandb could not start (not logged in, ...)
        raise UsageError(f"{error}; the run directory stays: continue with {resume_cmd}") from None
    except EnvironmentError_ as error:  # a fault during training: the checkpoints stand
        message = " ".join(str(error).split())
        print(f"jaxrl: error: {message}; the run stopped: continue with: {resume_cmd}",
              file=sys.stderr)  # fmt: skip
        return 1
    except Exception:
        if several_processes():  # stop now: the others cannot go on without this process
            import traceback

            leave_job(traceback.format_exc())
        raise
    if not primary:
        import jax

        print(
            f"Process {jax.process_index()} of {jax.process_count()}: done (process 0 wrote "
            "the run directory).",
            file=sys.stderr,
        )
        return 0
    if preemption.requested and not result.finished:
        print(
            f"\nStopped by SIGTERM after period {result.period}/{result.num_periods} "
            f"(checkpointed). Continue with: {resume_cmd}",
            file=sys.stderr,
        )
        return 130
    if resume and result.finished and not np.any(np.isfinite(result.eval_returns)):
        print(
            f"{run_dir.path} has finished all {result.num_periods} evaluation periods; raise "
            f"--total-steps to extend it, or see it with: jaxrl evaluate {run_dir.path}"
        )
        return 0
    _report(config, run_dir, result, resume_cmd, tracking)
    if result.finished and args.video is not None:
        _video(str(run_dir.path), args.video, 0, 1, None)
    return 0


def _report(config: Any, run_dir: Any, result: Any, resume_cmd: str, tracking: Any) -> None:
    """What a finished (or stopped) ``jaxrl train`` prints: the run, its report, its files."""
    from jaxrl.io.report import CurveSummary, report_lines

    seeds = f"{config.num_seeds} seed{'s' if config.num_seeds != 1 else ''}"
    state = "Finished" if result.finished else "Stopped"
    print(
        f"{state} {config.algo.upper()} on {config.env}: {seeds} x {result.env_steps:,} env steps "
        f"(period {result.period}/{result.num_periods}) in {_format_seconds(result.seconds)}."
    )
    curve = CurveSummary.load(run_dir.evals_csv)
    for line in report_lines(config.env, result.final, curve, config.algo):
        print(line)
    print(f"Learning curve: {result.plot}")
    print(f"Checkpoint:     {result.checkpoint if result.checkpoint else '(none yet)'}")
    print(f"Metrics:        {run_dir.updates_csv}, {run_dir.evals_csv}")
    if tracking.tensorboard:
        print(f"TensorBoard:    tensorboard --logdir {run_dir.tensorboard}")
    if tracking.wandb:
        from jaxrl.io.tracking import WANDB_ID_FILE

        run_id = (run_dir.path / WANDB_ID_FILE).read_text().strip()
        print(f"W&B:            run {run_id} (offline runs: wandb sync)")
    if result.finished:
        print(f"Evaluate:       jaxrl evaluate {run_dir.path}")
    else:
        print(f"Continue:       {resume_cmd}")


# ---------------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------------


def _resolve_sweep(args: Any, argv: list[str]) -> tuple[Any, dict[str, list[Any]], Path]:
    """The sweep's base run, its grid and its directory (errors before anything compiles)."""
    from jaxrl.io.grid import parse_grid
    from jaxrl.io.run_dir import default_run_path

    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    _check_options({**values, "stop_after_periods": None}, given)
    if values["stop_after_groups"] is not None and values["stop_after_groups"] < 1:
        raise UsageError("--stop-after-groups must be a positive integer")
    preset = preset_in_force(argv)
    grid = parse_grid(algo, preset, values["sweep"])
    base = _new_config(algo, values, hyper, given, preset)
    path = values["sweep_dir"] or default_run_path(algo, values["env"], root="sweeps")
    return base, grid, Path(path)


def _study_launch(args: Any, argv: list[str]) -> str | None:
    """The launch options of a sweep or a study, or a cluster manager's launch of several
    processes, in words (None: none). With them, this process joins the job first
    (:func:`_join_job`, before any JAX call; the environment's backend is known only after
    it), and the study must then be on a JAX environment (:func:`_refuse_host_study`)."""
    from jaxrl.training.settings import launch_settings
    from jaxrl.training.sharding import cluster_process_count

    given = sorted(given_options(argv) & set(launch_settings()))
    launched = cluster_process_count() or 1
    if not given and launched <= 1:
        return None
    _join_job(args, argv)
    return option_flag(given[0]) if given else f"{launched} processes (a cluster manager's)"


def _refuse_host_study(launch: str | None, base: Any, command: str) -> None:
    """A host environment's sweep or study in a job of several processes, refused in one
    line naming the option and what to use instead."""
    from jaxrl.training.sharding import several_processes

    if launch is None or not several_processes() or base.backend == "jax":
        return
    instead = {
        "sweep": "use --jobs N to train its settings side by side",
        "tune": "run more tune workers on the same --storage instead",
    }[command]
    raise UsageError(
        f"{launch}: jaxrl {command} on a host environment ({base.env}) runs in one "
        f"process; {instead}"
    )


def _done_elsewhere(what: str) -> int:
    """What a process of a job other than process 0 says when its part is done."""
    import jax

    print(
        f"Process {jax.process_index()} of {jax.process_count()}: done (process 0 wrote the "
        f"{what}).",
        file=sys.stderr,
    )
    return 0


def _leave_job_on_failure() -> None:
    """In a job of several processes, end this process now with the traceback of the
    exception being handled: the others cannot go on without it (call it in ``except``)."""
    from jaxrl.training.sharding import leave_job, several_processes

    if several_processes():
        import traceback

        leave_job(traceback.format_exc())


def _study_error(error: Exception, argv: list[str]) -> UsageError:
    """A sweep's or a study's error as one line: a :class:`jaxrl.io.studies.SweepError`
    names the field as ``--sweep``/``--search`` wrote it, and the error of an invalid setting
    it carries (as any other error here) names the flags to change."""
    from jaxrl.io.grid import SweepError

    if isinstance(error, DamagedFile) or (isinstance(error, SweepError) and error.cause is None):
        return UsageError(str(error))
    flags = command_spec(argv, preset_in_force(argv)).options
    if isinstance(error, SweepError):
        return UsageError(f"{error.message}: {name_flags(str(error.cause), flags)}")
    return UsageError(name_flags(str(error), flags))


def _study_call(
    call: Callable[[], Any], argv: list[str], resume_cmd: str
) -> tuple[Any, int | None]:
    """``(call(), None)``, or ``(None, exit status)`` where the study ended early: Ctrl-C
    (130, with the command that continues) or a file it could not write (1, one line). An
    invalid setting is the one-line :class:`UsageError` (the same in every process of a
    job); any other failure stops every process of a job before it is raised."""
    from jaxrl.io.studies import SettingsFailed

    try:
        return call(), None
    except (ValueError, TypeError, ModuleNotFoundError) as error:
        raise _study_error(error, argv) from None
    except KeyboardInterrupt:
        print(f"\nInterrupted. Continue with: {resume_cmd}", file=sys.stderr)
        return None, 130
    except OSError as error:  # a full disk, a directory that became unwritable
        return None, _write_fault(error, resume_cmd)
    except SettingsFailed as error:  # a setting's process of --jobs failed or was killed
        print(f"{PROG}: error: {error}; continue with: {resume_cmd}", file=sys.stderr)
        return None, 1
    except UsageError:
        raise
    except Exception:
        _leave_job_on_failure()
        raise


def sweep(args: Any, argv: list[str]) -> int:
    from jaxrl.io.preemption import Preemption
    from jaxrl.io.studies import sweep as run_sweep
    from jaxrl.training.sharding import is_primary

    tracking = _tracking(args)
    _enable_compilation_cache()
    launch = _study_launch(args, argv)
    primary = is_primary()
    try:
        base, grid, path = _resolve_sweep(args, argv)
        _refuse_host_study(launch, base, "sweep")
        if not grid:
            raise UsageError("missing --sweep FIELD=VALUE,...: the grid to train")
        again = argv if "sweep_dir" in given_options(argv) else [*argv, "--sweep-dir", str(path)]
        resume_cmd = "jaxrl " + " ".join(again)
        preemption = Preemption(args.preemption_grace).install()
        said: list[str] = []

        def say(line: str) -> None:  # the directory once, before the first group trains
            if not primary:
                return
            if not said:
                said.append(f"Sweep directory {path}")
                print(said[0], file=sys.stderr, flush=True)
            print(line, file=sys.stderr, flush=True)

    except (ValueError, TypeError, ModuleNotFoundError) as error:
        raise _study_error(error, argv) from None
    result, status = _study_call(
        lambda: run_sweep(
            base, grid, path, stop_after_groups=args.stop_after_groups, on_group=say,
            jobs=args.jobs, stop=preemption, tracking=tracking,
        ),
        argv,
        resume_cmd,
    )  # fmt: skip
    preemption.disarm()
    if status is not None:
        return status
    if not primary:
        return _done_elsewhere("sweep directory")
    if preemption.requested and result.finished < result.total:
        print(
            f"\nStopped by SIGTERM with {result.finished} of {result.total} settings finished "
            f"(the group under way checkpointed). Continue with: {resume_cmd}",
            file=sys.stderr,
        )
        return 130
    print((path / "sweep.md").read_text(), end="")
    if result.finished < result.total:
        print(f"Stopped with {result.finished} of {result.total} settings; continue with:")
        print(f"  {resume_cmd}")
        return 0
    print(f"Table:    {path / 'sweep.csv'}")
    print(f"Figure:   {path / 'sweep.png'}")
    print(f"Runs:     {path / 'runs'} (jaxrl plot / compare / evaluate work on each)")
    return 0


# ---------------------------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------------------------


def _search_specs(values: dict[str, Any]) -> list[str]:
    """``--search`` specs, then those of ``--search-file`` (one per line, ``#`` comments)."""
    specs = list(values["search"])
    if values["search_file"] is not None:
        try:
            text = Path(values["search_file"]).read_text()
        except OSError as error:
            raise UsageError(
                f"--search-file {values['search_file']}: cannot read it ({error.strerror})"
            ) from None
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                specs.append(line.removeprefix("--search").strip())
    return specs


def tune(args: Any, argv: list[str]) -> int:
    from jaxrl.io.preemption import Preemption
    from jaxrl.io.run_dir import default_run_path
    from jaxrl.io.search_space import parse_search
    from jaxrl.io.tuning import TUNE_SEED
    from jaxrl.io.tuning import tune as run_tune
    from jaxrl.training.sharding import is_primary

    tracking = _tracking(args)
    _enable_compilation_cache()
    launch = _study_launch(args, argv)
    primary = is_primary()
    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    if "seed" not in given:
        values["seed"] = TUNE_SEED
    try:
        _check_options({**values, "stop_after_periods": None}, given)
        preset = preset_in_force(argv)
        space = parse_search(algo, preset, _search_specs(values))
        base = _new_config(algo, values, hyper, given, preset)
        _refuse_host_study(launch, base, "tune")
        path = Path(values["tune_dir"] or default_run_path(algo, values["env"], root="tunes"))
        again = argv if "tune_dir" in given else [*argv, "--tune-dir", str(path)]
        resume_cmd = "jaxrl " + " ".join(again)
        preemption = Preemption(args.preemption_grace).install()
    except (ValueError, TypeError, ModuleNotFoundError) as error:
        raise _study_error(error, argv) from None
    result, status = _study_call(
        lambda: run_tune(
            base,
            space,
            path,
            trials=args.trials,
            batch=args.batch,
            sampler=args.sampler,
            sampler_seed=args.sampler_seed,
            pruner=args.pruner,
            storage=args.storage,
            study_name=args.study_name,
            objective_evals=args.objective_evals,
            enqueue_base=args.enqueue_base,
            stop_after_batches=args.stop_after_batches,
            on_batch=(lambda line: print(line, file=sys.stderr, flush=True)) if primary else None,
            stop=preemption,
            tracking=tracking,
        ),
        argv,
        resume_cmd,
    )
    preemption.disarm()
    if status is not None:
        return status
    if result is None:
        return _done_elsewhere("tuning directory")
    ended = result.complete + result.pruned + result.failed
    if preemption.requested and ended < args.trials:
        print(
            f"\nStopped by SIGTERM with {ended} of {args.trials} trials ended (those under "
            f"way checkpointed). Continue with: {resume_cmd}",
            file=sys.stderr,
        )
        return 130
    print((path / "tune.md").read_text(), end="")
    if ended < args.trials:
        print(f"Stopped with {ended} of {args.trials} trials; continue with:")
        print(f"  {resume_cmd}")
    print(f"Table:    {path / 'tune.csv'}")
    if result.best is not None:
        print(f"Best:     {path / 'best.json'} (jaxrl train {algo} --preset-file ...)")
    return 0


# ---------------------------------------------------------------------------------------------
# evaluate, plot, compare
# ---------------------------------------------------------------------------------------------


def evaluate(args: EvaluateCommand) -> int:
    from jaxrl.io.checkpoints import CheckpointError
    from jaxrl.io.run_dir import RunDir, RunDirError
    from jaxrl.io.runner import evaluate_run
    from jaxrl.io.vocabulary import DETERMINISTIC, STOCHASTIC

    if args.episodes < 1:
        raise UsageError(f"--episodes must be a positive integer, got {args.episodes}")
    if args.video is not None:
        return _video(args.run_dir, args.video, args.seed_index, args.video_episodes, args.step)
    if args.step is not None and Path(args.run_dir).is_dir():
        from jaxrl.io.checkpoints import CheckpointStore

        steps = CheckpointStore(RunDir(Path(args.run_dir)).checkpoints).steps()
        if args.step not in steps:
            have = ", ".join(map(str, steps)) if steps else "none"
            raise UsageError(
                f"--step {args.step}: {args.run_dir} has no finished checkpoint at that "
                f"evaluation period (its checkpoints: {have})"
            )
    _enable_compilation_cache()
    try:
        loaded, returns = evaluate_run(args.run_dir, args.episodes, args.seed, args.step)
    except (RunDirError, CheckpointError, ValueError) as error:
        raise UsageError(str(error)) from None
    config = loaded.config
    env_steps = loaded.metadata.get("env_steps")
    policy = _evaluated_policy(RunDir(Path(args.run_dir)), env_steps)
    mode = DETERMINISTIC if loaded.agent.evaluates_deterministically else STOCHASTIC
    if args.json:
        print(
            json.dumps(
                {
                    "run_dir": args.run_dir,
                    "algo": config.algo,
                    "env": config.env,
                    "policy": policy,
                    "mode": mode,
                    "checkpoint": loaded.step,
                    "env_steps": env_steps,
                    "episodes": args.episodes,
                    "returns": [float(r) for r in returns],
                    "mean": float(returns.mean()),
                    "std": float(returns.std()),
                }
            )
        )
        return 0
    print(
        f"{config.algo.upper()} on {config.env}: {policy} (checkpoint {loaded.step}, "
        f"{env_steps or 0:,} env steps per seed), {mode}, {args.episodes} episodes per seed:"
    )
    for seed, value in enumerate(returns):
        print(f"  seed {seed}: {value:10.1f}")
    spread = f" +- {returns.std():.1f}" if len(returns) > 1 else ""
    print(f"Mean return: {returns.mean():.1f}{spread}")
    return 0


def _video(run_dir: str, path: str, seed_index: int, episodes: int, step: int | None) -> int:
    """``--video``: episodes of one seed's policy written to ``path``."""
    from jaxrl.io.checkpoints import CheckpointError
    from jaxrl.io.run_dir import RunDirError
    from jaxrl.io.video import record_video

    _enable_compilation_cache()
    if episodes < 1:
        raise UsageError(f"--video-episodes must be a positive integer, got {episodes}")
    try:
        video = record_video(run_dir, path, seed_index=seed_index, episodes=episodes, step=step)
    except (RunDirError, CheckpointError, ValueError) as error:
        raise UsageError(str(error)) from None
    returns = ", ".join(f"{r:.1f}" for r in video.returns)
    print(
        f"Video: {video.path} ({video.frames} frames; seed {seed_index}'s policy of checkpoint "
        f"{video.step}; episode returns {returns})"
    )
    return 0


def _evaluated_policy(run_dir: Any, env_steps: int | None) -> str:
    """``"final policy"`` for the checkpoint a finished run ended with (the policy of its
    ``final_eval.json``), ``"policy during training"`` for an earlier one."""
    from jaxrl.io.report import FinalEvaluation
    from jaxrl.io.vocabulary import DURING_TRAINING, FINAL_POLICY

    final = FinalEvaluation.load(run_dir.final_eval)
    if final is not None and final.env_steps == env_steps:
        return FINAL_POLICY
    return f"policy {DURING_TRAINING}"


def _check_run_dirs(run_dirs: tuple[str, ...], command: str, least: int = 1) -> None:
    from jaxrl.io.run_dir import RunDir

    if len(run_dirs) < least:
        need = "at least one RUN_DIR" if least == 1 else f"at least {least} RUN_DIRs"
        raise UsageError(f"jaxrl {command} needs {need}")
    for run_dir in run_dirs:
        if not RunDir(Path(run_dir)).evals_csv.is_file():
            problem = "does not exist" if not Path(run_dir).exists() else "has no evals.csv"
            raise UsageError(f"run directory {run_dir!r} {problem}")


def plot(args: PlotCommand) -> int:
    from jaxrl.io.plots import plot_runs
    from jaxrl.io.run_dir import RunDir

    _check_run_dirs(args.run_dirs, "plot")
    if args.output is not None:
        output = Path(args.output)
    elif len(args.run_dirs) == 1:
        output = RunDir(Path(args.run_dirs[0])).plot
    else:
        output = Path("learning_curves.png")
    path = plot_runs(args.run_dirs, output, title=args.title, spread=args.spread)
    print(f"Learning curves: {path}")
    return 0


def _normalized_groups(args: CompareCommand) -> list[Any]:
    """``--normalize``'s groups of normalized scores (:mod:`jaxrl.io.normalized`); none
    without it."""
    if args.normalize is None:
        return []
    from jaxrl.io.normalized import NormalizeError, normalized_groups

    try:
        return normalized_groups(args.run_dirs, args.normalize, args.labels)
    except NormalizeError as error:
        raise UsageError(str(error)) from None


def compare(args: CompareCommand) -> int:
    from jaxrl.io.compare import (
        compare_runs,
        default_output,
        format_table,
        profile_figure,
        robust_lines,
    )

    _check_run_dirs(args.run_dirs, "compare", least=2)
    if args.labels is not None and len(args.labels) != len(args.run_dirs):
        raise UsageError(
            f"--labels: got {len(args.labels)} labels for {len(args.run_dirs)} run directories"
        )
    groups = _normalized_groups(args)
    output = default_output(args.run_dirs) if args.output is None else Path(args.output)
    path, rows = compare_runs(args.run_dirs, output, args.labels, args.title, args.spread)
    profile = None
    if args.profile is not None:
        try:
            profile = profile_figure(rows, args.profile, groups)
        except ValueError as error:
            raise UsageError(str(error)) from None
    if args.json:
        from jaxrl.io.normalized import aggregate

        normalized = {"normalized": [aggregate(g) for g in groups]} if groups else {}
        print(json.dumps({"figure": str(path), "runs": rows, **normalized}))
        return 0
    print(format_table(rows))
    for line in robust_lines(rows, improvement=not groups):  # runs on other tasks: by group
        print(line)
    if groups:
        from jaxrl.io.normalized import normalized_lines

        for line in normalized_lines(groups, args.normalize):
            print(line)
    print(f"Learning curves: {path}")
    if profile is not None:
        print(f"Performance profile: {profile}")
    return 0

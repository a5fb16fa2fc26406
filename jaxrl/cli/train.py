"""``jaxrl train``: resolve the run's configuration (or the resumed run's), train it in its run
directory, report it; and the steps ``sweep`` and ``tune`` share with it (the options checked,
the configuration of a new run, a write fault in one line). Returns the exit status; raises
:class:`jaxrl.cli.usage.UsageError` for a problem the user can fix (one line, status 2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from jaxrl.cli.job import done_elsewhere, join_job, leave_job_on_failure
from jaxrl.cli.options import PROG, option_flag
from jaxrl.cli.parsing import command_spec, given_options, preset_in_force, rewrite_aliases
from jaxrl.cli.results import write_video
from jaxrl.cli.usage import UsageError, name_flags
from jaxrl.config.files import DamagedFile


def check_options(values: dict[str, Any], given: set[str]) -> None:
    """The run settings written on the command line (``given``), checked by the one rule
    (:meth:`jaxrl.config.settings.RunSettings.validate`; None asks the command to choose),
    before a run directory is opened, and the command's own ``--stop-after-periods``."""
    from jaxrl.config.settings import RunSettings, settings_fields

    written = given & {f.name for f in settings_fields()}
    RunSettings.validate({n: values[n] for n in written if values[n] is not None})
    stop = values["stop_after_periods"]
    if stop is not None and stop < 1:
        raise UsageError(f"--stop-after-periods must be a positive integer, got {stop}")
    grace = values.get("preemption_grace", 1.0)
    if not grace > 0:
        raise UsageError(f"--preemption-grace must be positive seconds, got {grace}")


def trackers(args: Any) -> Any:
    """``--logger``'s experiment trackers (:class:`jaxrl.runs.tracking.Tracking`), their
    packages found; else a one-line usage error naming ``--logger`` or the missing extra."""
    from jaxrl.runs.tracking import Tracking, TrackingError, parse_loggers

    try:
        tracking = Tracking(parse_loggers(args.logger))
    except TrackingError as error:  # names --logger already
        raise UsageError(str(error)) from None
    try:
        return tracking.check()
    except TrackingError as error:
        raise UsageError(f"--logger {error}") from None


def _resolve_train(args: Any, argv: list[str]) -> tuple[Any, Any, bool]:
    """The run's configuration and directory (created or opened), and whether to resume."""
    from jaxrl.runs.build import check_config
    from jaxrl.runs.run_dir import RunDir, default_run_path
    from jaxrl.training.sharding import is_primary

    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    check_options(values, given)
    if values["resume"] is not None:
        config, run_dir = _resumed_config(algo, {**values, **hyper}, given)
        check_config(config)
        return config, run_dir, True
    config = new_config(algo, values, hyper, given, preset_in_force(argv))
    if values["preset_file"] is not None:
        from jaxrl.config.run_config import PresetFile

        try:
            PresetFile.load(values["preset_file"]).check_seeds(config.seed, config.num_seeds)
        except ValueError as error:
            raise UsageError(f"--preset-file: {error}") from None
    check_config(config)
    if values.get("plan"):
        return config, None, False
    path = values["run_dir"] or default_run_path(algo, values["env"])
    if not is_primary():  # process 0 of a job of several processes writes the run directory
        return config, RunDir(Path(path)), False
    return config, RunDir.create(path), False


def resumed_run(path: str) -> tuple[Any, Any]:
    """``--resume PATH``'s run directory and its saved configuration
    (``(RunDir, RunConfig)``); a usage error where ``PATH`` is not a run directory."""
    from jaxrl.config.run_config import RunConfig
    from jaxrl.runs.run_dir import RunDir

    try:
        run_dir = RunDir.open(path)
    except ValueError as error:
        raise UsageError(f"--resume: {error}") from None
    return run_dir, RunConfig.load(run_dir.config)


def _resumed_config(algo: str, wanted: dict[str, Any], given: set[str]) -> tuple[Any, Any]:
    """The configuration of the run in ``--resume``'s directory, with the settings a resume
    may change (:data:`jaxrl.config.run_config.RESUME_OVERRIDES`) taken from ``given``."""
    from jaxrl.config.run_config import RESUME_OVERRIDES, ResumeConflict

    run_dir, saved = resumed_run(wanted["resume"])
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


def new_config(
    algo: str, values: dict[str, Any], hyper: dict[str, Any], given: set[str], preset: str
) -> Any:
    """The configuration of a new run: :func:`jaxrl.runs.build.make_config` of the options
    written on the command line, the drivers and backends resolved by :func:`_backends`
    (whose errors name the flags)."""
    from jaxrl.config.settings import settings_fields
    from jaxrl.runs.build import make_config

    backend, env_backend, brax_backend = _backends(values)
    names = {f.name for f in settings_fields() if f.metadata["cli"]}
    written = {name: values[name] for name in given if name in names}
    written.update(env_backend=env_backend, brax_backend=brax_backend)
    return make_config(
        algo, values["env"], preset, hyperparameters=hyper, backend=backend, **written
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
        if is_brax_id(env) and (host_backend or values["backend"] == "gymnasium"):
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
    for name in ("solver", "solver_iterations", "solver_ls_iterations"):
        if values.get(name) is not None and brax_backend != "mjx":
            physics = f"--brax-backend {brax_backend}" if brax_backend else env
            raise UsageError(
                f"{option_flag(name)} sets MJX's solver (--env brax:NAME --brax-backend mjx), "
                f"not {physics}'s"
            )
    return backend, env_backend, brax_backend


def write_fault(error: OSError, resume_cmd: str) -> int:
    """A file that could not be written during training, as one line (exit status 1): the
    files written before it are whole (:mod:`jaxrl.config.files`, checkpoints committed only
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


def _budget_notes(config: Any, given: set[str], preset_file: str | None = None) -> list[str]:
    """What the run does where it differs from what its settings say (said before training);
    a setting the command line did not write (``given``) is named as the default it is. A
    ``--preset-file`` tuned on another environment than the run's is named too."""
    layout = config.layout

    def named(name: str, flag: str, value: int) -> str:
        return f"{flag} {value:,}" if name in given else f"the default {flag} ({value:,})"

    notes = []
    if layout.total_steps != config.total_steps:
        notes.append(
            f"Note: {named('total_steps', '--total-steps', config.total_steps)} is not a whole "
            f"number of collections (--num-envs x --num-steps = {layout.steps_per_collect:,} "
            f"env steps): the run takes {layout.total_steps:,} env steps per seed."
        )
    if layout.period_collections[-1] != layout.collections_per_period:
        notes.append(
            f"Note: {named('eval_every', '--eval-every', config.eval_every)} does not divide "
            f"the run: evaluations every {layout.steps_per_period:,} env steps and after the "
            f"last step ({layout.total_steps:,})."
        )
    if preset_file is not None:
        from jaxrl.config.run_config import PresetFile

        tuned_on = PresetFile.load(preset_file).env
        if tuned_on != config.env:
            notes.append(
                f"Note: --preset-file {preset_file} holds values tuned on {tuned_on}; this run "
                f"is on {config.env}."
            )
    return notes


def plan_of(config: Any) -> Any:
    """The :class:`jaxrl.training.plan.RunPlan` of a run's configuration."""
    from jaxrl.envs import Solver, make_env
    from jaxrl.training.plan import run_plan

    env, horizon = None, 0
    if config.backend == "jax":
        solver = Solver(config.solver, config.solver_iterations, config.solver_ls_iterations)
        env, params = make_env(config.env, brax_backend=config.brax_backend, brax_solver=solver)
        horizon = int(params.max_steps_in_episode)
    else:
        import gymnasium as gym

        horizon = gym.spec(config.env).max_episode_steps or 0
    agent = config.make_agent()
    return run_plan(config, agent, env, horizon, config.num_agent_updates())


def _resolve_in_step(args: Any, argv: list[str]) -> tuple[Any, Any, bool]:
    """:func:`_resolve_train` in every process of a job together: if it fails in one (process
    0 alone creates the run directory), every process stops, none waits for the others."""
    from jaxrl.training.sharding import processes_agree

    failure: UsageError | None = None
    resolved = None
    try:
        resolved = _resolve_train(args, argv)
    except (UsageError, ValueError, TypeError, ModuleNotFoundError) as error:
        failure = as_usage_error(error, argv)
    if not processes_agree(failure is None) or resolved is None:
        raise failure or UsageError(
            "another process of the job could not set up the run (see its error)"
        )
    return resolved


def as_usage_error(error: Exception, argv: list[str]) -> UsageError:
    """A run's setting that failed, as the one line the user acts on: the library names
    Python fields (``TRPO.max_kl``), the command line's flags (``--max-kl``); a damaged file
    names the file."""
    if isinstance(error, UsageError | DamagedFile):
        return UsageError(str(error))
    return UsageError(name_flags(str(error), command_spec(argv, preset_in_force(argv)).options))


def train(args: Any, argv: list[str]) -> int:
    import numpy as np

    from jaxrl.envs import EnvironmentError_
    from jaxrl.runs.checkpoints import CheckpointError
    from jaxrl.runs.preemption import Preemption
    from jaxrl.runs.run_dir import RunDirError
    from jaxrl.runs.runner import train_run
    from jaxrl.runs.tracking import TrackingError
    from jaxrl.training.sharding import is_primary

    if args.plan:
        config, _, _ = _resolve_in_step(args, argv)
        try:
            print("\n".join(plan_of(config).lines()))
        except (ValueError, TypeError) as error:
            raise as_usage_error(error, argv) from None
        return 0
    tracking = trackers(args)
    join_job(args, argv)
    config, run_dir, resume = _resolve_in_step(args, argv)
    primary = is_primary()
    say = (lambda message: print(message, file=sys.stderr, flush=True)) if primary else None
    given = given_options(rewrite_aliases(argv))
    for line in _budget_notes(config, given, args.preset_file) if primary else ():
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
        return write_fault(error, again)
    except CheckpointError as error:  # no checkpoint of the run restores
        raise UsageError(f"--resume {run_dir.path}: {error}; train it anew") from None
    except RunDirError as error:  # another process trains the run
        raise UsageError(str(error)) from None
    except TrackingError as error:  # wandb could not start (not logged in, ...)
        raise UsageError(
            f"--logger {error}; the run directory stays: continue with {resume_cmd}"
        ) from None
    except EnvironmentError_ as error:  # a fault during training: the checkpoints stand
        message = " ".join(str(error).split())
        print(f"jaxrl: error: {message}; the run stopped: continue with: {resume_cmd}",
              file=sys.stderr)  # fmt: skip
        return 1
    except Exception:
        leave_job_on_failure()
        raise
    if not primary:
        return done_elsewhere("run directory")
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
        write_video(str(run_dir.path), args.video, 0, 1, "last")
    return 0


def _report(config: Any, run_dir: Any, result: Any, resume_cmd: str, tracking: Any) -> None:
    """What a finished (or stopped) ``jaxrl train`` prints: the run, its report, its files."""
    from jaxrl.runs.report import CurveSummary, report_lines

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
        print(tensorboard_line(run_dir.tensorboard))
    if tracking.wandb:
        from jaxrl.runs.tracking import WANDB_ID_FILE

        run_id = (run_dir.path / WANDB_ID_FILE).read_text().strip()
        print(f"W&B:            run {run_id} (offline runs: wandb sync)")
    if result.finished:
        print(f"Evaluate:       jaxrl evaluate {run_dir.path}")
    else:
        print(f"Continue:       {resume_cmd}")


def tensorboard_line(logdir: Any) -> str:
    """The report's line on the run's TensorBoard events: the command that shows them, and
    where TensorBoard itself is not installed (jaxrl writes the events without it), the
    extra that installs it."""
    import importlib.util

    line = f"TensorBoard:    tensorboard --logdir {logdir}"
    if importlib.util.find_spec("tensorboard") is None:
        line += "  (to view them: pip install 'jaxrl[tensorboard]')"
    return line

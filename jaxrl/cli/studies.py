"""``jaxrl sweep`` and ``jaxrl tune``: a grid of settings, or an Optuna study, trained in a
directory that the same command resumes (:mod:`jaxrl.studies.sweeps`, :mod:`jaxrl.studies.tuning`).
Each returns the exit status; raises :class:`jaxrl.cli.usage.UsageError` for a problem the user
can fix (one line, status 2)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxrl.cli.job import done_elsewhere, join_job, leave_job_on_failure
from jaxrl.cli.options import PROG, option_flag
from jaxrl.cli.parsing import given_options, preset_in_force, rewrite_aliases
from jaxrl.cli.train import as_usage_error, check_options, new_config, trackers, write_fault
from jaxrl.cli.usage import UsageError


def _resolve_sweep(args: Any, argv: list[str]) -> tuple[Any, dict[str, list[Any]], Path]:
    """The sweep's base run, its grid and its directory (errors before anything compiles)."""
    from jaxrl.runs.run_dir import default_run_path
    from jaxrl.studies.grid import parse_grid

    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    check_options({**values, "stop_after_periods": None}, given)
    if values["stop_after_groups"] is not None and values["stop_after_groups"] < 1:
        raise UsageError("--stop-after-groups must be a positive integer")
    preset = preset_in_force(argv)
    grid = parse_grid(algo, preset, values["sweep"])
    base = new_config(algo, values, hyper, given, preset)
    path = values["sweep_dir"] or default_run_path(algo, values["env"], root="sweeps")
    return base, grid, Path(path)


def _study_launch(args: Any, argv: list[str]) -> str | None:
    """The launch options of a sweep or a study, or a cluster manager's launch of several
    processes, in words (None: none). With them, this process joins the job first
    (:func:`~jaxrl.cli.job.join_job`, before any JAX call; the environment's backend is known
    only after it), and the study must then be on a JAX environment
    (:func:`_refuse_host_study`)."""
    from jaxrl.config.settings import launch_settings
    from jaxrl.training.sharding import cluster_process_count

    given = sorted(given_options(argv) & set(launch_settings()))
    launched = cluster_process_count() or 1
    if not given and launched <= 1:
        return None
    join_job(args, argv)
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


def _study_error(error: Exception, argv: list[str]) -> UsageError:
    """A sweep's or a study's error as one line: a :class:`jaxrl.studies.sweeps.SweepError`
    names the field as ``--sweep``/``--search`` wrote it, and the error of an invalid setting
    it carries (as any other error here) names the flags to change."""
    from jaxrl.runs.tracking import TrackingError
    from jaxrl.studies.grid import SweepError

    if isinstance(error, TrackingError):  # wandb could not start a run
        return UsageError(f"--logger {error}")
    if not isinstance(error, SweepError):
        return as_usage_error(error, argv)
    if error.cause is None:  # names the field as --sweep/--search wrote it
        return UsageError(str(error))
    return UsageError(f"{error.message}: {as_usage_error(error.cause, argv)}")


def _study_call(
    call: Callable[[], Any], argv: list[str], resume_cmd: str
) -> tuple[Any, int | None]:
    """``(call(), None)``, or ``(None, exit status)`` where the study ended early: Ctrl-C
    (130, with the command that continues) or a file it could not write (1, one line). An
    invalid setting is the one-line :class:`UsageError` (the same in every process of a
    job); any other failure stops every process of a job before it is raised."""
    from jaxrl.studies.sweeps import SettingsFailed

    try:
        return call(), None
    except (ValueError, TypeError, ModuleNotFoundError) as error:
        raise _study_error(error, argv) from None
    except KeyboardInterrupt:
        print(f"\nInterrupted. Continue with: {resume_cmd}", file=sys.stderr)
        return None, 130
    except OSError as error:  # a full disk, a directory that became unwritable
        return None, write_fault(error, resume_cmd)
    except SettingsFailed as error:  # a setting's process of --jobs failed or was killed
        print(f"{PROG}: error: {error}; continue with: {resume_cmd}", file=sys.stderr)
        return None, 1
    except UsageError:
        raise
    except Exception:
        leave_job_on_failure()
        raise


def sweep(args: Any, argv: list[str]) -> int:
    from jaxrl.runs.preemption import Preemption
    from jaxrl.studies.sweeps import sweep as run_sweep
    from jaxrl.training.sharding import is_primary

    tracking = trackers(args)
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
        return done_elsewhere("sweep directory")
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
    from jaxrl.runs.preemption import Preemption
    from jaxrl.runs.run_dir import default_run_path
    from jaxrl.studies.search_space import parse_search
    from jaxrl.studies.tuning import TUNE_SEED
    from jaxrl.studies.tuning import tune as run_tune
    from jaxrl.training.sharding import is_primary

    tracking = trackers(args)
    launch = _study_launch(args, argv)
    primary = is_primary()
    algo, values, hyper = args.algo, args.values(), dict(args.hyperparameters)
    given = given_options(rewrite_aliases(argv))
    if "seed" not in given:  # the study's seeds, apart from train's: as if written
        values["seed"], given = TUNE_SEED, given | {"seed"}
    try:
        check_options({**values, "stop_after_periods": None}, given)
        preset = preset_in_force(argv)
        space = parse_search(algo, preset, _search_specs(values))
        base = new_config(algo, values, hyper, given, preset)
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
        return done_elsewhere("tuning directory")
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

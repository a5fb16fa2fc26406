"""``jaxrl evaluate``, ``jaxrl export``, ``jaxrl plot`` and ``jaxrl compare``: what the command
says about runs that have trained, and their policies as files. Each returns the exit status
and raises :class:`jaxrl.cli.usage.UsageError` for a problem the user can fix (one line, status
2)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from jaxrl.cli.options import CompareCommand, EvaluateCommand, ExportCommand, PlotCommand
from jaxrl.cli.usage import UsageError


def evaluate(args: EvaluateCommand) -> int:
    from jaxrl.runs.checkpoints import CheckpointError
    from jaxrl.runs.policy import evaluate_policy, load
    from jaxrl.runs.run_dir import RunDir, RunDirError
    from jaxrl.runs.vocabulary import DETERMINISTIC, STOCHASTIC

    if args.episodes < 1:
        raise UsageError(f"--episodes must be a positive integer, got {args.episodes}")
    checkpoint = _checkpoint(args.checkpoint, args.step)
    if args.video is None and _changed(args, "seed_index", "video_episodes"):
        raise UsageError(
            "--seed-index and --video-episodes go with --video (evaluating reports every seed)"
        )
    if args.video is not None and _changed(args, "episodes", "json"):
        raise UsageError(
            "--video records --video-episodes episodes instead of evaluating: --episodes and "
            "--json are the evaluation's"
        )
    if args.video is not None:
        return write_video(
            args.run_dir, args.video, args.seed_index, args.video_episodes, checkpoint, args.seed
        )
    try:
        loaded = load(args.run_dir, seed=None, checkpoint=checkpoint)
        returns = evaluate_policy(loaded, args.episodes, args.seed)
    except CheckpointError as error:
        flag = "--step" if args.step is not None else "--checkpoint"
        chosen = "" if checkpoint == "last" else f"{flag} {checkpoint}: "
        raise UsageError(f"{chosen}{error}") from None
    except (RunDirError, ValueError) as error:
        raise UsageError(str(error)) from None
    config = loaded.config
    env_steps = loaded.metadata.get("env_steps")
    policy = _evaluated_policy(RunDir(Path(args.run_dir)), env_steps, checkpoint == "best")
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


def export(args: ExportCommand) -> int:
    from jaxrl.runs.checkpoints import CheckpointError
    from jaxrl.runs.export import SUFFIXES, export_format, export_policy
    from jaxrl.runs.jaxpr_onnx import UnsupportedPrimitive
    from jaxrl.runs.policy import load
    from jaxrl.runs.run_dir import RunDirError

    checkpoint = _checkpoint(args.checkpoint)
    out = Path(args.out or Path(args.run_dir) / f"policy{SUFFIXES[args.format or 'onnx']}")
    try:  # a folder is refused as a path when written to
        written = args.format or "onnx" if out.is_dir() else export_format(out, args.format)
    except ValueError as error:
        if args.format is None:
            raise UsageError(f"--out {out}: name a .onnx or .jax file, or give --format") from None
        raise UsageError(f"--format {args.format} with --out {error}") from None
    try:
        policy = load(args.run_dir, seed=args.seed_index, checkpoint=checkpoint)
        path = export_policy(policy, out, written)
    except (RunDirError, CheckpointError, UnsupportedPrimitive, ImportError) as error:
        raise UsageError(str(error)) from None
    except ValueError as error:
        raise UsageError(_seed_index(error)) from None
    config = policy.config
    batch = ", ".join(["batch", *map(str, policy.observation_shape)])
    print(
        f"{config.algo.upper()} on {config.env}: seed {args.seed_index}'s policy of checkpoint "
        f"{policy.step} ({policy.metadata.get('env_steps') or 0:,} env steps) written to {path} "
        f"({written}; obs [{batch}] float32 -> action)"
    )
    return 0


def _changed(args: Any, *names: str) -> bool:
    """Whether any option ``names`` of the command ``args`` differs from its default."""
    defaults = {field.name: field.default for field in dataclasses.fields(args)}
    return any(getattr(args, name) != defaults[name] for name in names)


def _seed_index(error: Exception | str) -> str:
    """A loading error as the command says it: :func:`jaxrl.load`'s ``seed`` is
    ``--seed-index``."""
    return f"--seed-index: {error}" if str(error).startswith("seed ") else str(error)


def _checkpoint(written: str, step: int | None = None) -> Any:
    """``--checkpoint``'s ``"last"``, ``"best"`` or evaluation period (an int); ``--step N``,
    its earlier spelling in ``evaluate``, is ``--checkpoint N``."""
    if step is not None:
        if written not in ("last", str(step)):
            raise UsageError(f"--step {step} and --checkpoint {written}: give one of them")
        return step
    if written in ("last", "best"):
        return written
    if not written.isdigit():
        raise UsageError(
            f"--checkpoint must be last, best or an evaluation period, got {written!r}"
        )
    return int(written)


def write_video(
    run_dir: str, path: str, seed_index: int, episodes: int, checkpoint: Any, seed: int = 0
) -> int:
    """``--video``: episodes of one seed's policy written to ``path`` (episode seed ``seed``)."""
    from jaxrl.runs.checkpoints import CheckpointError
    from jaxrl.runs.run_dir import RunDirError
    from jaxrl.runs.video import record_video

    if episodes < 1:
        raise UsageError(f"--video-episodes must be a positive integer, got {episodes}")
    try:
        video = record_video(
            run_dir,
            path,
            seed_index=seed_index,
            episodes=episodes,
            checkpoint=checkpoint,
            seed=seed,
        )
    except (RunDirError, CheckpointError, ValueError) as error:
        message = str(error).replace("record_video path", "--video")
        raise UsageError(_seed_index(message.replace("record_video", "--video"))) from None
    returns = ", ".join(f"{r:.1f}" for r in video.returns)
    print(
        f"Video: {video.path} ({video.frames} frames; seed {seed_index}'s policy of checkpoint "
        f"{video.step}; episode returns {returns})"
    )
    return 0


def _evaluated_policy(run_dir: Any, env_steps: int | None, best: bool) -> str:
    """``"final policy"`` for the checkpoint a finished run ended with (the policy of its
    ``final_eval.json``), ``"policy of the best evaluation during training"`` for an earlier
    one chosen as ``best``, ``"policy during training"`` for another."""
    from jaxrl.runs.report import FinalEvaluation
    from jaxrl.runs.vocabulary import BEST_EVALUATION, DURING_TRAINING, FINAL_POLICY

    final = FinalEvaluation.load(run_dir.final_eval)
    if final is not None and final.env_steps == env_steps:
        return FINAL_POLICY
    when = f"of the {BEST_EVALUATION} {DURING_TRAINING}" if best else DURING_TRAINING
    return f"policy {when}"


def _check_run_dirs(run_dirs: tuple[str, ...], command: str, least: int = 1) -> None:
    from jaxrl.runs.run_dir import RunDir, nested_runs

    seen: dict[Path, str] = {}
    for run_dir in run_dirs:
        key = Path(run_dir).resolve()
        if key in seen:  # one run drawn twice, compared with itself
            again = "" if seen[key] == run_dir else f" (as {seen[key]!r} before)"
            raise UsageError(f"run directory {run_dir!r} is given twice{again}")
        seen[key] = run_dir
    for run_dir in run_dirs:
        if not RunDir(Path(run_dir)).evals_csv.is_file():
            problem = "does not exist" if not Path(run_dir).exists() else "has no evals.csv"
            if runs := nested_runs(run_dir):
                named = " ".join(str(Path(run_dir) / run) for run in runs[:3])
                more = " ..." if len(runs) > 3 else ""
                problem = f"holds {len(runs)} runs (a sweep or a tune): name them, {named}{more}"
            raise UsageError(f"run directory {run_dir!r} {problem}")
    if len(run_dirs) < least:
        need = "at least one RUN_DIR" if least == 1 else f"at least {least} RUN_DIRs"
        raise UsageError(f"jaxrl {command} needs {need}")


def _check_image(flag: str, written: str | None) -> None:
    """``UsageError`` naming ``flag`` unless the image file ``written`` (None: the default)
    ends in a format matplotlib writes."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if written is not None and Path(written).suffix.lower().lstrip(".") not in formats:
        raise UsageError(
            f"{flag} {written}: name an image file: .png, or one of "
            f"{', '.join('.' + suffix for suffix in sorted(formats) if suffix != 'png')}"
        )


def plot(args: PlotCommand) -> int:
    from jaxrl.runs.plots import plot_runs
    from jaxrl.runs.run_dir import RunDir

    _check_run_dirs(args.run_dirs, "plot")
    _check_image("--output", args.output)
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
    """``--normalize``'s groups of normalized scores (:mod:`jaxrl.studies.normalized`); none
    without it."""
    if args.normalize is None:
        return []
    from jaxrl.studies.normalized import NormalizeError, normalized_groups

    try:
        return normalized_groups(args.run_dirs, args.normalize, args.labels)
    except NormalizeError as error:
        raise UsageError(str(error)) from None


def compare(args: CompareCommand) -> int:
    from jaxrl.studies.compare import (
        compare_runs,
        default_output,
        format_table,
        improvements,
        profile_figure,
        robust_lines,
    )

    _check_run_dirs(args.run_dirs, "compare", least=2)
    _check_image("--output", args.output)
    _check_image("--profile", args.profile)
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
        from jaxrl.studies.normalized import aggregate

        normalized = {"normalized": [aggregate(g) for g in groups]} if groups else {}
        # Runs on other tasks are compared by group (normalized), not run by run.
        improvement = {} if groups else {"probability_of_improvement": improvements(rows)}
        print(json.dumps({"figure": str(path), "runs": rows, **improvement, **normalized}))
        return 0
    print(format_table(rows))
    for line in robust_lines(rows, improvement=not groups):  # runs on other tasks: by group
        print(line)
    if groups:
        from jaxrl.studies.normalized import normalized_lines

        for line in normalized_lines(groups, args.normalize):
            print(line)
    print(f"Learning curves: {path}")
    if profile is not None:
        print(f"Performance profile: {profile}")
    return 0

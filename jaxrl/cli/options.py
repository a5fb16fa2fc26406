"""The ``jaxrl`` command's options: one frozen dataclass per command, each field an option
with its help (tyro reads them; :mod:`jaxrl.cli.parsing`). ``train``, ``sweep`` and ``tune``
take, besides their own fields, the run settings and the algorithm's hyperparameters, which
:func:`jaxrl.cli.parsing.command_registry` gives tyro from the preset in force."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Literal

import tyro

PROG = "jaxrl"
COMMANDS = ("train", "sweep", "tune", "evaluate", "export", "plot", "compare")
# Commands that train an algorithm: jaxrl COMMAND ALGO [options].
TRAINING = ("train", "sweep", "tune")


def algorithm_names() -> tuple[str, ...]:
    """The registered algorithms (:mod:`jaxrl.algorithms.registry`), in name order."""
    from jaxrl.algorithms import registry

    return tuple(registry.algorithms())


def option_flag(name: str) -> str:
    """The command-line flag of a field: ``max_kl`` -> ``--max-kl``."""
    return "--" + name.replace("_", "-")


def arg(help: str | None, **kwargs: Any) -> Any:
    return tyro.conf.arg(help=help, **kwargs)


CHECKPOINT_HELP = (
    "last (the newest checkpoint), best (the best evaluation's, if its checkpoint is kept) or "
    "an evaluation period"
)


@dataclasses.dataclass(frozen=True)
class EvaluateCommand:
    """Load the final policy of a run and report its evaluation returns."""

    run_dir: Annotated[str, tyro.conf.Positional, arg("the run directory", metavar="RUN_DIR")]
    episodes: Annotated[int, arg("evaluation episodes per seed")] = 10
    seed: Annotated[int, arg("seed of the evaluation episodes (or of the video's)")] = 0
    checkpoint: Annotated[str, arg(CHECKPOINT_HELP)] = "last"
    step: Annotated[int | None, arg("an evaluation period: the same as --checkpoint STEP")] = None
    json: Annotated[bool, arg("print the result as JSON")] = False
    video: Annotated[
        str | None,
        arg(
            "write episodes of the policy to FILE.gif or FILE.mp4 instead of evaluating "
            "(MuJoCo headless: MUJOCO_GL=egl)",
            metavar="FILE",
        ),
    ] = None
    seed_index: Annotated[int, arg("with --video: the seed whose policy is recorded")] = 0
    video_episodes: Annotated[int, arg("with --video: episodes recorded")] = 1


@dataclasses.dataclass(frozen=True)
class ExportCommand:
    """Write one seed's policy as a file that runs without jaxrl: an ONNX model or JAX's
    serialized program, observation normalization and action scaling folded in."""

    run_dir: Annotated[str, tyro.conf.Positional, arg("the run directory", metavar="RUN_DIR")]
    format: Annotated[
        Literal["onnx", "jax"] | None,
        arg(
            "onnx (pip install 'jaxrl[export]') or jax (jax.export's serialized program); "
            "None: the one --out's suffix names (.onnx or .jax), onnx without --out"
        ),
    ] = None
    out: Annotated[
        str | None, arg("the file to write; None: RUN_DIR/policy.onnx or RUN_DIR/policy.jax")
    ] = None
    seed_index: Annotated[int, arg("the seed whose policy is written")] = 0
    checkpoint: Annotated[str, arg(CHECKPOINT_HELP)] = "last"


@dataclasses.dataclass(frozen=True)
class PlotCommand:
    """Draw the learning curves of one or more runs in one figure."""

    run_dirs: Annotated[
        tuple[str, ...],
        tyro.conf.Positional,
        arg("one or more run directories", metavar="RUN_DIR..."),
    ]
    output: Annotated[
        str | None,
        arg(
            "image file; None: RUN_DIR/learning_curve.png for one run, "
            "learning_curves.png for several",
            aliases=("-o",),
        ),
    ] = None
    title: Annotated[str | None, arg("figure title")] = None
    spread: Annotated[
        Literal["std", "minmax", "none"], arg("shading across seeds: std, minmax or none")
    ] = "std"


@dataclasses.dataclass(frozen=True)
class CompareCommand:
    """Compare runs: learning curves with 95% confidence bands in one figure, and a table of
    each run's last evaluation, best evaluation and final policy (mean +- std [95% CI] across
    seeds)."""

    run_dirs: Annotated[
        tuple[str, ...],
        tyro.conf.Positional,
        arg("two or more run directories", metavar="RUN_DIR..."),
    ]
    output: Annotated[
        str | None,
        arg(
            "image file; None: compare-RUN-vs-RUN.png (the directories' names) next to the "
            "first RUN_DIR",
            aliases=("-o",),
        ),
    ] = None
    labels: Annotated[
        tuple[str, ...] | None, arg("one label per run; None: algorithm and environment")
    ] = None
    title: Annotated[str | None, arg("figure title")] = None
    spread: Annotated[
        Literal["ci95", "std", "minmax", "none"],
        arg("shading: ci95 (95% CI of the mean), std, minmax or none"),
    ] = "ci95"
    json: Annotated[bool, arg("print the table as JSON")] = False
    profile: Annotated[
        str | None,
        arg(
            "also draw a performance profile of the final policies' returns (normalized ones "
            "with --normalize) to this image"
        ),
    ] = None
    normalize: Annotated[
        str | None,
        arg(
            "runs on several tasks: normalize the final policies' returns by this reference "
            "(tianshou: 0 = uniform random policy, 1 = the best of Tianshou's published "
            "means) and aggregate them over tasks x seeds per algorithm (or per --labels)"
        ),
    ] = None


_Specs = Annotated[tuple[str, ...], tyro.conf.UseAppendAction]
_PARSED = ("algo", "run", "hyperparameters")  # filled by command_registry, not options


def own_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    """The fields of a :class:`TrainingCommand` class that are its command's options."""
    return tuple(f for f in dataclasses.fields(cls) if f.name not in _PARSED)


@dataclasses.dataclass(frozen=True)
class TrainingCommand:
    """``jaxrl COMMAND ALGO``: the algorithm, its run settings (the command-line fields of
    :class:`jaxrl.config.RunConfig`) and hyperparameters (the command-line fields of the
    algorithm's class) by field name, then the command's options (the fields from
    ``preset_file`` on). :func:`command_registry` tells tyro how to read it."""

    command: ClassVar[str]
    algo: str
    run: dict[str, Any]
    hyperparameters: dict[str, Any]
    preset_file: Annotated[
        str | None,
        arg(
            "a preset file (jaxrl tune's best.json): its preset and values are the defaults, "
            "and options written on the command line override them"
        ),
    ] = None
    preemption_grace: Annotated[
        float,
        arg(
            "after SIGTERM, seconds to reach the end of an evaluation period and checkpoint it; "
            "then it stops from its last checkpoint"
        ),
    ] = 20.0
    logger: Annotated[
        str,
        arg(
            "experiment trackers, comma-separated: tensorboard, wandb (pip install "
            "'jaxrl[wandb]'; WANDB_MODE=offline logs without an account); a resumed run "
            "continues its wandb run"
        ),
    ] = "tensorboard"

    def values(self) -> dict[str, Any]:
        """The run settings and the command's options, by field name."""
        return {**self.run, **{f.name: getattr(self, f.name) for f in own_fields(type(self))}}


@dataclasses.dataclass(frozen=True)
class TrainCommand(TrainingCommand):
    """Train an agent; metrics, plots and checkpoints go to a run directory."""

    command: ClassVar[str] = "train"
    run_dir: Annotated[
        str | None, arg("run directory; None: runs/ALGO-ENV-DATE-TIME", metavar="RUN_DIR")
    ] = None
    resume: Annotated[
        str | None,
        arg("continue the run in this directory from its last checkpoint", metavar="RUN_DIR"),
    ] = None
    stop_after_periods: Annotated[
        int | None,
        arg(
            "stop after this many evaluation periods, as an interruption would (--resume RUN_DIR "
            "continues the run)"
        ),
    ] = None
    plan: Annotated[
        bool,
        arg(
            "print what the run would do per 1M env steps per seed (sequential steps of "
            "training and evaluation, physics passes, solver and update loop bounds, compiled "
            "programs) and exit without training"
        ),
    ] = False
    video: Annotated[
        str | None,
        arg(
            "at the end of the run, write an episode of seed 0's final policy to this .gif or "
            ".mp4 (MuJoCo headless: MUJOCO_GL=egl)"
        ),
    ] = None


@dataclasses.dataclass(frozen=True)
class SweepCommand(TrainingCommand):
    """Train a grid of settings x seeds (one program per group of settings that differ in
    numeric hyperparameters); a ranking goes to a sweep directory."""

    command: ClassVar[str] = "sweep"
    sweep: Annotated[
        _Specs,
        arg(
            "FIELD=VALUE,VALUE,...: a hyperparameter or run setting and its values (repeat "
            "--sweep for a grid: every combination trains)"
        ),
    ] = ()
    sweep_dir: Annotated[
        str | None,
        arg(
            "sweep directory (the same one again resumes the sweep); None: "
            "sweeps/ALGO-ENV-DATE-TIME"
        ),
    ] = None
    stop_after_groups: Annotated[
        int | None,
        arg(
            "stop after this many groups, as an interruption would (the same --sweep-dir "
            "again continues the sweep)"
        ),
    ] = None
    jobs: Annotated[
        int,
        arg(
            "on a host environment (gymnasium, EnvPool), settings trained at once, each in a "
            "process of its own on its share of the CPUs"
        ),
    ] = 1


@dataclasses.dataclass(frozen=True)
class TuneCommand(TrainingCommand):
    """Tune settings with Optuna: batches of trials trained together, pruned at evaluation
    periods; the best goes to a preset file."""

    command: ClassVar[str] = "tune"
    search: Annotated[
        _Specs,
        arg(
            "FIELD=LOW:HIGH, FIELD=LOW:HIGH:log or FIELD=VALUE,VALUE,...: a searched "
            "hyperparameter or run setting (repeat --search for each field)"
        ),
    ] = ()
    search_file: Annotated[
        str | None, arg("a file of --search specs, one per line (# starts a comment)")
    ] = None
    tune_dir: Annotated[
        str | None,
        arg(
            "tuning directory (the same one again resumes the study); None: "
            "tunes/ALGO-ENV-DATE-TIME"
        ),
    ] = None
    trials: Annotated[int, arg("end when this many trials are complete, pruned or failed")] = 20
    batch: Annotated[int, arg("trials asked at once and trained together")] = 4
    sampler: Annotated[
        str,
        arg("Optuna sampler: tpe, random, cmaes, qmc, gp or a class name of optuna.samplers"),
    ] = "tpe"
    sampler_seed: Annotated[int, arg("seed of the sampler")] = 0
    pruner: Annotated[
        str,
        arg(
            "Optuna pruner at evaluation periods: median, percentile, hyperband, "
            "successive-halving, none or a class name of optuna.pruners"
        ),
    ] = "median"
    storage: Annotated[
        str | None,
        arg(
            "the study's storage: a journal file's path (shared by workers) or an Optuna "
            "storage URL (sqlite:///..., postgresql://...); None: TUNE_DIR/study.log"
        ),
    ] = None
    study_name: Annotated[
        str | None, arg("the study's name in its storage; None: TUNE_DIR's name")
    ] = None
    objective_evals: Annotated[
        int,
        arg(
            "the objective: mean over the search seeds of the mean of the last this many "
            "evaluations"
        ),
    ] = 5
    enqueue_base: Annotated[
        bool, arg("a new study's first trial is the base run's own values (the preset's)")
    ] = True
    stop_after_batches: Annotated[
        int | None,
        arg(
            "stop after this many batches of trials, as an interruption would (the same "
            "--tune-dir again continues the study)"
        ),
    ] = None


TRAINING_COMMANDS = {c.command: c for c in (TrainCommand, SweepCommand, TuneCommand)}
SUBCOMMANDS = {
    "evaluate": EvaluateCommand,
    "export": ExportCommand,
    "plot": PlotCommand,
    "compare": CompareCommand,
}

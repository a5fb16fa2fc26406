"""How the ``jaxrl`` command reads its command line (:mod:`jaxrl.cli` is the command): the
command types (dataclasses; :func:`command_registry` gives tyro the run settings and the
algorithm's hyperparameters with the preset's defaults, from the fields' metadata), parsing,
and one-line errors (:mod:`jaxrl.cli_usage`); :mod:`jaxrl.cli_commands` does what each
command does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import typing
from typing import Annotated, Any, ClassVar, Literal, Union

import tyro

from jaxrl.cli_usage import CommandSpec, UsageError, explain

PROG = "jaxrl"
COMMANDS = ("train", "sweep", "tune", "evaluate", "plot", "compare")
# Commands that train an algorithm: jaxrl COMMAND ALGO [options].
TRAINING = ("train", "sweep", "tune")


def algorithm_names() -> tuple[str, ...]:
    """The registered algorithms (:mod:`jaxrl.algorithms.registry`), in name order."""
    from jaxrl.algorithms import registry

    return tuple(registry.algorithms())


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


def _arg(help: str | None, **kwargs: Any) -> Any:
    return tyro.conf.arg(help=help, **kwargs)


@dataclasses.dataclass(frozen=True)
class EvaluateCommand:
    """Load the final policy of a run and report its evaluation returns."""

    run_dir: Annotated[str, tyro.conf.Positional, _arg("the run directory", metavar="RUN_DIR")]
    episodes: Annotated[int, _arg("evaluation episodes per seed")] = 10
    seed: Annotated[int, _arg("seed of the evaluation episodes")] = 0
    step: Annotated[
        int | None, _arg("checkpoint to load (an evaluation period); None: the newest")
    ] = None
    json: Annotated[bool, _arg("print the result as JSON")] = False
    video: Annotated[
        str | None,
        _arg(
            "write episodes of the policy to FILE.gif or FILE.mp4 instead of evaluating "
            "(MuJoCo headless: MUJOCO_GL=egl)",
            metavar="FILE",
        ),
    ] = None
    seed_index: Annotated[int, _arg("with --video: the seed whose policy is recorded")] = 0
    video_episodes: Annotated[int, _arg("with --video: episodes recorded")] = 1


@dataclasses.dataclass(frozen=True)
class PlotCommand:
    """Draw the learning curves of one or more runs in one figure."""

    run_dirs: Annotated[
        tuple[str, ...],
        tyro.conf.Positional,
        _arg("one or more run directories", metavar="RUN_DIR..."),
    ]
    output: Annotated[
        str | None,
        _arg(
            "image file; None: RUN_DIR/learning_curve.png for one run, "
            "learning_curves.png for several",
            aliases=("-o",),
        ),
    ] = None
    title: Annotated[str | None, _arg("figure title")] = None
    spread: Annotated[
        Literal["std", "minmax", "none"], _arg("shading across seeds: std, minmax or none")
    ] = "std"


_Specs = Annotated[tuple[str, ...], tyro.conf.UseAppendAction]


@dataclasses.dataclass(frozen=True)
class TrainingCommand:
    """``jaxrl COMMAND ALGO``: the algorithm, its run settings (the command-line fields of
    :class:`jaxrl.io.RunConfig`) and hyperparameters (the command-line fields of the
    algorithm's class) by field name, then the command's options (the fields from
    ``preset_file`` on). :func:`command_registry` tells tyro how to read it."""

    command: ClassVar[str]
    algo: str
    run: dict[str, Any]
    hyperparameters: dict[str, Any]
    preset_file: Annotated[
        str | None,
        _arg(
            "a preset file (jaxrl tune's best.json): its preset and values are the defaults, "
            "and options written on the command line override them"
        ),
    ] = None
    preemption_grace: Annotated[
        float,
        _arg(
            "after SIGTERM, seconds to reach the end of an evaluation period and checkpoint it; "
            "then it stops from its last checkpoint"
        ),
    ] = 20.0
    logger: Annotated[
        str,
        _arg(
            "experiment trackers, comma-separated: tensorboard, wandb (pip install "
            "'jaxrl[wandb]'; WANDB_MODE=offline logs without an account); a resumed run "
            "continues its wandb run"
        ),
    ] = "tensorboard"

    def values(self) -> dict[str, Any]:
        """The run settings and the command's options, by field name."""
        return {**self.run, **{f.name: getattr(self, f.name) for f in _own_fields(type(self))}}


@dataclasses.dataclass(frozen=True)
class TrainCommand(TrainingCommand):
    """Train an agent; metrics, plots and checkpoints go to a run directory."""

    command: ClassVar[str] = "train"
    run_dir: Annotated[
        str | None, _arg("run directory; None: runs/ALGO-ENV-DATE-TIME", metavar="RUN_DIR")
    ] = None
    resume: Annotated[
        str | None,
        _arg("continue the run in this directory from its last checkpoint", metavar="RUN_DIR"),
    ] = None
    stop_after_periods: Annotated[
        int | None,
        _arg("stop after this many evaluation periods, as an interruption would (for testing)"),
    ] = None
    video: Annotated[
        str | None,
        _arg(
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
        _arg(
            "FIELD=VALUE,VALUE,...: a hyperparameter or run setting and its values (repeat "
            "--sweep for a grid: every combination trains)"
        ),
    ] = ()
    sweep_dir: Annotated[
        str | None,
        _arg(
            "sweep directory (the same one again resumes the sweep); None: "
            "sweeps/ALGO-ENV-DATE-TIME"
        ),
    ] = None
    stop_after_groups: Annotated[
        int | None, _arg("stop after this many groups, as an interruption would (for testing)")
    ] = None
    jobs: Annotated[
        int,
        _arg(
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
        _arg(
            "FIELD=LOW:HIGH, FIELD=LOW:HIGH:log or FIELD=VALUE,VALUE,...: a searched "
            "hyperparameter or run setting (repeat --search for each field)"
        ),
    ] = ()
    search_file: Annotated[
        str | None, _arg("a file of --search specs, one per line (# starts a comment)")
    ] = None
    tune_dir: Annotated[
        str | None,
        _arg(
            "tuning directory (the same one again resumes the study); None: "
            "tunes/ALGO-ENV-DATE-TIME"
        ),
    ] = None
    trials: Annotated[int, _arg("end when this many trials are complete, pruned or failed")] = 20
    batch: Annotated[int, _arg("trials asked at once and trained together")] = 4
    sampler: Annotated[
        str,
        _arg("Optuna sampler: tpe, random, cmaes, qmc, gp or a class name of optuna.samplers"),
    ] = "tpe"
    sampler_seed: Annotated[int, _arg("seed of the sampler")] = 0
    pruner: Annotated[
        str,
        _arg(
            "Optuna pruner at evaluation periods: median, percentile, hyperband, "
            "successive-halving, none or a class name of optuna.pruners"
        ),
    ] = "median"
    storage: Annotated[
        str | None,
        _arg(
            "the study's storage: a journal file's path (shared by workers) or an Optuna "
            "storage URL (sqlite:///..., postgresql://...); None: TUNE_DIR/study.log"
        ),
    ] = None
    study_name: Annotated[
        str | None, _arg("the study's name in its storage; None: TUNE_DIR's name")
    ] = None
    objective_evals: Annotated[
        int,
        _arg(
            "the objective: mean over the search seeds of the mean of the last this many "
            "evaluations"
        ),
    ] = 5
    enqueue_base: Annotated[
        bool, _arg("a new study's first trial is the base run's own values (the preset's)")
    ] = True
    stop_after_batches: Annotated[
        int | None, _arg("stop after this many batches, as an interruption would (for testing)")
    ] = None


_TRAINING_COMMANDS = {c.command: c for c in (TrainCommand, SweepCommand, TuneCommand)}
_HYPERPARAMETERS_HELP = "{name} hyperparameters: Tianshou 2.x names, defaults of preset {preset}"


def _run_settings(algo: str, preset: str) -> list[tuple[str, Any, Any, str]]:
    """``(name, type, default, help)`` of the fields of :class:`jaxrl.io.RunConfig` offered
    on the command line, read from their metadata
    (:func:`jaxrl.training.settings.command_line_options`) with ``preset``'s defaults."""
    from jaxrl.io.config import RunConfig, run_defaults
    from jaxrl.training.settings import command_line_options

    return command_line_options(RunConfig, run_defaults(algo, preset), preset)


_PARSED = ("algo", "run", "hyperparameters")  # filled by command_registry, not options


def _own_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    """The fields of a :class:`TrainingCommand` class that are its command's options."""
    return tuple(f for f in dataclasses.fields(cls) if f.name not in _PARSED)


def _run_fields(algo: str, preset: str, command: str = "train") -> list[tuple[str, Any, Any, str]]:
    """``(name, type, default, help)`` of ``jaxrl COMMAND ALGO``'s options but the
    hyperparameters: the run settings (:func:`_run_settings`), then the command's own."""
    cls = _TRAINING_COMMANDS[command]
    hints = typing.get_type_hints(cls, include_extras=True)
    options = _run_settings(algo, preset)
    for field in _own_fields(cls):
        kind, *marks = typing.get_args(hints[field.name])
        (help_text,) = [m.help for m in marks if getattr(m, "help", None)]
        options.append((field.name, kind, field.default, help_text))
    return options


def command_registry(preset: str, env: str | None = None) -> tyro.constructors.ConstructorRegistry:
    """How tyro reads :class:`TrainingCommand` and the algorithms' classes: a command's
    options are its run settings (with ``preset``'s defaults), its own fields and the
    algorithm's class; an algorithm's are its command-line hyperparameters
    (:func:`jaxrl.io.config.hyperparameters`: ``preset``'s defaults on ``env``'s task, the
    Tianshou 1.x names in the help). Each is read into a dict by field name."""
    rules = tyro.constructors.ConstructorRegistry()
    spec = tyro.constructors.StructConstructorSpec
    field = tyro.constructors.StructFieldSpec
    algo_of: dict[type, str] = {}  # algorithm class -> its name, for the commands' classes

    @rules.struct_rule
    def command(info: tyro.constructors.StructTypeInfo) -> Any:
        cls = info.type
        if not (isinstance(cls, type) and issubclass(cls, TrainingCommand)):
            return None
        from jaxrl.algorithms import registry as algorithms

        algo = info.default.algo
        run = [
            field(name, Annotated[kind, _arg(help_text)], default)
            for name, kind, default, help_text in _run_settings(algo, preset)
        ]
        hints = typing.get_type_hints(cls, include_extras=True)
        own = [field(f.name, hints[f.name], f.default) for f in _own_fields(cls)]
        algo_of[algorithms.get(algo).cls] = algo
        group = _HYPERPARAMETERS_HELP.format(name=algo.upper(), preset=preset)
        hyper = Annotated[
            algorithms.get(algo).cls, tyro.conf.OmitArgPrefixes, _arg(group, name=algo)
        ]

        def instantiate(**values: Any) -> TrainingCommand:
            settings = {f.name: values.pop(f.name) for f in run}
            return cls(algo, settings, values.pop("hyperparameters"), **values)

        return spec(instantiate, (*run, *own, field("hyperparameters", hyper, tyro.MISSING)))

    @rules.struct_rule
    def algorithm(info: tyro.constructors.StructTypeInfo) -> Any:
        if info.type not in algo_of:
            return None
        from jaxrl.io.config import hyperparameters

        fields = []
        for h in hyperparameters(algo_of[info.type], preset, env):
            help_text = h.help
            if h.aliases:
                help_text += f" (1.x: {', '.join(option_flag(a) for a in h.aliases)})"
            fields.append(field(h.name, Annotated[h.type, _arg(help_text)], h.default))
        return spec(dict, tuple(fields))

    return rules


@dataclasses.dataclass(frozen=True)
class CompareCommand:
    """Compare runs: learning curves with 95% confidence bands in one figure, and a table of
    each run's last evaluation, best evaluation and final policy (mean +- std [95% CI] across
    seeds)."""

    run_dirs: Annotated[
        tuple[str, ...],
        tyro.conf.Positional,
        _arg("two or more run directories", metavar="RUN_DIR..."),
    ]
    output: Annotated[
        str | None,
        _arg("image file; None: comparison.png next to the first RUN_DIR", aliases=("-o",)),
    ] = None
    labels: Annotated[
        tuple[str, ...] | None, _arg("one label per run; None: algorithm and environment")
    ] = None
    title: Annotated[str | None, _arg("figure title")] = None
    spread: Annotated[
        Literal["ci95", "std", "minmax", "none"],
        _arg("shading: ci95 (95% CI of the mean), std, minmax or none"),
    ] = "ci95"
    json: Annotated[bool, _arg("print the table as JSON")] = False
    profile: Annotated[
        str | None,
        _arg(
            "also draw a performance profile of the final policies' returns (normalized ones "
            "with --normalize) to this image"
        ),
    ] = None
    normalize: Annotated[
        str | None,
        _arg(
            "runs on several tasks: normalize the final policies' returns by this reference "
            "(tianshou: 0 = uniform random policy, 1 = the best of Tianshou's published "
            "means) and aggregate them over tasks x seeds per algorithm (or per --labels)"
        ),
    ] = None


@dataclasses.dataclass(frozen=True)
class _TrainingNotRead:
    """Stands for the ``train``, ``sweep`` and ``tune`` subcommands on a command line that
    names none of them (``jaxrl plot``, ``jaxrl --help``): their options come from the
    algorithms' classes, and importing those imports JAX (seconds) for nothing."""


def _covered(preset: str) -> tuple[str, ...]:
    """The registered algorithms ``preset`` has settings for."""
    from jaxrl.algorithms import registry
    from jaxrl.algorithms.presets import get_preset

    chosen = get_preset(preset)
    return tuple(a for a in algorithm_names() if chosen.covers(a, registry.get(a).run_shape_like))


def _needs_training(argv: list[str]) -> bool:
    """Whether :func:`parse` must build ``train`` and ``sweep`` from the algorithms to read
    ``argv``: not when it names ``evaluate``, ``plot`` or ``compare``, or only asks for the
    top-level help."""
    head = argv[0] if argv else ""
    only_help = bool(argv) and all(t in ("-h", "--help") for t in argv)
    return head not in _SUBCOMMANDS and not only_help


def _command_type(preset: str, training: bool = True) -> Any:
    """The whole command line as a tyro type: subcommands train ALGO, sweep ALGO, tune ALGO,
    evaluate, plot, compare (read with :func:`command_registry`). ``training=False``:
    ``train``, ``sweep`` and ``tune`` are listed (the top-level help is the same) but have no
    options, and no algorithm is imported."""
    from jaxrl.algorithms.presets import get_preset

    def algorithms(cls: type[TrainingCommand]) -> Any:
        if not training:
            return _TrainingNotRead
        from jaxrl.algorithms import registry

        what = {"train": "Train", "sweep": "Sweep settings x seeds of", "tune": "Tune"}
        defaults = f"preset {preset} ({get_preset(preset).description})"
        members = [
            Annotated[
                cls,
                tyro.conf.subcommand(
                    a,
                    default=cls(a, {}, {}),
                    description=f"{what[cls.command]} {registry.get(a).title}; "
                    f"defaults: {defaults}.",
                    prefix_name=False,
                ),
            ]
            for a in _covered(preset)
        ]
        if len(members) == 1:  # a union of one is its member: keep the ALGO word, unlisted
            members.append(Annotated[_TrainingNotRead, tyro.conf.Suppress])
        return Union[tuple(members)]  # noqa: UP007 (tyro reads the subcommands from a Union)

    described = [(n, c, " ".join(c.__doc__.split())) for n, c in _TRAINING_COMMANDS.items()]
    return Union[
        (
            *(
                Annotated[algorithms(c), tyro.conf.subcommand(n, description=d)]
                for n, c, d in described
            ),
            Annotated[EvaluateCommand, tyro.conf.subcommand("evaluate")],
            Annotated[PlotCommand, tyro.conf.subcommand("plot")],
            Annotated[CompareCommand, tyro.conf.subcommand("compare")],
        )
    ]


# ---------------------------------------------------------------------------------------------
# Parsing with one-line errors
# ---------------------------------------------------------------------------------------------


_POSITIONAL = {"run_dir": "RUN_DIR", "run_dirs": "RUN_DIR..."}
_SUBCOMMANDS = {"evaluate": EvaluateCommand, "plot": PlotCommand, "compare": CompareCommand}


def option_flag(name: str) -> str:
    """The command-line flag of a field: ``max_kl`` -> ``--max-kl``."""
    return "--" + name.replace("_", "-")


def command_spec(argv: list[str], preset: str) -> CommandSpec:
    """The options and positional arguments of the command ``argv`` names (for one-line
    errors; :mod:`jaxrl.cli_usage`)."""
    head = argv[0] if argv else ""
    if head in TRAINING and len(argv) >= 2 and argv[1] in algorithm_names():
        from jaxrl.io.config import hyperparameters

        options = {option_flag(f[0]): f[1] for f in _run_fields(argv[1], preset, head)}
        options.update({option_flag(h.name): h.type for h in hyperparameters(argv[1], preset)})
        return CommandSpec(f"{PROG} {head} {argv[1]}", options, hyperparameters=True)
    if head not in _SUBCOMMANDS:
        return CommandSpec(PROG, {})
    hints = typing.get_type_hints(_SUBCOMMANDS[head])
    options = {option_flag(n): kind for n, kind in hints.items() if n not in _POSITIONAL}
    if "--output" in options:
        options["-o"] = options["--output"]
    (positional,) = [n for n in hints if n in _POSITIONAL]
    return CommandSpec(
        f"{PROG} {head}",
        options,
        positional=_POSITIONAL[positional],
        positional_required=positional == "run_dir",
        many_positional=positional == "run_dirs",
    )


def _precheck(argv: list[str]) -> None:
    """Command and algorithm names, checked before anything heavy is imported."""
    if not argv:
        raise UsageError(f"missing command: choose from {', '.join(COMMANDS)} (see jaxrl --help)")
    head = argv[0]
    if head.startswith("-"):
        return
    if head not in COMMANDS:
        close = difflib.get_close_matches(head, COMMANDS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(f"unknown command {head!r}: choose from {', '.join(COMMANDS)}{hint}")
    if head in TRAINING:
        if len(argv) < 2 or argv[1].startswith("-"):
            if not any(a in ("-h", "--help") for a in argv[1:]):
                raise UsageError(
                    f"missing algorithm: jaxrl {head} ALGO with ALGO one of "
                    f"{', '.join(algorithm_names())}"
                )
        elif argv[1] not in algorithm_names():
            from jaxrl.algorithms import registry

            try:
                registry.get(argv[1])
            except ValueError as error:  # its message: the known names, how plug-ins load
                raise UsageError(str(error)) from None


def rewrite_aliases(argv: list[str]) -> list[str]:
    """Tianshou 1.x option names (``--discount-factor``) to their 2.x fields (``--gamma``)."""
    if len(argv) < 2 or argv[0] not in TRAINING or argv[1] not in algorithm_names():
        return argv
    from jaxrl.io.config import hyperparameters

    aliases = {}
    for spec in hyperparameters(argv[1]):
        for alias in spec.aliases:
            for spelling in (alias, alias.replace("_", "-")):
                aliases["--" + spelling] = option_flag(spec.name)
    rewritten = []
    for token in argv:
        option, equals, value = token.partition("=")
        rewritten.append(aliases[option] + equals + value if option in aliases else token)
    return rewritten


def _option_value(argv: list[str], option: str) -> str | None:
    """The value written for ``option`` (``--env X`` or ``--env=X``; the last one wins)."""
    value = None
    for index, token in enumerate(argv):
        if token == option and index + 1 < len(argv):
            value = argv[index + 1]
        elif token.startswith(option + "="):
            value = token.split("=", 1)[1]
    return value


def preset_in_force(argv: list[str]) -> str:
    """The preset whose defaults the command line gets: ``--preset NAME``, else the one
    :func:`jaxrl.algorithms.presets.preset_for_env` picks for ``--env`` (Pendulum-v1 when
    none is given).

    Raises:
      UsageError: an unknown preset name, or a preset for other tasks than ``--env``'s.
    """
    from jaxrl.algorithms.presets import get_preset, preset_for_env

    name = _option_value(argv, "--preset")
    env = _option_value(argv, "--env") or "Pendulum-v1"
    if name is None or name == "None":
        return preset_for_env(env)
    try:
        preset = get_preset(name)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        preset.check_task(env)
    except ValueError as error:
        raise UsageError(f"--{error}") from None
    return preset.name


def parse(argv: list[str]) -> Any:
    """Parse ``argv`` (without the program name) into a command object.

    Raises:
      UsageError: with one line naming the problem.
      SystemExit: for ``--help`` (status 0).
    """
    _precheck(argv)
    argv = rewrite_aliases(argv)
    preset = preset_in_force(argv)
    if argv[0] in TRAINING and len(argv) > 1 and argv[1] in algorithm_names():
        if argv[1] not in _covered(preset):
            covered = ", ".join(_covered(preset))
            raise UsageError(
                f"--preset {preset} has no settings for {argv[1]}: it is for {covered}"
            )
    registry = command_registry(preset, _option_value(argv, "--env") or "Pendulum-v1")
    command_type = _command_type(preset, training=_needs_training(argv))

    if any(token in ("-h", "--help") for token in argv):
        return tyro.cli(command_type, prog=PROG, args=argv, registry=registry)  # exits 0
    try:
        # Quiet: the one-line message below replaces tyro's report (some of tyro's value
        # errors are printed even with its console output off, hence the redirect too).
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return tyro.cli(
                command_type, prog=PROG, args=argv, console_outputs=False, registry=registry
            )
    except SystemExit as exit_:
        if not exit_.code:
            raise
        words = 2 if argv[:1] and argv[0] in TRAINING else 1
        raise UsageError(explain(command_spec(argv, preset), argv[words:])) from None


def expand_preset_file(argv: list[str]) -> list[str]:
    """``argv`` with a ``--preset-file FILE``'s preset and values written as options right
    after ``jaxrl COMMAND ALGO`` (so options written on the command line override them);
    ``--env`` and ``--preset`` from the file where the command line gives none.

    Raises:
      UsageError: the file cannot be read, is not a preset file, or is for another
        algorithm.
    """
    file = _option_value(argv, "--preset-file")
    if file is None or len(argv) < 2 or argv[0] not in TRAINING or file == "None":
        return argv
    from jaxrl.io.config import PresetFile

    try:
        preset = PresetFile.load(file)
    except ValueError as error:
        raise UsageError(f"--preset-file: {error}") from None
    if preset.algo != argv[1]:
        raise UsageError(
            f"--preset-file {file} is a {preset.algo} preset file; use it with "
            f"jaxrl {argv[0]} {preset.algo}"
        )
    inserted = []
    for name, value in (("env", preset.env), ("preset", preset.preset)):
        if _option_value(argv, option_flag(name)) is None:
            inserted += [option_flag(name), str(value)]
    for name, value in {**preset.run, **preset.hyperparameters}.items():
        inserted += _option_tokens(name, value)
    return [*argv[:2], *inserted, *argv[2:]]


def _option_tokens(name: str, value: Any) -> list[str]:
    """A field's value as command-line tokens: ``--x``/``--no-x`` for a bool, the items of a
    list one by one, ``None`` as the word."""
    if isinstance(value, bool):
        return [option_flag(name) if value else option_flag("no_" + name)]
    if isinstance(value, list | tuple):
        return [option_flag(name), *map(str, value)]
    return [option_flag(name), str(value)]


def given_options(argv: list[str]) -> set[str]:
    """Field names of the options written on the command line (``--no-x`` counts as x)."""
    given = set()
    for token in argv:
        if token.startswith("--"):
            name = token[2:].split("=", 1)[0].replace("-", "_")
            given.add(name)
            if name.startswith("no_"):
                given.add(name[3:])
    return given

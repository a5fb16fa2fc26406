"""How the ``jaxrl`` command reads its command line: tyro over the command dataclasses
(:mod:`jaxrl.cli.options`), with the run settings and the algorithm's hyperparameters given
the preset's defaults (:func:`command_registry`), the Tianshou 1.x option names rewritten
(:func:`rewrite_aliases`), and tyro's rejections worded in one line
(:mod:`jaxrl.cli.usage`)."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import typing
from typing import Annotated, Any, Union

import tyro

from jaxrl.cli.options import (
    COMMANDS,
    PROG,
    SUBCOMMANDS,
    TRAINING,
    TRAINING_COMMANDS,
    CompareCommand,
    EvaluateCommand,
    ExportCommand,
    PlotCommand,
    TrainingCommand,
    algorithm_names,
    arg,
    option_flag,
    own_fields,
)
from jaxrl.cli.usage import CommandSpec, UsageError, explain

_HYPERPARAMETERS_HELP = "{name} hyperparameters: Tianshou 2.x names, defaults of preset {preset}"


def _run_settings(algo: str, preset: str) -> list[tuple[str, Any, Any, str]]:
    """``(name, type, default, help)`` of the fields of :class:`jaxrl.config.RunConfig` offered
    on the command line, read from their metadata
    (:func:`jaxrl.config.spellings.command_line_options`) with ``preset``'s defaults."""
    from jaxrl.config.run_config import RunConfig, run_defaults
    from jaxrl.config.spellings import command_line_options

    return command_line_options(RunConfig, run_defaults(algo, preset), preset)


def _run_fields(algo: str, preset: str, command: str = "train") -> list[tuple[str, Any, Any, str]]:
    """``(name, type, default, help)`` of ``jaxrl COMMAND ALGO``'s options but the
    hyperparameters: the run settings (:func:`_run_settings`), then the command's own."""
    cls = TRAINING_COMMANDS[command]
    hints = typing.get_type_hints(cls, include_extras=True)
    options = _run_settings(algo, preset)
    for field in own_fields(cls):
        kind, *marks = typing.get_args(hints[field.name])
        (help_text,) = [m.help for m in marks if getattr(m, "help", None)]
        options.append((field.name, kind, field.default, help_text))
    return options


def command_registry(preset: str, env: str | None = None) -> tyro.constructors.ConstructorRegistry:
    """How tyro reads :class:`TrainingCommand` and the algorithms' classes: a command's
    options are its run settings (with ``preset``'s defaults), its own fields and the
    algorithm's class; an algorithm's are its command-line hyperparameters
    (:func:`jaxrl.config.spellings.hyperparameters`: ``preset``'s defaults on ``env``'s task, the
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
            field(name, Annotated[kind, arg(help_text)], default)
            for name, kind, default, help_text in _run_settings(algo, preset)
        ]
        hints = typing.get_type_hints(cls, include_extras=True)
        own = [field(f.name, hints[f.name], f.default) for f in own_fields(cls)]
        algo_of[algorithms.get(algo).cls] = algo
        group = _HYPERPARAMETERS_HELP.format(name=algo.upper(), preset=preset)
        hyper = Annotated[
            algorithms.get(algo).cls, tyro.conf.OmitArgPrefixes, arg(group, name=algo)
        ]

        def instantiate(**values: Any) -> TrainingCommand:
            settings = {f.name: values.pop(f.name) for f in run}
            return cls(algo, settings, values.pop("hyperparameters"), **values)

        return spec(instantiate, (*run, *own, field("hyperparameters", hyper, tyro.MISSING)))

    @rules.struct_rule
    def algorithm(info: tyro.constructors.StructTypeInfo) -> Any:
        if info.type not in algo_of:
            return None
        from jaxrl.config.spellings import hyperparameters

        fields = []
        for h in hyperparameters(algo_of[info.type], preset, env):
            help_text = h.help
            if h.aliases:
                help_text += f" (1.x: {', '.join(option_flag(a) for a in h.aliases)})"
            fields.append(field(h.name, Annotated[h.type, arg(help_text)], h.default))
        return spec(dict, tuple(fields))

    return rules


@dataclasses.dataclass(frozen=True)
class _TrainingNotRead:
    """Stands for the ``train``, ``sweep`` and ``tune`` subcommands on a command line that
    names none of them (``jaxrl plot``, ``jaxrl --help``): their options come from the
    algorithms' classes, and importing those imports JAX (seconds) for nothing."""


def _covered(preset: str) -> tuple[str, ...]:
    """The registered algorithms ``preset`` has settings for."""
    from jaxrl.algorithms import registry
    from jaxrl.config.presets import get_preset

    chosen = get_preset(preset)
    return tuple(a for a in algorithm_names() if chosen.covers(a, registry.get(a).run_shape_like))


def _needs_training(argv: list[str]) -> bool:
    """Whether :func:`parse` must build ``train`` and ``sweep`` from the algorithms to read
    ``argv``: not when it names ``evaluate``, ``export``, ``plot`` or ``compare``, or only
    asks for the top-level help."""
    head = argv[0] if argv else ""
    only_help = bool(argv) and all(t in ("-h", "--help") for t in argv)
    return head not in SUBCOMMANDS and not only_help


def _command_type(preset: str, training: bool = True) -> Any:
    """The whole command line as a tyro type: subcommands train ALGO, sweep ALGO, tune ALGO,
    evaluate, export, plot, compare (read with :func:`command_registry`). ``training=False``:
    ``train``, ``sweep`` and ``tune`` are listed (the top-level help is the same) but have no
    options, and no algorithm is imported."""
    from jaxrl.config.presets import get_preset

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

    described = [(n, c, " ".join(c.__doc__.split())) for n, c in TRAINING_COMMANDS.items()]
    return Union[
        (
            *(
                Annotated[algorithms(c), tyro.conf.subcommand(n, description=d)]
                for n, c, d in described
            ),
            Annotated[EvaluateCommand, tyro.conf.subcommand("evaluate")],
            Annotated[ExportCommand, tyro.conf.subcommand("export")],
            Annotated[PlotCommand, tyro.conf.subcommand("plot")],
            Annotated[CompareCommand, tyro.conf.subcommand("compare")],
        )
    ]


_POSITIONAL = {"run_dir": "RUN_DIR", "run_dirs": "RUN_DIR..."}


def command_spec(argv: list[str], preset: str) -> CommandSpec:
    """The options and positional arguments of the command ``argv`` names (for one-line
    errors; :mod:`jaxrl.cli.usage`)."""
    head = argv[0] if argv else ""
    if head in TRAINING and len(argv) >= 2 and argv[1] in algorithm_names():
        from jaxrl.config.spellings import hyperparameters

        def options_of(command: str) -> dict[str, Any]:
            fields = _run_fields(argv[1], preset, command)
            return {option_flag(name): kind for name, kind, *_ in fields}

        options = options_of(head)
        options.update({option_flag(h.name): h.type for h in hyperparameters(argv[1], preset)})
        elsewhere = {
            flag: f"{PROG} {other} {argv[1]}"
            for other in reversed(TRAINING)
            if other != head
            for flag in options_of(other)
            if flag not in options
        }
        return CommandSpec(
            f"{PROG} {head} {argv[1]}", options, hyperparameters=True, elsewhere=elsewhere
        )
    if head not in SUBCOMMANDS:
        return CommandSpec(PROG, {})
    hints = typing.get_type_hints(SUBCOMMANDS[head])
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


def alias_flags(algo: str) -> dict[str, str]:
    """``--alias -> --field`` for ``algo``'s Tianshou 1.x names, each spelled with ``_`` and
    with ``-``."""
    from jaxrl.config.spellings import hyperparameters

    aliases = {}
    for spec in hyperparameters(algo):
        for alias in spec.aliases:
            for spelling in (alias, alias.replace("_", "-")):
                aliases["--" + spelling] = option_flag(spec.name)
    return aliases


def rewrite_aliases(argv: list[str]) -> list[str]:
    """Tianshou 1.x option names (``--discount-factor``) to their 2.x fields (``--gamma``)."""
    if len(argv) < 2 or argv[0] not in TRAINING or argv[1] not in algorithm_names():
        return argv
    aliases = alias_flags(argv[1])
    rewritten = []
    for token in argv:
        option, equals, value = token.partition("=")
        rewritten.append(aliases[option] + equals + value if option in aliases else token)
    return rewritten


def option_value(argv: list[str], option: str) -> str | None:
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
    :func:`jaxrl.config.presets.preset_for_env` picks for ``--env`` (Pendulum-v1 when
    none is given).

    Raises:
      UsageError: an unknown preset name, or a preset for other tasks than ``--env``'s.
    """
    from jaxrl.config.presets import get_preset, preset_for_env

    name = option_value(argv, "--preset")
    env = option_value(argv, "--env") or "Pendulum-v1"
    if name is None or name == "None":
        return preset_for_env(env)
    try:
        preset = get_preset(name)
    except ValueError as error:
        raise UsageError(str(error)) from None
    algo = argv[1] if len(argv) > 1 and argv[0] in TRAINING else None
    try:
        preset.check_task(env, algo if algo in preset.run else None)
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
    registry = command_registry(preset, option_value(argv, "--env") or "Pendulum-v1")
    command_type = _command_type(preset, training=_needs_training(argv))

    if any(token in ("-h", "--help") for token in argv):
        description = None
        if argv[0] in ("-h", "--help"):  # the top-level help says what else jaxrl takes
            description = (
                "Tianshou's NPG, TRPO and DDPG in JAX: train, study, evaluate and export "
                f"agents. {PROG} --version prints the versions of jaxrl and JAX."
            )
        return tyro.cli(
            command_type, prog=PROG, args=argv, registry=registry, description=description
        )  # exits 0
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

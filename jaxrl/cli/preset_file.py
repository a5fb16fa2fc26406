"""``--preset-file FILE`` (``jaxrl tune``'s ``best.json``): the file's preset and values
written into the command line as options, each checked against the command's options as it is
read, before the command line is parsed (:mod:`jaxrl.cli.parsing`)."""

from __future__ import annotations

from typing import Any

from jaxrl.cli.options import TRAINING, option_flag
from jaxrl.cli.parsing import alias_flags, command_spec, option_value, preset_in_force
from jaxrl.cli.usage import UsageError, explain_value


def expand_preset_file(argv: list[str]) -> list[str]:
    """``argv`` with a ``--preset-file FILE``'s preset and values written as options right
    after ``jaxrl COMMAND ALGO`` (so options written on the command line override them);
    ``--env`` and ``--preset`` from the file where the command line gives none.

    Raises:
      UsageError: the file cannot be read, is not a preset file, is for another algorithm,
        or holds a value the command does not take (naming it: ``hyperparameters.max_kl``).
    """
    file = option_value(argv, "--preset-file")
    if file is None or len(argv) < 2 or argv[0] not in TRAINING or file == "None":
        return argv
    from jaxrl.config.run_config import PresetFile

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
        if option_value(argv, option_flag(name)) is None:
            inserted += [option_flag(name), str(value)]
    spec = command_spec(argv[:2], preset_in_force([*argv[:2], *inserted, *argv[2:]]))
    aliases = alias_flags(argv[1])  # a 1.x name in the file is its field's, as on the line
    for section in ("run", "hyperparameters"):
        for name, value in getattr(preset, section).items():
            field = aliases.get(option_flag(name), option_flag(name))[2:].replace("-", "_")
            problem = explain_value(spec, f"{section}.{name}", field, value)
            if problem:
                raise UsageError(f"--preset-file {file}: {problem}")
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

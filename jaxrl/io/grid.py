"""The grid of a study (:mod:`jaxrl.io.studies`, :mod:`jaxrl.io.tuning`): which fields of a
run a study can vary, and their values as written (``--sweep max_kl=0.005,0.01``) parsed to
their command-line types."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from jaxrl.io.config import RunConfig, hyperparameters
from jaxrl.training.settings import command_line_options, launch_settings, settings_fields

NOT_SWEPT = {
    "seed": "the seeds are the sweep's other axis: use num_seeds and seed",
    "num_seeds": "every setting trains the same seeds: use num_seeds",
    "checkpoint_every": "checkpoints do not change what a run learns",
    "checkpoint_buffer": "checkpoints do not change what a run learns",
    "check_finite": "the checked mode is for finding faults, not for studies",
}


class SweepError(ValueError):
    """A grid the sweep cannot train: names the field (and value) and the reason.

    Attributes:
      cause: for a setting that is not a valid run, the error of its run configuration or
        algorithm (which the command line spells with its flags); else None.
    """

    def __init__(self, message: str, cause: Exception | None = None) -> None:
        super().__init__(message if cause is None else f"{message}: {cause}")
        self.message, self.cause = message, cause


def sweepable_fields(algo: str, preset: str) -> dict[str, Any]:
    """``name -> command-line type`` of what a sweep of ``algo`` can vary: every
    command-line hyperparameter and the run settings the drivers depend on."""
    from jaxrl.io.config import run_defaults

    kinds = {spec.name: spec.type for spec in hyperparameters(algo, preset)}
    run = command_line_options(RunConfig, run_defaults(algo, preset), preset)
    driver = {f.name for f in settings_fields() if f.metadata["driver"]}
    kinds.update({name: kind for name, kind, _, _ in run if name in driver})
    return kinds


def split_values(text: str) -> list[str]:
    """``"0.1,0.2"`` -> ``["0.1", "0.2"]``; commas inside brackets stay: ``"[64,64],[32]"``."""
    values, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            values.append(current.strip())
            current = ""
        else:
            current += char
    values.append(current.strip())
    return [value for value in values if value]


def parse_value(name: str, text: str, kind: Any, flag: str = "--sweep") -> Any:
    """One written value of field ``name`` as its command-line type ``kind``.

    Raises:
      SweepError: naming the field, the value and the type expected.
    """
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is not Literal and type(None) in args:
        if text.lower() == "none":
            return None
        (kind,) = [a for a in args if a is not type(None)]
        return parse_value(name, text, kind, flag)
    try:
        if kind is bool:
            return {"true": True, "false": False}[text.lower()]
        if kind in (int, float, str):
            return kind(text)
        if origin is Literal:
            (match,) = [a for a in args if str(a) == text]
            return match
        if origin is tuple:
            return tuple(int(v) for v in text.strip("[]()").replace("x", ",").split(",") if v)
    except (KeyError, ValueError):
        pass
    expected = "true or false" if kind is bool else getattr(kind, "__name__", str(kind))
    if origin is Literal:
        expected = "one of " + ", ".join(str(a) for a in args)
    raise SweepError(f"{flag} {name}={text}: expected {expected}")


def parse_grid(algo: str, preset: str, specs: Sequence[str]) -> dict[str, list[Any]]:
    """``["max_kl=0.005,0.01", "hidden_sizes=[64,64],[32,32]"]`` as ``{field: values}``.

    Raises:
      SweepError: a malformed spec, an unknown field (with the closest names), a field that
        cannot be swept (and why), a value of the wrong type, or a field given twice.
    """
    kinds = sweepable_fields(algo, preset)
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        name, equals, text = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not split_values(text):
            raise SweepError(f"--sweep {spec!r}: write FIELD=VALUE,VALUE,...")
        check_field(name, kinds, algo)
        if name in grid:
            raise SweepError(f"--sweep {name} is given twice: list all its values once")
        grid[name] = [parse_value(name, value, kinds[name]) for value in split_values(text)]
        written = [cell(value) for value in grid[name]]
        repeated = sorted({str(v) for v in written if written.count(v) > 1})
        if repeated:  # two settings would train into one directory
            raise SweepError(f"--sweep {name}={text}: {', '.join(repeated)} is listed twice")
    return grid


def check_field(name: str, kinds: Mapping[str, Any], algo: str, flag: str = "--sweep") -> None:
    """That ``name`` is a field a study can vary (``kinds``: :func:`sweepable_fields`).

    Raises:
      SweepError: naming ``flag`` and the field, why it cannot vary, or the closest names.
    """
    if name in kinds:
        return
    if name in NOT_SWEPT:
        raise SweepError(f"{flag} {name}: cannot be swept ({NOT_SWEPT[name]})")
    if name in launch_settings():
        raise SweepError(
            f"{flag} {name}: cannot be swept (a launch setting: how the processes of a job "
            "find each other, not what a run learns)"
        )
    fields = {f.name for f in dataclasses.fields(RunConfig)} | {"env", "algo"}
    if name in fields:
        raise SweepError(f"{flag} {name}: cannot be swept (one sweep trains one {name})")
    close = difflib.get_close_matches(name, list(kinds), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise SweepError(f"{flag} {name}: {algo} has no such hyperparameter or run setting{hint}")


def cell(value: Any) -> Any:
    """A value as a directory name or a table cell writes it: sequences as ``64x64``."""
    return "x".join(str(v) for v in value) if isinstance(value, tuple | list) else value

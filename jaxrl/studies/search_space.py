"""The search space of a tuning study (``jaxrl tune --search``): each searched field a
:class:`~jaxrl.studies.search_space.Dimension`, a range of an int or float field or a list of
values, read from the command line's specs by :func:`~jaxrl.studies.search_space.parse_search`."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any, Literal

from jaxrl.studies.grid import (
    SweepError,
    check_distinct,
    check_field,
    check_once,
    field_name,
    is_list,
    parse_value,
    split_values,
    sweepable_fields,
)


class TuneError(SweepError):
    """A search space, sampler, pruner or tuning directory :func:`jaxrl.studies.tune` cannot use;
    the message names the option (``--search FIELD``, ``--sampler``, ...) and what was
    expected."""


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched field: a range (``low``, ``high``, ``log``) of an int or float field, or
    ``choices`` (values of the field's command-line type).

    Attributes:
      name: the field (a hyperparameter or run setting).
      kind: ``"float"``, ``"int"`` or ``"categorical"``.
    """

    name: str
    kind: Literal["float", "int", "categorical"]
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        """``TuneError`` naming the dimension where one built by hand is no search: a kind
        other than the three, a range whose ``low`` is not below ``high`` (or not above 0 on
        a log scale), fewer than two choices."""
        if self.kind not in ("float", "int", "categorical"):
            why = f"kind must be 'float', 'int' or 'categorical', got {self.kind!r}"
        elif self.kind == "categorical":
            why = (
                None if len(self.choices) >= 2 else f"give at least two choices, got {self.choices}"
            )
        elif not self.low < self.high:
            why = f"low must be below high, got {self.low} and {self.high}"
        else:
            why = (
                f"a log range needs low > 0, got {self.low}" if self.log and self.low <= 0 else None
            )
        if why:
            raise TuneError(f"Dimension {self.name}: {why}")

    def suggest(self, trial: Any) -> Any:
        """The trial's value (an Optuna trial's ``suggest_*``); a categorical value is asked
        by its label (Optuna's choices are numbers and strings) and returned as the value."""
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        labels = [label(choice) for choice in self.choices]
        return self.choices[labels.index(trial.suggest_categorical(self.name, labels))]

    def describe(self) -> str:
        """The spec as ``--search`` writes it (``max_kl=0.001:0.05:log``)."""
        if self.kind == "categorical":
            return f"{self.name}=" + ",".join(str(label(c)) for c in self.choices)
        return f"{self.name}={self.low:g}:{self.high:g}" + (":log" if self.log else "")


def label(value: Any) -> Any:
    """A value as Optuna and the tables show it: sequences as ``64x64``, None as ``"None"``."""
    if isinstance(value, tuple | list):
        return "x".join(str(v) for v in value)
    return "None" if value is None else value


def _numeric(kind: Any) -> type | None:
    """``int`` or ``float`` for a field of that command-line type (None allowed), else None."""
    members = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    return members[0] if len(members) == 1 and members[0] in (int, float) else None


def parse_search(algo: str, preset: str, specs: Sequence[str]) -> list[Dimension]:
    """``["max_kl=0.001:0.05:log", "hidden_sizes=64x64,256x256"]`` as dimensions: a range
    ``LOW:HIGH`` (``:log`` for a log scale) of an int or float field, or a list of values.

    Raises:
      TuneError: a malformed spec, an unknown field (with the closest names), a field that
        cannot be searched, a field given twice (also as ``-`` and ``_`` spellings), a range
        with LOW >= HIGH or a log range with LOW <= 0, a range of a field that is not
        numeric, an empty list, a list with a value twice or a single value.
    """
    kinds = sweepable_fields(algo, preset)
    dimensions: dict[str, Dimension] = {}
    spelled: dict[str, str] = {}
    for spec in specs:
        written, equals, text = spec.partition("=")
        name = field_name(written, algo, preset)
        if not equals:
            raise TuneError(
                f"--search {spec!r}: write FIELD=LOW:HIGH, FIELD=LOW:HIGH:log or "
                "FIELD=VALUE,VALUE,..."
            )
        if not text.strip():
            raise TuneError(
                f"--search {written.strip()}=: give a range LOW:HIGH or at least two values"
            )
        try:
            check_field(name, kinds, algo, "--search")
            check_once("--search", name, written, spelled)
        except SweepError as error:
            message = str(error).replace("be swept", "be searched")
            raise TuneError(message.replace("list all its values once", "search it once")) from None
        if ":" in text and "," not in text:
            dimensions[name] = _range(name, text.strip(), kinds[name])
        else:
            dimensions[name] = _choices(name, text, kinds[name])
    return list(dimensions.values())


def _range(name: str, text: str, kind: Any) -> Dimension:
    parts = text.split(":")
    log = parts[-1] == "log"
    if log:
        parts = parts[:-1]
    number = _numeric(kind)
    if len(parts) != 2:
        raise TuneError(f"--search {name}={text}: a range is LOW:HIGH or LOW:HIGH:log")
    if number is None:
        raise TuneError(
            f"--search {name}={text}: a range needs an int or float field; list {name}'s "
            "values instead (FIELD=VALUE,VALUE,...)"
        )
    try:
        low, high = (parse_value(name, part, number, "--search") for part in parts)
    except SweepError as error:
        raise TuneError(str(error)) from None
    if not low < high:
        raise TuneError(f"--search {name}={text}: LOW must be below HIGH")
    if log and low <= 0:
        raise TuneError(f"--search {name}={text}: a log range needs LOW > 0")
    return Dimension(name, "int" if number is int else "float", low, high, log)


def _choices(name: str, text: str, kind: Any) -> Dimension:
    written = split_values(text)
    if not written:
        raise TuneError(f"--search {name}={text}: list at least two values")
    try:
        values = [parse_value(name, value, kind, "--search") for value in written]
    except SweepError as error:
        raise TuneError(str(error)) from None
    try:
        keys = [label(value) for value in values]
        check_distinct("--search", name, text, written, keys, is_list(kind))
    except SweepError as error:
        raise TuneError(str(error)) from None
    if len(values) < 2:
        raise TuneError(
            f"--search {name}={text}: one value is not a search; set it with --"
            f"{name.replace('_', '-')} {written[0]}"
        )
    return Dimension(name, "categorical", choices=tuple(values))


__all__ = ["Dimension", "TuneError", "label", "parse_search"]

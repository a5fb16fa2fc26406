"""Usage errors of the ``jaxrl`` command: one line, exit status 2.

:class:`UsageError` carries a problem the user can fix. :func:`explain` words the ones of
command lines the parser rejects: tyro parses ``jaxrl``'s command line, and when it rejects
one (with its console output off) the command explains why here, from its own table of
options, in one line that names the option and what was expected. Only tyro's public API is
used. :func:`name_flags` rewrites the library's errors (which name Python fields such as
``TrainConfig.total_steps`` or ``TRPO.max_kl``) with the flags a user of the command can
change (``--total-steps``, ``--max-kl``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import types
import typing
from collections.abc import Collection, Sequence
from typing import Any, Literal


class UsageError(Exception):
    """A problem with the command line or the run it names (one line, exit status 2)."""


@dataclasses.dataclass(frozen=True)
class CommandSpec:
    """What one command accepts.

    Attributes:
      name: the command as typed (``jaxrl train trpo``).
      options: ``--flag -> type`` (the type of its value; ``bool`` for ``--x``/``--no-x``
        switches), aliases included (``-o``).
      positional: the metavar of the positional arguments (``RUN_DIR``) or None.
      positional_required: whether at least one positional argument is needed.
      many_positional: whether several positional arguments are accepted.
      hyperparameters: whether the options include the algorithm's (for the message).
      elsewhere: ``--flag -> command`` for options this command lacks and a sibling takes
        (``--plan`` is ``jaxrl train``'s, not ``jaxrl sweep``'s).
    """

    name: str
    options: dict[str, Any]
    positional: str | None = None
    positional_required: bool = False
    many_positional: bool = False
    hyperparameters: bool = False
    elsewhere: dict[str, str] = dataclasses.field(default_factory=dict)


def _members(kind: Any) -> tuple[Any, bool]:
    """``(type without None, whether None is allowed)``."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(kind) if a is not type(None)]
        optional = len(members) < len(typing.get_args(kind))
        if len(members) == 1:
            return members[0], optional
        return typing.Union[tuple(members)], optional  # noqa: UP007
    return kind, False


def _is_sequence(kind: Any) -> bool:
    return typing.get_origin(_members(kind)[0]) in (tuple, list, Sequence)


def _value_problem(flag: str, kind: Any, value: str, in_file: bool = False) -> str | None:
    """Why ``value`` is not a ``kind`` for ``flag`` (None when it is); the hints spell values
    as a command line does, or ``in_file`` as a JSON file does."""
    kind, optional = _members(kind)
    if optional and value == "None":
        return None
    if typing.get_origin(kind) in (tuple, list, Sequence):
        problem = _value_problem(flag, typing.get_args(kind)[0], value, in_file)
        spelled = value.strip("[]()").replace(",", " ").split()
        if problem and len(spelled) > 1 and in_file:  # "64,64": a list in a string
            problem += f"; write a list: [{', '.join(spelled)}]"
        elif problem and len(spelled) > 1:  # "64,64" or "[64, 64]": a list in one word
            problem += f"; give the values separated by spaces: {flag} {' '.join(spelled)}"
        return problem
    if typing.get_origin(kind) is Literal:
        choices = [str(c) for c in typing.get_args(kind)]
        if value not in choices:
            listed = ", ".join(sorted(choices + (["None"] if optional else [])))
            return f"invalid value {value!r} for {flag} (choose from {listed})"
        return None
    try:
        if kind is int:
            int(value)
        elif kind is float:
            float(value)
    except ValueError:
        expected = "an integer" if kind is int else "a number"
        problem = f"invalid value for {flag}: {value!r} is not {expected}"
        whole = _whole_number(value) if kind is int else None
        if whole is None:
            return problem
        return f"{problem}; write it out: {whole if in_file else f'{flag} {whole}'}"
    return None


def _whole_number(value: str) -> int | None:
    """``value`` as an integer when it is one in another spelling (``"1e6"``, ``"2048.0"``)."""
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if math.isfinite(number) and number == int(number) else None


# What a switch's value is written as elsewhere (``--action-scaling false``).
_SWITCH_WORDS = {"true", "false", "yes", "no", "on", "off", "1", "0"}


def _lookup(spec: CommandSpec, option: str) -> tuple[str, Any] | None:
    """``(flag, type)`` of ``option`` (``--no-x`` is the switch ``--x``), None if unknown."""
    if option in spec.options:
        return option, spec.options[option]
    if option.startswith("--no-"):
        switch = "--" + option[5:]
        if spec.options.get(switch) is bool:
            return switch, bool
    return None


def explain(spec: CommandSpec, tokens: list[str]) -> str:
    """The one-line reason a command line (``tokens``, after the command's own words) was
    rejected: an unknown option (with the closest known one), a bad or missing value, a
    missing or unexpected positional argument."""
    see = f"(see {spec.name} --help)"
    positionals = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        option, equals, inline = token.partition("=")
        found = _lookup(spec, option)
        if found is None and option in spec.elsewhere:
            return f"{option} is an option of {spec.elsewhere[option]}, not of {spec.name} {see}"
        if found is None:
            close = difflib.get_close_matches(option, list(spec.options), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            what = "hyperparameter or option" if spec.hyperparameters else "option"
            return f"unknown {what} {option} for {spec.name}{hint} {see}"
        flag, kind = found
        if kind is bool:
            value = inline if equals else tokens[index] if index < len(tokens) else ""
            if equals or value.lower() in _SWITCH_WORDS:
                written = token if equals else f"{option} {value}"
                return f"{flag} is a switch: write {flag} or --no-{flag[2:]}, not {written}"
            continue
        if equals:
            values = [inline]
        elif _is_sequence(kind):
            values = []
            while index < len(tokens) and not tokens[index].startswith("--"):
                values.append(tokens[index])
                index += 1
        else:
            values = tokens[index : index + 1]
            index += len(values)
        if not values:
            return f"{flag} expects a value"
        for value in values:
            problem = _value_problem(flag, kind, value)
            if problem:
                return problem
    if spec.positional is None and positionals:
        return f"unexpected argument {positionals[0]!r} for {spec.name}"
    if spec.positional is not None and len(positionals) > 1 and not spec.many_positional:
        return f"unexpected argument {positionals[1]!r} for {spec.name}"
    if spec.positional_required and not positionals:
        return f"missing {spec.positional} for {spec.name} {see}"
    return f"invalid arguments for {spec.name} {see}"


def explain_value(spec: CommandSpec, label: str, name: str, value: Any) -> str | None:
    """Why a file's JSON ``value`` for the field ``name`` (``label`` says where the file holds
    it: ``hyperparameters.max_kl``) is not one ``spec``'s command takes; None when it is: a
    switch takes true or false, a list only a list-valued field, and every item must read as
    the option's type."""
    found = _lookup(spec, "--" + name.replace("_", "-"))
    if found is None:
        fields = [flag[2:].replace("-", "_") for flag in spec.options if flag.startswith("--")]
        close = difflib.get_close_matches(name, fields, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        what = "hyperparameter or option" if spec.hyperparameters else "option"
        return f"{label}: {spec.name} has no {what} {name}{hint}"
    kind = found[1]
    shown = json.dumps(value)
    if kind is bool:
        return None if isinstance(value, bool) else f"{label} must be true or false, got {shown}"
    if isinstance(value, list) and not _is_sequence(kind):
        return f"{label} must be a single value, got the list {shown}"
    for item in value if isinstance(value, list) else [value]:
        problem = _value_problem(label, kind, "None" if item is None else str(item), True)
        if problem:
            return problem
    return None


# A field name as the library's errors write it: ``TRPO.max_kl``, ``TrainConfig.total_steps=100``,
# ``total_steps=100`` or a bare ``brax_backend``; not inside a path, a dotted name or a flag.
_FIELD = re.compile(
    r"(?<![\w.\-/'\"])(?:(?P<owner>[A-Z]\w*)\.)?(?P<field>[a-z]\w*)"
    r"(?:=(?P<value>[^\s,;)]+))?(?![\w/\-])"
)


def name_flags(message: str, flags: Collection[str]) -> str:
    """``message`` with the Python names of fields that are options of the command written as
    their flags: ``TRPO.max_kl must be ...`` -> ``--max-kl must be ...``,
    ``TrainConfig.total_steps=100 is ...`` -> ``--total-steps 100 is ...``.

    A name is rewritten when ``flags`` has its flag and the message marks it as a field: by
    an owner (``Class.field``), a value (``field=value``) or an underscore (``eval_every``);
    plain words (``env steps``) stay as they are.
    """

    def flag_of(match: re.Match[str]) -> str:
        field, value = match["field"], match["value"]
        flag = "--" + field.replace("_", "-")
        if flag not in flags or not (match["owner"] or value is not None or "_" in field):
            return match[0]
        return flag if value is None else f"{flag} {value}"

    return _FIELD.sub(flag_of, message)

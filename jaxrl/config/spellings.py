"""How the command line and a run's ``config.json`` spell an algorithm's fields
(:func:`hyperparameters`: each with its command-line type, default and help), keyed by the
field's type: the algorithms declare typed fields and know no command line.

- A number, a bool, a string, a ``Literal`` of names (an activation, an action-bound
  method) or a tuple of ints is spelled as itself.
- A learning-rate schedule (``Schedule | None``) as ``constant`` (None) or ``linear``
  (a linear decay over the run's agent updates, ``linear_schedule``).
- An exploration noise (``GaussianNoise | OUNoise``) as ``gaussian[:SIGMA]``,
  ``ou[:SIGMA]`` or ``none`` (:func:`parse_noise`).
- A Flax module (a custom network) is for Python code only: it has no spelling.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import flax.linen as nn

from jaxrl.algorithms import registry
from jaxrl.algorithms._common import Schedule, field_help, linear_schedule
from jaxrl.algorithms.noise import GaussianNoise, OUNoise
from jaxrl.config.presets import get_preset
from jaxrl.config.settings import _NO_DEFAULT, settings_fields

# Defaults come from presets (:mod:`jaxrl.config.presets`); the environment picks one.
DEFAULT_PRESET = "pendulum"


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How the command line and ``config.json`` spell a field whose value is an object.

    Attributes:
      type: the command-line type (a ``Literal`` of names, ``str``...).
      default: the command-line default.
      parse: ``(value, num_updates) -> field value``: the command-line value as the
        algorithm takes it; ``num_updates`` is the run's count of agent updates (the length
        of a schedule, :meth:`jaxrl.config.settings.RunLayout.agent_updates`). Raises
        ``ValueError("must be ..., got ...")`` for a value it cannot read (the caller names
        the field).
      help: the command line's help.
    """

    type: Any
    default: Any
    parse: Callable[[Any, int], Any]
    help: str


PYTHON_ONLY = Spelling(None, None, lambda value, num_updates: value, "")
"""No spelling, for a field only Python code sets (a custom network)."""


def parse_noise(spec: str) -> GaussianNoise | OUNoise | None:
    """``"gaussian[:SIGMA]"``, ``"ou[:SIGMA]"``, ``"none"`` (or ``"default"``) as noise: the
    command line's spelling of an exploration noise.

    Raises:
      ValueError: ``"must be gaussian[:SIGMA], ou[:SIGMA] or none, got ..."``.
    """
    kind, _, sigma = str(spec).strip().lower().partition(":")
    try:
        value = float(sigma) if sigma else None
    except ValueError:
        value = math.nan
    if kind in ("none", "") and not sigma:
        return None
    if kind == "default" and not sigma:
        return GaussianNoise(sigma=0.1)
    if kind in ("gaussian", "ou") and (value is None or math.isfinite(value)):
        noise = GaussianNoise if kind == "gaussian" else OUNoise
        return noise() if value is None else noise(sigma=value)
    raise ValueError(f"must be gaussian[:SIGMA], ou[:SIGMA] or none, got {spec!r}")


def _parse_schedule(kind: Any, num_updates: int) -> Schedule | None:
    if kind not in ("constant", "linear"):
        raise ValueError(f"must be 'constant' or 'linear', got {kind!r}")
    return linear_schedule(num_updates) if kind == "linear" else None


def spelling(name: str, hint: Any) -> Spelling | None:
    """The spelling of a field ``name`` of type ``hint`` (a resolved type hint): None where
    the value is spelled as itself, :data:`PYTHON_ONLY` where it has none."""
    members = typing.get_args(hint) if _is_union(hint) else (hint,)
    if any(_is_module(m) for m in members):
        return PYTHON_ONLY
    if Schedule in members:
        rate = name.removesuffix("_schedule")
        return Spelling(
            Literal["constant", "linear"],
            "constant",
            _parse_schedule,
            f"schedule of {rate}: constant, or linear decay to 0 over the run",
        )
    if GaussianNoise in members or OUNoise in members:
        return Spelling(
            str,
            "gaussian:0.1",
            lambda spec, num_updates: parse_noise(spec),
            "exploration noise: gaussian[:SIGMA], ou[:SIGMA] (Ornstein-Uhlenbeck) or none",
        )
    return None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _is_module(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, nn.Module)


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
    """One algorithm field as the command line sees it.

    Attributes:
      name: the field name (Tianshou 2.x), ``--name-with-dashes`` on the command line.
      type: the command-line type (float, int, bool, ``int | None``, a Literal, ...).
      default: the default of the command (Tianshou's tuned value where it has one).
      help: one line of help.
      aliases: Tianshou 1.x names accepted for it.
    """

    name: str
    type: Any
    default: Any
    help: str
    aliases: tuple[str, ...] = ()


def _first_sentence(text: str) -> str:
    text = re.sub(r":(?:meth|class|func):`([^`]*)`", r"\1", text)
    return re.split(r"(?<=[a-z)])\. ", text, maxsplit=1)[0].rstrip(".")


def _cli_type(hint: Any) -> Any:
    """The command-line type of a dataclass field's type hint."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (bool, int, float, str):
        return hint
    if origin is Literal:
        return hint
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if float in members:  # "float | Array": a number on the command line
            return float
        if len(members) == 1:
            inner = _cli_type(members[0])
            return inner | None if len(members) < len(args) else inner
    if origin in (Sequence, tuple, list) and args and args[0] is int:
        return tuple[int, ...]
    raise TypeError(f"no command-line type for {hint!r}")


def hyperparameters(
    algo: str, preset: str = DEFAULT_PRESET, env: str | None = None
) -> list[Hyperparameter]:
    """The command-line hyperparameters of ``algo`` (``"npg"``, ``"trpo"``, ``"ddpg"``), with
    the defaults of ``preset`` (:mod:`jaxrl.config.presets`) on ``env``'s task."""
    info = registry.get(algo)
    cls = info.cls
    hints = typing.get_type_hints(cls)
    aliases: dict[str, list[str]] = {}
    for old, new in getattr(cls, "ALIASES", {}).items():
        aliases.setdefault(new, []).append(old)
    defaults = get_preset(preset).for_algo(algo, info.run_shape_like, info.presets_like, env)[0]
    defaults.update(info.presets.get(preset, {}))
    result = []
    for field in dataclasses.fields(cls):
        name = field.name
        spelled = spelling(name, hints[name])
        if spelled is PYTHON_ONLY or name in info.ignored_fields:
            continue
        if spelled is not None:
            kind, default = spelled.type, spelled.default
        else:
            kind, default = _cli_type(hints[name]), field.default
        default = defaults.get(name, default)
        help_text = info.help.get(name) or (spelled and spelled.help)
        help_text = help_text or _first_sentence(field_help(field))
        result.append(Hyperparameter(name, kind, default, help_text, tuple(aliases.get(name, ()))))
    return result


def command_line_options(
    cls: type, preset_defaults: Mapping[str, Any], preset: str
) -> list[tuple[str, Any, Any, str]]:
    """``(name, type, default, help)`` of each field of ``cls``
    (:class:`~jaxrl.config.settings.RunSettings` or a subclass) that its
    :func:`~jaxrl.config.settings.setting` metadata offers on the command line: the command-line
    type (``cli_type``, else the field's), the default (``preset_defaults``' for a preset
    setting, else ``cli_default``, else the field's) and one line of help (a callable help
    gets the name of the ``preset`` in force). A subclass' own fields (what the run trains)
    come first."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in settings_fields()}
    own = [f for f in dataclasses.fields(cls) if f.name not in names]
    options = []
    for field in own + list(settings_fields()):
        meta = field.metadata
        if not meta.get("cli", False):
            continue
        if meta["preset"]:
            default = preset_defaults.get(field.name, field.default)
        elif meta["cli_default"] is not _NO_DEFAULT:
            default = meta["cli_default"]
        else:
            default = field.default
        help_text = meta["help"](preset) if callable(meta["help"]) else meta["help"]
        options.append((field.name, meta["cli_type"] or hints[field.name], default, help_text))
    return options

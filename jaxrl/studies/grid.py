"""The grid of a study (:mod:`jaxrl.studies.sweeps`, :mod:`jaxrl.studies.tuning`): which fields of a
run a study can vary, their values as written (``--sweep max_kl=0.005,0.01``) parsed to
their command-line types, and the settings they make
(:class:`~jaxrl.studies.grid.Setting`), in the groups that one program trains
(:func:`~jaxrl.studies.grid.groups`)."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import jax

from jaxrl.config.run_config import RunConfig
from jaxrl.config.settings import launch_settings, settings_fields
from jaxrl.config.spellings import command_line_options, hyperparameters

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
    from jaxrl.config.run_config import run_defaults

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
      SweepError: a malformed spec or an empty list, an unknown field (with the closest
        names), a field that cannot be swept (and why), a value of the wrong type, a field
        given twice (under any of its spellings), or two values that are one setting on disk.
    """
    kinds = sweepable_fields(algo, preset)
    grid: dict[str, list[Any]] = {}
    spelled: dict[str, str] = {}
    for spec in specs:
        written_name, equals, text = spec.partition("=")
        if not equals:
            raise SweepError(f"--sweep {spec!r}: write FIELD=VALUE,VALUE,...")
        name = field_name(written_name, algo, preset)
        if not split_values(text):
            raise SweepError(f"--sweep {written_name.strip()}=: list at least one value")
        check_field(name, kinds, algo)
        check_once("--sweep", name, written_name, spelled)
        written = split_values(text)
        grid[name] = [parse_value(name, value, kinds[name]) for value in written]
        keys = [cell(v) for v in grid[name]]
        check_distinct("--sweep", name, text, written, keys, is_list(kinds[name]))
    return grid


def field_name(written: str, algo: str, preset: str) -> str:
    """The field a ``--sweep``/``--search`` name means: ``-`` read as ``_``, a Tianshou 1.x
    name (``discount_factor``) as its field (``gamma``), as the command line reads options."""
    name = written.strip().replace("-", "_")
    for spec in hyperparameters(algo, preset):
        if name in spec.aliases:
            return spec.name
    return name


def check_once(flag: str, name: str, written: str, spelled: dict[str, str]) -> None:
    """That field ``name`` (written ``written``) was not given before (``spelled``: the
    fields given so far, as they were written; ``name`` is added).

    Raises:
      SweepError: naming both spellings where they differ.
    """
    written = written.strip()
    if name in spelled:
        how = f" (as {spelled[name]} and {written})" if spelled[name] != written else ""
        raise SweepError(f"{flag} {name} is given twice{how}: list all its values once")
    spelled[name] = written


def is_list(kind: Any) -> bool:
    """Whether command-line type ``kind`` is a list (``tuple[int, ...]``, optional or not)."""
    args = typing.get_args(kind) if typing.get_origin(kind) is not Literal else ()
    return typing.get_origin(kind) is tuple or any(is_list(a) for a in args)


def check_distinct(
    flag: str,
    name: str,
    text: str,
    written: Sequence[str],
    keys: Sequence[Any],
    list_field: bool = False,
) -> None:
    """That the ``written`` values of field ``name`` are distinct settings: their ``keys``
    (how a directory name or a table writes each, :func:`cell`) all differ, and each is a
    name a directory can have. For a ``list_field`` written without brackets the error shows
    how a list is written.

    Raises:
      SweepError: a value listed twice, two spellings of one value (``0.1`` and ``1e-1``),
        or a value a directory name cannot hold.
    """
    first: dict[str, str] = {}
    for value, key in zip(written, map(str, keys), strict=True):
        if "/" in key or "\0" in key:
            raise SweepError(
                f"{flag} {name}={value}: a setting's directory is named by its values, and a "
                "directory name cannot hold '/'"
            )
        if key not in first:
            first[key] = value
        elif first[key] == value:
            bare = list_field and not any(char in value for char in "[(x")
            how = "; each value is one list: [64,64],[32,32] (or 64x64,32x32)" if bare else ""
            raise SweepError(f"{flag} {name}={text}: {value} is listed twice{how}")
        else:
            raise SweepError(
                f"{flag} {name}={text}: {first[key]} and {value} are one value ({name}={key}); "
                "list it once"
            )


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


def saved_difference(saved: Mapping[str, Any], described: Mapping[str, Any]) -> str | None:
    """Where a sweep's or study's saved description (``{"base": RunConfig.to_dict(), ...}``)
    first differs from ``described``, the one a command would write now
    (:func:`first_difference`); None where they are one sweep or study. The saved base run
    is read as this version writes it: run settings added since it was saved take their
    defaults, as a resumed run's do (:meth:`~jaxrl.config.RunConfig.from_dict`), so that a
    study started by an earlier version resumes."""
    try:
        saved = {**saved, "base": RunConfig.from_dict(saved["base"]).to_dict()}
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # not a run: compared as it is
    return first_difference(dict(saved), json.loads(json.dumps(described)))


def first_difference(saved: Any, now: Any, where: str = "") -> str | None:
    """Where two JSON documents first differ, as ``"num_envs: 4 saved, 8 now"`` (a run
    setting or hyperparameter of a base run by its name, other keys by their path); None
    where they are equal."""
    if isinstance(saved, dict) and isinstance(now, dict):
        for key in dict.fromkeys([*saved, *now]):
            inner = f"{where}.{key}" if where else str(key)
            found = first_difference(saved.get(key), now.get(key), inner)
            if found is not None:
                return found
        return None
    if saved == now:
        return None
    for prefix in ("base.run.", "base.hyperparameters.", "base."):
        where = where.removeprefix(prefix)
    return f"{where}: {json.dumps(saved)} saved, {json.dumps(now)} now"


@dataclasses.dataclass(frozen=True)
class Setting:
    """One point of the grid: its ``values`` (field -> value), its directory name and its
    resolved run configuration."""

    name: str
    values: dict[str, Any]
    config: RunConfig


def _setting_name(values: Mapping[str, Any]) -> str:
    return ",".join(f"{name}={cell(value)}" for name, value in values.items())


def resolve_settings(base: RunConfig, grid: Mapping[str, Sequence[Any]]) -> list[Setting]:
    """Every combination of ``grid``'s values over the run ``base`` (its seeds, its other
    settings and hyperparameters), each checked by building its agent.

    Raises:
      SweepError: a grid that is no dict, a field the grid cannot vary
        (:func:`check_field`), values that are no list, an empty list, values that are one
        setting (:func:`check_distinct`), or a combination that is not a valid run, naming
        the field and the value.
    """
    if not isinstance(grid, Mapping):
        raise SweepError(
            "grid must be a dict of field -> list of values ({'max_kl': [0.005, 0.01]}), got "
            f"{type(grid).__name__} {grid!r:.60}"
        )
    kinds = sweepable_fields(base.algo, base.preset)
    for name, values in grid.items():
        check_field(name, kinds, base.algo, "grid")
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise SweepError(f"grid {name}: give a list of values, got {values!r}")
        if not values:
            raise SweepError(f"grid {name}: list at least one value")
        written = [str(value) for value in values]
        keys = [cell(value) for value in values]
        check_distinct("grid", name, ",".join(written), written, keys, is_list(kinds[name]))
    settings = []
    for combination in itertools.product(*grid.values()):
        values = dict(zip(grid, combination, strict=True))
        settings.append(make_setting(base, values, _setting_name(values), "setting"))
    return settings


def make_setting(base: RunConfig, values: Mapping[str, Any], name: str, what: str) -> Setting:
    """The setting ``name``: the run ``base`` with ``values`` (hyperparameters and run
    settings, by field name), checked by building its agent.

    Raises:
      SweepError: ``values`` are not a valid run (``what`` and ``name`` name the setting).
    """
    run_names = {f.name for f in settings_fields()}
    run = {k: v for k, v in values.items() if k in run_names}
    hyper = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
    hyper = {k: v for k, v in hyper.items() if k not in run_names}
    try:
        config = dataclasses.replace(base, hyperparameters={**base.hyperparameters, **hyper}, **run)
        config.make_agent()
    except (ValueError, TypeError) as error:
        raise SweepError(f"{what} {name}", error) from None
    return Setting(name, dict(values), config)


def groups(settings: Sequence[Setting]) -> list[list[Setting]]:
    """The settings in groups that one program trains: equal run settings as the drivers
    take them, equal algorithm structure (class and static fields); in grid order."""
    found: dict[Any, list[Setting]] = {}
    for setting in settings:
        config = setting.config
        structure = jax.tree_util.tree_structure(config.make_agent())
        key = (config.driver_settings, config.backend, config.env_backend, structure)
        found.setdefault(key, []).append(setting)
    return list(found.values())

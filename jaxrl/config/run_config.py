"""What a run is: the algorithms the command line knows, their tuned defaults, and the
resolved configuration of a run (saved as ``config.json`` in its run directory).

Every hyperparameter of an algorithm is a field of its dataclass (:class:`jaxrl.NPG`,
:class:`jaxrl.TRPO`, :class:`jaxrl.DDPG`); :func:`~jaxrl.config.hyperparameters` lists the
ones that can be given on the command line, with a command-line type, the default and a
help text, read from the field's type and metadata
(:func:`jaxrl.algorithms._common.hyperparameter`). A field that holds a Python object is
spelled as its type says (:mod:`jaxrl.config.spellings`):
exploration noise as ``"gaussian:0.1"``, ``"ou:0.3"``, ``"none"``; learning-rate schedules as
``"constant"`` or ``"linear"`` (decay to zero over the run). Custom networks are for Python
code only. The run settings are declared in :mod:`jaxrl.config.settings`.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from jaxrl.algorithms import registry
from jaxrl.algorithms._common import linear_schedule as linear_schedule  # re-exported
from jaxrl.config.files import RUN_REMEDY, DamagedFile, read_json, write_text
from jaxrl.config.presets import get_preset, presets_help
from jaxrl.config.settings import (
    REQUIRED,
    RunSettings,
    launch_settings,
    setting,
    settings_fields,
)
from jaxrl.config.spellings import DEFAULT_PRESET, hyperparameters, spelling

Backend = Literal["jax", "gymnasium"]


def run_defaults(algo: str, preset: str = DEFAULT_PRESET, env: str | None = None) -> dict[str, Any]:
    """The run shape of ``algo`` in ``preset`` on ``env``'s task (``num_envs``, ``num_steps``,
    ``total_steps``, ``eval_every``, ``eval_episodes``, ``normalize_obs``)."""
    info = registry.get(algo)
    return get_preset(preset).for_algo(algo, info.run_shape_like, info.presets_like, env)[1]


def _preset_hyperparameters(algo: str, preset: str, env: str) -> dict[str, Any]:
    """Every command-line hyperparameter of ``algo`` with ``preset``'s default on ``env``."""
    return {spec.name: spec.default for spec in hyperparameters(algo, preset, env)}


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# Settings a resumed run may change; every other one is the run's own. The launch settings
# (how the processes of a job find each other: jaxrl.config.settings.launch_settings) are
# not the run's at all: config.json leaves them out, and a resumed run takes them as given.
RESUME_OVERRIDES = ("total_steps", "checkpoint_every")


class ResumeConflict(ValueError):
    """A setting given to a resumed run that differs from the run's own.

    Attributes:
      name: the field; given, saved: its given and its saved value.
    """

    def __init__(self, name: str, given: Any, saved: Any) -> None:
        self.name, self.given, self.saved = name, given, saved
        super().__init__(
            f"{name} {given} differs from the resumed run's {saved}: a resumed run keeps its "
            f"configuration (only {', '.join(RESUME_OVERRIDES)} may change)"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig(RunSettings):
    """The resolved configuration of a run: everything needed to repeat or resume it.

    Its run settings (shape, evaluation, seeds, checkpointing, backends) are those of
    :class:`jaxrl.config.settings.RunSettings`, declared and validated there; this class adds
    what the run trains.

    Attributes:
      algo: a registered algorithm name (``"npg"``, ``"trpo"``, ``"ddpg"``, ...).
      env: environment id.
      backend: ``"jax"`` (a gymnax or Brax id, the jitted driver) or ``"gymnasium"`` (host
        driver).
      preset: the preset the defaults came from (:mod:`jaxrl.config.presets`).
      hyperparameters: every command-line hyperparameter of the algorithm, JSON values.
    """

    algo: str = dataclasses.field(metadata={"cli": False})
    env: str = setting(
        REQUIRED,
        "environment id: gymnax ids and Brax ids (brax:hopper) run in the jitted driver, "
        "other gymnasium ids on the host",
        cli_default="Pendulum-v1",
    )
    backend: Backend = setting(
        REQUIRED,
        "driver: auto uses jax for gymnax ids and the host driver (gymnasium) for the rest",
        cli_type=Literal["auto", "jax", "gymnasium"],
        cli_default="auto",
    )
    preset: str = setting(
        DEFAULT_PRESET,
        lambda preset: (
            f"default settings. {presets_help()}. None: chosen from --env (in force: {preset})"
        ),
        cli_type=str | None,
        cli_default=None,
    )
    hyperparameters: dict[str, Any] = dataclasses.field(
        default_factory=dict, metadata={"cli": False}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(
            self,
            "hyperparameters",
            {name: _json_value(value) for name, value in self.hyperparameters.items()},
        )

    @classmethod
    def from_preset(
        cls,
        algo: str,
        env: str,
        preset: str | None = None,
        *,
        backend: Backend = "gymnasium",
        hyperparameters: dict[str, Any] | None = None,
        **run: Any,
    ) -> RunConfig:
        """The run of ``algo`` on ``env`` with every default of ``preset`` (the one
        :func:`jaxrl.config.presets.preset_for_env` picks when None), ``hyperparameters``
        and ``run`` settings overriding them
        (:meth:`~jaxrl.config.settings.RunSettings.for_budget`: a budget given
        without an interval evaluates about 10 times)."""
        from jaxrl.config.presets import preset_for_env

        preset = preset or preset_for_env(env)
        hyper = _preset_hyperparameters(algo, preset, env)
        defaults = run_defaults(algo, preset, env)
        return cls(
            algo=algo,
            env=env,
            backend=backend,
            hyperparameters={**hyper, **(hyperparameters or {})},
            preset=preset,
            **RunSettings.for_budget(defaults, run),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (what ``config.json`` holds): the run settings but the launch
        settings (:func:`jaxrl.config.settings.launch_settings`: how this launch's
        processes joined, not what the run is); ``counts`` records what the run does
        (``layout``), for reading only."""
        layout = self.layout
        launch = launch_settings()
        return {
            "algo": self.algo,
            "env": self.env,
            "backend": self.backend,
            "preset": self.preset,
            "run": {
                f.name: getattr(self, f.name) for f in settings_fields() if f.name not in launch
            },
            "hyperparameters": dict(self.hyperparameters),
            "counts": {
                "env_steps": layout.total_steps,
                "collections": layout.num_collections,
                "evaluations": layout.num_periods,
                "eval_env_steps": list(layout.eval_steps),
                "agent_updates": self.num_agent_updates(),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict` (fields added later take their defaults; launch
        settings are never read from it)."""
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        launch = launch_settings()
        return cls(
            algo=data["algo"],
            env=data["env"],
            backend=data["backend"],
            hyperparameters=dict(data["hyperparameters"]),
            preset=data.get("preset", DEFAULT_PRESET),
            **{
                f.name: data["run"].get(f.name, defaults[f.name])
                for f in settings_fields()
                if f.name not in launch
            },
        )

    def resumed(self, given: Mapping[str, Any]) -> RunConfig:
        """This run, continued with the settings and hyperparameters ``given`` again (on the
        command line): the ones a resume may change (``RESUME_OVERRIDES``) and the launch
        settings (:func:`jaxrl.config.settings.launch_settings`) are taken; an ``"auto"``
        backend matches any; ``given`` names that are not settings of a run (``resume``,
        ``run_dir``) are ignored.

        Raises:
          ResumeConflict: the first other setting whose given value differs, naming it.
        """
        current = {
            **self.to_dict()["run"],
            **self.hyperparameters,
            "env": self.env,
            "backend": self.backend,
            "preset": self.preset,
        }
        for name in sorted(set(given) & set(current)):
            new, old = given[name], current[name]
            if isinstance(new, tuple):
                new = list(new)
            if name in ("backend", "env_backend") and new == "auto":
                continue
            if new != old and name not in RESUME_OVERRIDES:
                raise ResumeConflict(name, new, old)
        taken = (*RESUME_OVERRIDES, *launch_settings())
        return dataclasses.replace(self, **{name: given[name] for name in taken if name in given})

    def save(self, path: Path) -> None:
        """Write :meth:`to_dict` as JSON (atomically: a temporary file renamed)."""
        write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        """Read a config written by :meth:`save`.

        Raises:
          DamagedFile: the file is damaged or not a run's configuration, naming it.
        """
        data = read_json(path, RUN_REMEDY)
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, AttributeError) as error:
            why = f"not a run's configuration: no valid {error}"
            raise DamagedFile(path, why, RUN_REMEDY) from None

    def num_agent_updates(self) -> int:
        """Calls of ``agent.update`` that take effect over the whole run
        (:meth:`~jaxrl.config.settings.RunLayout.agent_updates`): the length of a linear
        schedule, which so reaches 0 on the run's last update."""
        info = registry.get(self.algo)
        if not info.off_policy:
            return self.layout.agent_updates()
        default = {f.name: f.default for f in dataclasses.fields(info.cls)}
        value = {**default, **self.hyperparameters}
        updates = self.layout.agent_updates(value["update_per_step"], value["warmup_steps"])
        return max(1, updates)

    def make_agent(self) -> Any:
        """The algorithm object: each hyperparameter's command-line value read by its field's
        spelling (:func:`jaxrl.config.spellings.spelling`; a schedule sized by
        :meth:`num_agent_updates`), JSON lists as tuples.

        Raises:
          ValueError, TypeError: an invalid value, naming the field.
        """
        cls = registry.get(self.algo).cls
        hints = typing.get_type_hints(cls)
        kwargs = {}
        for name, value in self.hyperparameters.items():
            spelled = spelling(name, hints[name]) if name in hints else None
            if spelled is not None:
                try:
                    value = spelled.parse(value, self.num_agent_updates())
                except ValueError as error:
                    raise ValueError(f"{cls.__name__}.{name} {error}") from None
            kwargs[name] = tuple(value) if isinstance(value, list) else value
        return cls(**kwargs)


def check_base(base: Any) -> None:
    """``TypeError`` unless a study's ``base`` run (a sweep's, a tune's) is a
    :class:`RunConfig`."""
    if not isinstance(base, RunConfig):
        raise TypeError(f"base must be a RunConfig (jaxrl.make_config), got {base!r:.60}")


@dataclasses.dataclass(frozen=True)
class PresetFile:
    """A preset file (``jaxrl tune`` writes the best trial's as ``best.json``): a named preset
    and the values that override it.

    Attributes:
      algo: the algorithm it is for.
      env: the environment it was found on.
      preset: the named preset its values override.
      hyperparameters: hyperparameter values (JSON values, by field name).
      run: run setting values (by field name).
      search_seeds: the seeds a search used (a report on them would not be held out).
      provenance: how it was found (free-form, for reading).
    """

    algo: str
    env: str
    preset: str
    hyperparameters: dict[str, Any]
    run: dict[str, Any]
    search_seeds: tuple[int, ...] = ()
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> PresetFile:
        """Read a preset file.

        Raises:
          ValueError: naming the file and what is wrong with it.
        """
        try:
            data = json.loads(Path(path).read_text())
        except OSError as error:
            raise ValueError(f"cannot read {path}: {error.strerror}") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not JSON ({error.msg}, line {error.lineno})") from None
        required = ("algo", "env", "preset", "hyperparameters", "run")
        missing = [key for key in required if not isinstance(data, dict) or key not in data]
        if missing:
            raise ValueError(f"{path} is not a preset file: it has no {', '.join(missing)}")
        if not isinstance(data["hyperparameters"], dict) or not isinstance(data["run"], dict):
            raise ValueError(f"{path}: hyperparameters and run must be JSON objects")
        try:
            get_preset(data["preset"])
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
        return cls(
            algo=data["algo"],
            env=data["env"],
            preset=data["preset"],
            hyperparameters=dict(data["hyperparameters"]),
            run=dict(data["run"]),
            search_seeds=tuple(data.get("search_seeds", ())),
            provenance=dict(data.get("provenance", {})),
        )

    def config(self, env: str | None = None, **run: Any) -> RunConfig:
        """The run of this preset file on ``env`` (its own by default), ``run`` settings
        overriding its values (:meth:`RunConfig.from_preset`)."""
        return RunConfig.from_preset(
            self.algo,
            env or self.env,
            self.preset,
            hyperparameters=dict(self.hyperparameters),
            **{**self.run, **run},
        )

    def check_seeds(self, seed: int, num_seeds: int) -> None:
        """That seeds ``seed .. seed + num_seeds - 1`` are held out from the search.

        Raises:
          ValueError: naming the overlap and seeds that are not.
        """
        overlap = sorted(set(range(seed, seed + num_seeds)) & set(self.search_seeds))
        if overlap:
            low, high = min(self.search_seeds), max(self.search_seeds)
            one = len(overlap) == 1
            which = f"seed {overlap[0]}" if one else f"seeds {overlap[0]}-{overlap[-1]}"
            raise ValueError(
                f"{which} of this run {'was' if one else 'were'} among this "
                f"preset's search seeds ({low}-{high}): report on seeds no search used (e.g. "
                "--seed 0)"
            )

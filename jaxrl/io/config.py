"""What a run is: the algorithms the command line knows, their tuned defaults, and the
resolved configuration of a run (saved as ``config.json`` in its run directory).

Every hyperparameter of an algorithm is a field of its dataclass (:class:`jaxrl.NPG`,
:class:`jaxrl.TRPO`, :class:`jaxrl.DDPG`); :func:`hyperparameters` lists the ones that can be
given on the command line, with a command-line type, the default and a help text read from
the class docstring. Fields that hold Python objects are spelled as strings there:
``exploration_noise`` (``"gaussian:0.1"``, ``"ou:0.3"``, ``"none"``) and the learning-rate
schedules (``"constant"`` or ``"linear"`` decay to zero over the run). Custom networks
(``actor_network``, ``critic_network``) are for Python code only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import jax.numpy as jnp

from jaxrl.algorithms import GaussianNoise, OUNoise, registry
from jaxrl.algorithms._common import field_help
from jaxrl.algorithms.presets import get_preset
from jaxrl.networks import ACTIVATIONS


class _AlgorithmClasses(Mapping):
    """``name -> class`` of the registered algorithms (a live view of the registry)."""

    def __getitem__(self, name: str) -> type:
        if name not in registry.algorithms():
            raise KeyError(name)
        return registry.get(name).cls

    def __iter__(self) -> Iterator[str]:
        return iter(registry.algorithms())

    def __len__(self) -> int:
        return len(registry.algorithms())


ALGORITHMS: Mapping[str, type] = _AlgorithmClasses()
"""Command-line algorithm names and their classes (:mod:`jaxrl.algorithms.registry`)."""

Backend = Literal["jax", "gymnasium"]

# Defaults come from presets (:mod:`jaxrl.algorithms.presets`); the environment picks one.
DEFAULT_PRESET = "pendulum"
DEFAULT_NUM_SEEDS: dict[str, int] = {"jax": 4, "gymnasium": 1}

# Fields that hold Python objects (networks): set them from Python, not the command line.
PYTHON_ONLY = frozenset({"actor_network", "critic_network"})
SCHEDULES = ("lr_schedule", "actor_lr_schedule", "critic_lr_schedule")
ScheduleName = Literal["constant", "linear"]

# Command-line help where the command line spells a field differently from Python (a
# schedule name or a noise spec instead of a callable or an object); every other field's
# help is its ``help`` metadata (:func:`jaxrl.algorithms._common.hyperparameter`).
HELP_OVERRIDES: dict[str, str] = {
    "lr_schedule": "critic learning-rate schedule: constant, or linear decay to 0 over the run",
    "actor_lr_schedule": "actor learning-rate schedule: constant, or linear decay to 0",
    "critic_lr_schedule": "critic learning-rate schedule: constant, or linear decay to 0",
    "exploration_noise": (
        "exploration noise: gaussian[:SIGMA], ou[:SIGMA] (Ornstein-Uhlenbeck) or none"
    ),
}


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


def adapted_eval_every(defaults: Mapping[str, Any], run: Mapping[str, Any]) -> int:
    """The evaluation interval of ``run`` (its run settings, ``total_steps`` given and
    ``eval_every`` not) whose preset's run settings are ``defaults``
    (:func:`jaxrl.training.periods.evaluation_interval`: a short run still evaluates about
    10 times)."""
    from jaxrl.training.periods import evaluation_interval

    return evaluation_interval(
        run["total_steps"],
        run["num_envs"] * run["num_steps"],
        defaults["total_steps"],
        defaults["eval_every"],
    )


def run_defaults(algo: str, preset: str = DEFAULT_PRESET) -> dict[str, Any]:
    """The run shape of ``algo`` in ``preset`` (``num_envs``, ``num_steps``, ``total_steps``,
    ``eval_every``, ``eval_episodes``, ``normalize_obs``)."""
    return get_preset(preset).for_algo(algo, registry.get(algo).run_shape_like)[1]


def hyperparameters(algo: str, preset: str = DEFAULT_PRESET) -> list[Hyperparameter]:
    """The command-line hyperparameters of ``algo`` (``"npg"``, ``"trpo"``, ``"ddpg"``), with
    the defaults of ``preset`` (:mod:`jaxrl.algorithms.presets`)."""
    info = registry.get(algo)
    cls = info.cls
    hints = typing.get_type_hints(cls)
    aliases: dict[str, list[str]] = {}
    for old, new in getattr(cls, "ALIASES", {}).items():
        aliases.setdefault(new, []).append(old)
    defaults = get_preset(preset).for_algo(algo, info.run_shape_like, info.presets_like)[0]
    defaults.update(info.presets.get(preset, {}))
    result = []
    for field in dataclasses.fields(cls):
        name = field.name
        if name in PYTHON_ONLY or name in info.ignored_fields:
            continue
        if name in SCHEDULES:
            kind: Any = ScheduleName
            default: Any = "constant"
        elif name == "exploration_noise":
            kind, default = str, "gaussian:0.1"
        elif name == "activation":
            kind, default = Literal[tuple(sorted(ACTIVATIONS))], field.default
        else:
            kind, default = _cli_type(hints[name]), field.default
        default = defaults.get(name, default)
        overrides = {**HELP_OVERRIDES, **info.help}
        help_text = overrides.get(name) or _first_sentence(field_help(field))
        result.append(Hyperparameter(name, kind, default, help_text, tuple(aliases.get(name, ()))))
    return result


def _preset_hyperparameters(algo: str, preset: str) -> dict[str, Any]:
    """Every command-line hyperparameter of ``algo`` with ``preset``'s default."""
    return {spec.name: spec.default for spec in hyperparameters(algo, preset)}


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def parse_noise(spec: str) -> GaussianNoise | OUNoise | None:
    """``"gaussian[:SIGMA]"``, ``"ou[:SIGMA]"``, ``"none"`` (or ``"default"``) as DDPG noise."""
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
    raise ValueError(
        f"DDPG.exploration_noise must be gaussian[:SIGMA], ou[:SIGMA] or none, got {spec!r}"
    )


def linear_schedule(num_updates: int) -> Callable[[Any], Any]:
    """Learning-rate multiplier decaying linearly from 1 to 0 over ``num_updates`` updates
    (Tianshou's MuJoCo ``LambdaLR`` schedule)."""
    total = max(1, int(num_updates))
    return lambda count: jnp.maximum(0.0, 1.0 - count / total)


# Settings a resumed run may change; every other one is the run's own.
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


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The resolved configuration of a run: everything needed to repeat or resume it.

    Attributes:
      algo: ``"npg"``, ``"trpo"`` or ``"ddpg"``.
      env: environment id.
      backend: ``"jax"`` (a gymnax or Brax id, the jitted driver) or ``"gymnasium"`` (host
        driver).
      num_envs, num_steps: parallel environments and vector steps per collection.
      total_steps: env-step budget per seed.
      eval_every: env steps between evaluations (one evaluation period).
      eval_episodes: episodes per evaluation.
      seed: base seed; seed ``i`` of the run is ``key(seed + i)`` on both drivers
        (:func:`jaxrl.training.seeds.seed_keys`).
      num_seeds: seeds trained together (in one program on JAX environments:
        :func:`jaxrl.training.over_seeds`).
      checkpoint_every: evaluation periods between checkpoints (0: only at the end).
      hyperparameters: every command-line hyperparameter of the algorithm, JSON values.
      preset: the preset the defaults came from (:mod:`jaxrl.algorithms.presets`).
      normalize_obs: running observation normalization (saved in checkpoints).
      env_backend: host environments: ``"gymnasium"`` or ``"envpool"`` (``"auto"`` before
        resolution; unused by the jitted driver).
      checkpoint_buffer: host runs: checkpoints hold the replay buffer too (exact resume of
        off-policy learning; a DDPG buffer of ``buffer_size`` transitions costs about
        ``buffer_size * (2 * obs_dim + act_dim + 3) * 4`` bytes per seed and checkpoint).
      brax_backend: Brax's physics backend for a ``brax:NAME`` environment (``generalized``,
        ``positional``, ``spring`` or ``mjx``); None for every other environment.
    """

    algo: str
    env: str
    backend: Backend
    num_envs: int
    num_steps: int
    total_steps: int
    eval_every: int
    eval_episodes: int
    seed: int
    num_seeds: int
    checkpoint_every: int
    hyperparameters: dict[str, Any]
    preset: str = DEFAULT_PRESET
    normalize_obs: bool = False
    env_backend: str = "auto"
    checkpoint_buffer: bool = True
    brax_backend: str | None = None

    RUN_FIELDS: typing.ClassVar[tuple[str, ...]] = (
        "num_envs",
        "num_steps",
        "total_steps",
        "eval_every",
        "eval_episodes",
        "seed",
        "num_seeds",
        "checkpoint_every",
        "normalize_obs",
        "env_backend",
        "checkpoint_buffer",
        "brax_backend",
    )

    def __post_init__(self) -> None:
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
        :func:`jaxrl.algorithms.presets.preset_for_env` picks when None), ``hyperparameters``
        and ``run`` fields overriding them (``seed`` 0, ``num_seeds`` 1 and
        ``checkpoint_every`` 0 unless given)."""
        from jaxrl.algorithms.presets import preset_for_env

        preset = preset or preset_for_env(env)
        hyper = _preset_hyperparameters(algo, preset)
        defaults = run_defaults(algo, preset)
        values = {"seed": 0, "num_seeds": 1, "checkpoint_every": 0, **defaults}
        if "total_steps" in run and "eval_every" not in run:
            run = {**run, "eval_every": adapted_eval_every(defaults, {**defaults, **run})}
        return cls(
            algo=algo,
            env=env,
            backend=backend,
            hyperparameters={**hyper, **(hyperparameters or {})},
            preset=preset,
            **{**values, **run},
        )

    @property
    def steps_per_update(self) -> int:
        """Env steps per collection (``num_envs * num_steps``)."""
        return self.num_envs * self.num_steps

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (what ``config.json`` holds); ``counts`` records what the run does
        (:attr:`layout`), for reading only."""
        layout = self.layout
        return {
            "algo": self.algo,
            "env": self.env,
            "backend": self.backend,
            "preset": self.preset,
            "run": {name: getattr(self, name) for name in self.RUN_FIELDS},
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
        """Inverse of :meth:`to_dict` (fields added later take their defaults)."""
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        return cls(
            algo=data["algo"],
            env=data["env"],
            backend=data["backend"],
            hyperparameters=dict(data["hyperparameters"]),
            preset=data.get("preset", DEFAULT_PRESET),
            **{name: data["run"].get(name, defaults.get(name)) for name in cls.RUN_FIELDS},
        )

    def resumed(self, given: Mapping[str, Any]) -> RunConfig:
        """This run, continued with the settings and hyperparameters ``given`` again (on the
        command line): the ones a resume may change (:data:`RESUME_OVERRIDES`) are taken;
        an ``"auto"`` backend matches any; ``given`` names that are not settings of a run
        (``resume``, ``run_dir``) are ignored.

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
        return dataclasses.replace(
            self, **{name: given[name] for name in RESUME_OVERRIDES if name in given}
        )

    def save(self, path: Path) -> None:
        """Write :meth:`to_dict` as JSON (atomically: a temporary file renamed)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        """Read a config written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    @property
    def layout(self) -> Any:
        """The run's collections and evaluation periods
        (:class:`jaxrl.training.periods.RunLayout`: the one rule both drivers follow)."""
        from jaxrl.training.periods import RunLayout

        return RunLayout.of(self.num_envs, self.num_steps, self.total_steps, self.eval_every)

    def num_agent_updates(self) -> int:
        """Calls of ``agent.update`` that take effect over the whole run
        (:meth:`RunLayout.agent_updates`): the length of a linear schedule, which so reaches
        0 on the run's last update."""
        info = registry.get(self.algo)
        if not info.off_policy:
            return self.layout.agent_updates()
        default = {f.name: f.default for f in dataclasses.fields(info.cls)}
        value = {**default, **self.hyperparameters}
        updates = self.layout.agent_updates(value["update_per_step"], value["warmup_steps"])
        return max(1, updates)

    def make_agent(self) -> Any:
        """The algorithm object (raises the constructor's ValueError/TypeError, naming the
        field, for invalid values)."""
        cls = registry.get(self.algo).cls
        kwargs = dict(self.hyperparameters)
        for name in SCHEDULES:
            if name in kwargs:
                kind = kwargs[name]
                if kind not in ("constant", "linear"):
                    raise ValueError(
                        f"{cls.__name__}.{name} must be 'constant' or 'linear', got {kind!r}"
                    )
                kwargs[name] = (
                    linear_schedule(self.num_agent_updates()) if kind == "linear" else None
                )
        if "exploration_noise" in kwargs:
            kwargs["exploration_noise"] = parse_noise(kwargs["exploration_noise"])
        if "hidden_sizes" in kwargs:
            kwargs["hidden_sizes"] = tuple(kwargs["hidden_sizes"])
        return cls(**kwargs)

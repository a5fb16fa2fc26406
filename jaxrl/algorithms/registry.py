"""The algorithms the command line and run configurations know, in one place.

Adding an algorithm: write its module (a class with the :class:`jaxrl.algorithms.protocol.Agent`
members) and :func:`register` it here or from your own code; the drivers, ``jaxrl train
NAME`` and ``config.json`` then know it. Presets (:mod:`jaxrl.config.presets`) may give
it tuned defaults; without any it gets its class defaults and its learning mode's run shape,
or, with ``presets_like``, the values of a built-in algorithm it extends. A plug-in file that
registers an algorithm is loaded by :func:`jaxrl.load_plugin` or the command's ``--plugin``
(:mod:`jaxrl.algorithms.plugins`); ``examples/td3.py`` is the worked example.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from jaxrl.algorithms.ddpg import DDPG
from jaxrl.algorithms.npg import NPG
from jaxrl.algorithms.trpo import TRPO


@dataclasses.dataclass(frozen=True)
class AlgorithmInfo:
    """One registered algorithm.

    Attributes:
      name: the command-line name (``jaxrl train NAME``; ``config.json``'s ``algo``).
      cls: the algorithm class; its 1.x keyword aliases are ``cls.ALIASES``.
      title: one line for help texts.
      ignored_fields: fields the class accepts but ignores (kept off the command line).
      help: command-line help texts that replace the docstring's for some fields.
      presets_like: a built-in algorithm whose hyperparameters and run shape this one takes
        in every preset that does not list it (TD3 takes DDPG's); None: its class defaults
        and its learning mode's run shape.
      presets: per preset name, hyperparameter values that replace those (a plug-in's own
        tuned values: ``{"pendulum": {"actor_lr": 1e-3}}``).
    """

    name: str
    cls: type
    title: str
    ignored_fields: frozenset[str] = frozenset()
    help: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    presets_like: str | None = None
    presets: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def off_policy(self) -> bool:
        """Whether the algorithm learns from a replay buffer."""
        return self.cls.learning_mode == "off_policy"

    @property
    def run_shape_like(self) -> str:
        """The built-in algorithm whose run shape a preset gives this one where it lists it
        not: ``presets_like``, else ``"ddpg"`` for off-policy algorithms, ``"trpo"`` for
        on-policy ones."""
        return self.presets_like or ("ddpg" if self.off_policy else "trpo")


_REGISTRY: dict[str, AlgorithmInfo] = {}


def register(info: AlgorithmInfo) -> AlgorithmInfo:
    """Add (or replace) an algorithm; returns ``info``."""
    learning_mode = getattr(info.cls, "learning_mode", None)
    if learning_mode not in ("on_policy", "off_policy"):
        raise TypeError(
            f"{info.cls.__name__}.learning_mode must be 'on_policy' or 'off_policy', got "
            f"{learning_mode!r}"
        )
    _REGISTRY[info.name] = info
    return info


def unregister(name: str) -> None:
    """Remove an algorithm (for tests and plug-ins)."""
    _REGISTRY.pop(name, None)


def algorithms() -> MappingProxyType:
    """``name -> AlgorithmInfo`` of every registered algorithm, in name order."""
    return MappingProxyType(dict(sorted(_REGISTRY.items())))


def get(name: str) -> AlgorithmInfo:
    """The algorithm called ``name``; ``ValueError`` naming the known ones otherwise."""
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown algorithm {name!r}: choose from {', '.join(sorted(_REGISTRY))} (a "
            "plug-in's algorithm is known once its file is loaded: --plugin FILE, also with "
            "--resume and for evaluate, JAXRL_PLUGINS or jaxrl.load_plugin)"
        )
    return _REGISTRY[name]


register(AlgorithmInfo("ddpg", DDPG, "DDPG (Deep Deterministic Policy Gradient)"))
register(AlgorithmInfo("npg", NPG, "NPG (Natural Policy Gradient)"))
register(AlgorithmInfo("trpo", TRPO, "TRPO (Trust Region Policy Optimization)"))

"""The one interface a run's training has: a :class:`~jaxrl.training.loop.Loop` cut at its
evaluations.

Two classes implement it: :class:`jaxrl.training.jax_loop.JaxLoop` (JAX environments: the
jitted driver, one program over every seed, or over the settings x seeds of a sweep group)
and :class:`jaxrl.training.gymnasium_driver.HostLoop` (gymnasium and EnvPool environments on
the host). :func:`jaxrl.training.run.run_periods` drives either the same way::

    carry = loop.init()                        # or loop.from_checkpoint(restored tree)
    carry = loop.start(carry, start_steps)     # ready to train from there
    for collections in loop.layout.periods_after(done):
        carry, metrics = loop.run_period(carry, collections)
        ... log loop.part(metrics, g) of each setting g; checkpoint loop.to_checkpoint(...)
    loop.close()

Shapes: a loop trains ``G`` settings (``Loop.num_settings``; 1 but for a sweep group) of
``S`` seeds each; every leaf of a carry and every metric has a leading ``[G * S]`` axis,
setting ``g``'s seeds at ``g * S .. (g + 1) * S - 1`` (:meth:`Loop.part`).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from jaxrl.algorithms.protocol import Agent
from jaxrl.config.settings import RunLayout


class Loop(Protocol):
    """A run's training cut at its evaluations (module docstring).

    Attributes:
      layout: the run's collections and evaluation periods (every setting's).
      agent: the algorithm (of the first setting: the settings of a loop share its
        structure, so its static fields, such as how it evaluates, hold for all).
      num_settings: ``G``, the settings trained together.
      evaluates_alongside: each period's evaluation is of the policy it started with,
        stepped alongside its training (``RunSettings.eval_alongside``): the first period
        reports the initial policy.
    """

    layout: RunLayout
    agent: Agent
    num_settings: int
    evaluates_alongside: bool

    def check(self) -> None:
        """Build what the run needs (raising on a bad configuration) without training."""

    def init(self) -> Any:
        """The carry of a run at period 0 (every seed's agent state, environments, keys)."""

    def checkpoint_template(self) -> Any:
        """What a checkpoint holds, as ``jax.ShapeDtypeStruct`` leaves, to restore into."""

    def to_checkpoint(self, carry: Any) -> Any:
        """What a checkpoint of ``carry`` holds (whole arrays; every process calls it). The
        jitted loop keeps the whole carry (a resumed run is bit-identical to an uninterrupted
        one); the host loop the agent states, observation statistics and (unless
        ``checkpoint_buffer`` is off) the replay buffers: a resumed run continues on fresh
        environments with a seed offset."""

    def from_checkpoint(self, tree: Any) -> Any:
        """The carry a restored checkpoint ``tree`` stands for."""

    def start(self, carry: Any, start_steps: int) -> Any:
        """Get ready to train from ``carry`` after ``start_steps`` env steps per seed (the
        host loop opens its environments); returns the carry to pass to :meth:`run_period`."""

    def run_period(self, carry: Any, collections: int) -> tuple[Any, dict[str, np.ndarray]]:
        """One evaluation period: ``collections`` collections with their learning, then an
        evaluation. Returns the carry and the period's metrics as NumPy arrays holding every
        seed (on every process): ``[G * S, collections]`` per collection (``env_steps``
        counted from the run's start, ``train_return``, the agent's stats) and
        ``eval/env_steps``, ``eval/return`` ``[G * S]``."""

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        """Mean return ``[G * S]`` (float64) of each seed's policy (``state``, ``obs_stats``
        with a leading ``[G * S]`` axis) over ``episodes`` fresh episodes."""

    def part(self, tree: Any, g: int) -> Any:
        """Setting ``g``'s share of a ``[G * S]`` tree (the tree itself when ``G = 1``)."""

    def close(self) -> None:
        """Release what :meth:`start` opened (the host loop's environments)."""

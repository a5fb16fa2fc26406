"""One period arithmetic for every driver.

A run is whole collections of ``num_envs * num_steps`` env steps, grouped into whole
evaluation periods of ``round(eval_every / steps_per_collect)`` collections (at least one);
it has ``total_steps // steps_per_collect // collections_per_period`` periods and evaluates
after each. The jitted driver scans over periods and the host driver loops over them with the
same numbers, so one request means the same run on both.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The shape of a run in collections and evaluation periods.

    Attributes:
      num_envs: parallel environments (per seed).
      num_steps: vector steps per collection.
      collections_per_period: collections (each followed by learning) between evaluations.
      num_periods: evaluation periods of the run.
    """

    num_envs: int
    num_steps: int
    collections_per_period: int
    num_periods: int

    @classmethod
    def of(cls, num_envs: int, num_steps: int, total_steps: int, eval_every: int) -> RunLayout:
        """The layout of a request; ``ValueError`` naming the field for a non-positive value
        or a budget shorter than one evaluation period."""
        for name, value in (
            ("num_envs", num_envs),
            ("num_steps", num_steps),
            ("total_steps", total_steps),
            ("eval_every", eval_every),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        steps_per_collect = num_envs * num_steps
        per_period = max(1, round(eval_every / steps_per_collect))
        num_periods = total_steps // steps_per_collect // per_period
        if num_periods < 1:
            raise ValueError(
                f"total_steps={total_steps} is less than one evaluation interval "
                f"({per_period * steps_per_collect} env steps)"
            )
        return cls(num_envs, num_steps, per_period, num_periods)

    @property
    def steps_per_collect(self) -> int:
        """Env steps per collection (per seed)."""
        return self.num_envs * self.num_steps

    @property
    def steps_per_period(self) -> int:
        """Env steps per evaluation period (per seed)."""
        return self.steps_per_collect * self.collections_per_period

    @property
    def num_collections(self) -> int:
        """Collections of the whole run."""
        return self.collections_per_period * self.num_periods

    @property
    def total_steps(self) -> int:
        """Env steps the run takes (per seed): whole periods of the requested budget."""
        return self.steps_per_period * self.num_periods

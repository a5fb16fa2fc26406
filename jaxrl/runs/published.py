"""Tianshou's published MuJoCo results: the numbers jaxrl's runs and benchmark table compare with.

Source: the README of Tianshou's ``examples/mujoco`` (the benchmark of its MuJoCo example
scripts ``mujoco_{trpo,npg,ddpg}.py``), as transcribed in ``shared/reference/tianshou.md``.
Every value is at 1M env steps over 10 seeds; the statistic is the maximum over training of
the 10-seed mean return, each seed's value the mean of 10 test episodes, +- one standard
deviation across seeds. Tianshou ran gym 0.17.3 with mujoco 2.0: HalfCheetah, Hopper,
Walker2d, Ant and Swimmer v3, Reacher and InvertedPendulum v2 (jaxrl runs today's v5 tasks).
"""

from __future__ import annotations

import dataclasses

SOURCE = "Tianshou's examples/mujoco README (1M env steps, 10 seeds, max over training of the mean)"
TASK_VERSIONS = {
    "HalfCheetah": "v3",
    "Hopper": "v3",
    "Walker2d": "v3",
    "Ant": "v3",
    "Swimmer": "v3",
    "Reacher": "v2",
    "InvertedPendulum": "v2",
}


@dataclasses.dataclass(frozen=True)
class Published:
    """One published cell: ``mean +- std`` across ``seeds`` seeds at ``env_steps``."""

    algo: str
    task: str
    mean: float
    std: float
    seeds: int = 10
    env_steps: int = 1_000_000

    def __str__(self) -> str:
        return f"{self.mean:g} +- {self.std:g}"


_TABLE: dict[str, dict[str, tuple[float, float]]] = {
    "HalfCheetah": {"trpo": (4471, 805), "npg": (3485, 717), "ddpg": (11719, 466)},
    "Hopper": {"trpo": (2046, 1038), "npg": (1915, 551), "ddpg": (2197, 972)},
    "Walker2d": {"trpo": (3827, 783), "npg": (2503, 963), "ddpg": (1401, 905)},
    "Ant": {"trpo": (2867, 708), "npg": (2358, 518), "ddpg": (990, 4)},
    "Swimmer": {"trpo": (40.9, 19.6), "npg": (31.5, 8.0), "ddpg": (144.1, 6.5)},
    "Reacher": {"trpo": (-5.1, 0.8), "npg": (-4.5, 0.5), "ddpg": (-3.3, 0.3)},
    "InvertedPendulum": {"trpo": (1000, 0), "npg": (1000, 0), "ddpg": (1000, 0)},
}


RANDOM_RETURNS: dict[str, float] = {
    "HalfCheetah": -267.71,
    "Hopper": 17.04,
    "Walker2d": 1.93,
    "Ant": -47.46,
    "Swimmer": 3.16,
    "Reacher": -42.88,
    "InvertedPendulum": 5.63,
}
"""The uniform random policy's mean return on each task's gymnasium v5 environment (100
episodes: ``benchmarks/random_scores.py``, ``benchmarks/results/random_scores.json``): the
zero of ``jaxrl compare --normalize tianshou`` (:mod:`jaxrl.studies.normalized`)."""


def tianshou_best(task: str) -> float | None:
    """The best of Tianshou's published 1M-step means on ``task`` (over its TRPO, NPG and
    DDPG), or None for a task not in its table."""
    cells = _TABLE.get(task)
    return None if cells is None else float(max(mean for mean, _ in cells.values()))


def task_of(env_id: str) -> str:
    """The MuJoCo task of a gymnasium id: ``"Hopper-v5"`` -> ``"Hopper"``."""
    return env_id.rsplit("-v", 1)[0]


def tianshou_mujoco(algo: str, env_id: str) -> Published | None:
    """Tianshou's published 1M-step result of ``algo`` on ``env_id``'s task (any version of a
    gymnasium MuJoCo id), or None where Tianshou published none (other tasks, Brax ids)."""
    if env_id.startswith("brax:"):
        return None
    task = task_of(env_id)
    cell = _TABLE.get(task, {}).get(algo)
    if cell is None:
        return None
    return Published(algo=algo, task=task, mean=float(cell[0]), std=float(cell[1]))


def published_tasks() -> tuple[str, ...]:
    """The seven tasks of Tianshou's table, in its order."""
    return tuple(_TABLE)

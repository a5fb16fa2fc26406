"""The host driver's timed TRPO run that ``host_throughput.py`` measures per backend and seed
count, and that ``host_breakdown.py`` and ``host_vs_raw.py`` take apart: its configuration
(:func:`run_config`) and one measurement in this process (:func:`measure`)."""

from __future__ import annotations

import time
from typing import Any

from common import loadavg

PRESET = "mujoco"


def run_config(env_id: str, backend: str, num_seeds: int, steps: int, eval_every: int) -> Any:
    """The run every configuration trains: the :data:`PRESET` preset's TRPO."""
    from jaxrl.config.run_config import RunConfig

    return RunConfig.from_preset(
        "trpo",
        env_id,
        PRESET,
        total_steps=steps,
        eval_every=eval_every,
        num_seeds=num_seeds,
        env_backend=backend,
    )


def measure(env_id: str, backend: str, num_seeds: int, steps: int, eval_every: int) -> dict:
    """One configuration, in this process."""
    from jaxrl.training.gymnasium_driver import train_gymnasium

    config = run_config(env_id, backend, num_seeds, steps, eval_every)
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    train_gymnasium(
        config.make_agent(),
        env_id,
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=steps,
        eval_every=eval_every,
        eval_episodes=10,
        num_seeds=num_seeds,
        normalize_obs=True,
        env_backend=backend,
        progress=lambda info: marks.append((info["env_steps"], time.perf_counter())),
    )
    total = time.perf_counter() - start
    (first_steps, first_time), (last_steps, last_time) = marks[0], marks[-1]
    return {
        "env": env_id,
        "backend": backend,
        "num_seeds": num_seeds,
        "env_steps_per_seed": last_steps,
        "first_period_s": first_time - start,
        "seconds": total,
        "env_steps_per_s": num_seeds * (last_steps - first_steps) / (last_time - first_time),
        "env_steps_per_s_incl_compile": num_seeds * last_steps / total,
        "loadavg": loadavg(),
    }

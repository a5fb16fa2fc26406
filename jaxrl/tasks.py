"""Names of the MuJoCo tasks, in gymnasium's and Brax's spellings: facts about environments
that both the presets (:mod:`jaxrl.config.presets`) and the environment adapters
(:mod:`jaxrl.envs`) use, kept below both so neither imports the other."""

from __future__ import annotations

MUJOCO_TASKS = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
)

# Brax's environments that model these tasks (``brax:NAME`` ids get the ``mujoco`` preset).
BRAX_MUJOCO_TASKS: dict[str, str] = {
    "ant": "Ant",
    "halfcheetah": "HalfCheetah",
    "hopper": "Hopper",
    "humanoid": "Humanoid",
    "humanoidstandup": "HumanoidStandup",
    "inverted_double_pendulum": "InvertedDoublePendulum",
    "inverted_pendulum": "InvertedPendulum",
    "pusher": "Pusher",
    "reacher": "Reacher",
    "swimmer": "Swimmer",
    "walker2d": "Walker2d",
}


def is_mujoco_id(env_id: str) -> bool:
    """Whether ``env_id`` names a MuJoCo task (``Hopper-v5``, ``HalfCheetah-v4``, ...)."""
    return env_id.rsplit("-v", 1)[0] in MUJOCO_TASKS

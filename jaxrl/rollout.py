"""The on-policy rollout: what NPG/TRPO ``update`` learns from."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any, NamedTuple

import jax
import numpy as np


class Rollout(NamedTuple):
    """A time-major segment of ``T`` steps from ``N`` parallel environments.

    Research code can build one by hand from any environment loop.

    Attributes:
      obs: ``[T, N, *obs_shape]`` observation at each step.
      action: the raw policy action taken (``agent.explore(...)[1].action``: before
        bounding and scaling), ``[T, N, action_dim]`` float for Box action spaces, ``[T, N]``
        int for Discrete ones.
      reward: ``[T, N]`` float.
      terminated: ``[T, N]`` bool; the episode reached a terminal state (no bootstrap).
      truncated: ``[T, N]`` bool; the episode was cut (time limit), bootstrap kept.
      next_obs: ``[T, N, *obs_shape]``, the observation after the step (for a step that ended
        an episode: the final observation of that episode, not the reset one).
    """

    obs: Any
    action: Any
    reward: Any
    terminated: Any
    truncated: Any
    next_obs: Any


_GUIDE = "see the research guide's \"A rollout's conventions\""


def check_time_major(
    rollout: Any, obs_shape: tuple[int, ...], action_shape: tuple[int, ...], discrete: bool
) -> tuple[int, int]:
    """Check a rollout's fields, shapes and dtypes; return ``(T, N)``.

    Raises ``TypeError``/``ValueError`` naming the offending field and what was expected.
    """
    if not isinstance(rollout, Rollout):
        has = rollout.__contains__ if isinstance(rollout, dict) else partial(hasattr, rollout)
        missing = [f for f in Rollout._fields if not has(f)]
        if missing:
            raise TypeError(f"rollout is missing field(s) {missing}; expected a jaxrl.Rollout")
        if isinstance(rollout, dict):
            raise TypeError("rollout must be a jaxrl.Rollout, got a dict: jaxrl.Rollout(**rollout)")
        rollout = Rollout(*(getattr(rollout, f) for f in Rollout._fields))
    reward_shape = np.shape(rollout.reward)
    if len(reward_shape) != 2:
        raise ValueError(
            f"rollout.reward must have shape [T, N] (time-major: T steps of N environments), "
            f"got {list(reward_shape)}; {_GUIDE}"
        )
    # (T, N) is what most well-formed fields lead with (rollout.reward's on a tie), so that
    # the field that differs is the one named.
    trailing = {
        "reward": (),
        "obs": obs_shape,
        "next_obs": obs_shape,
        "action": action_shape,
        "terminated": (),
        "truncated": (),
    }
    leading = {}
    for name, tail in trailing.items():
        shape = np.shape(getattr(rollout, name))
        if len(shape) == 2 + len(tail) and shape[2:] == tuple(tail):
            leading[name] = shape[:2]
    counts = Counter(leading.values())
    steps_envs = max(counts, key=lambda dims: (counts[dims], dims == reward_shape))
    expected = {name: steps_envs + tuple(tail) for name, tail in trailing.items()}
    rest = {"obs": "obs_shape", "next_obs": "obs_shape", "action": "action_shape"}
    for name, shape in expected.items():
        got = np.shape(getattr(rollout, name))
        if got != shape:
            layout = ", ".join(["T", "N", *([f"*{rest[name]}"] if name in rest else [])])
            agree = ", ".join(
                f"rollout.{other}"
                for other, dims in leading.items()
                if dims == steps_envs and other != name
            )
            raise ValueError(
                f"rollout.{name} must have shape {list(shape)}, got {list(got)}: fields are "
                f"time-major [{layout}] with T = {shape[0]} steps of N = {shape[1]} "
                f"environments, as {agree}; {_GUIDE}"
            )
    check_dtypes(
        "rollout",
        rollout,
        {
            "obs": "fiub",
            "next_obs": "fiub",
            "reward": "fiu",
            "terminated": "biu",
            "truncated": "biu",
            "action": "iu" if discrete else "f",
        },
    )
    return steps_envs


_KIND_NAMES = {"f": "float", "i": "int", "u": "unsigned int", "b": "bool"}


def check_dtypes(owner: str, container: Any, allowed: dict[str, str]) -> None:
    """Raise ``TypeError`` naming ``owner.field`` when a field's dtype kind (NumPy's
    ``dtype.kind`` letters) is not among the allowed ones."""
    for name, kinds in allowed.items():
        dtype = np.dtype(jax.numpy.result_type(getattr(container, name)))
        if dtype.kind not in kinds:
            expected = " or ".join(_KIND_NAMES[k] for k in kinds)
            raise TypeError(f"{owner}.{name} must have a {expected} dtype, got {dtype}")

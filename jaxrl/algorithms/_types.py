"""Types every algorithm shares."""

from __future__ import annotations

import jax
from flax import struct

Array = jax.Array


class ActionSample(struct.PyTreeNode):
    """``action``: the raw policy action (store it in rollouts); ``env_action``: bounded and
    scaled for the environment."""

    action: Array
    env_action: Array

"""jaxrl: functional JAX implementations of Tianshou's NPG, TRPO and DDPG."""

from jaxrl import core, replay
from jaxrl.algorithms import (
    DDPG,
    NPG,
    TRPO,
    ActionSample,
    DDPGState,
    GaussianNoise,
    OnPolicyBatch,
    OnPolicyState,
    OUNoise,
    load_plugin,
)
from jaxrl.replay import NStepBatch, ReplayBuffer, Transition
from jaxrl.rollout import Rollout

__version__ = "0.1.0"

__all__ = [
    "DDPG",
    "NPG",
    "TRPO",
    "ActionSample",
    "DDPGState",
    "GaussianNoise",
    "NStepBatch",
    "OUNoise",
    "OnPolicyBatch",
    "OnPolicyState",
    "ReplayBuffer",
    "Rollout",
    "Transition",
    "__version__",
    "core",
    "load_plugin",
    "replay",
]

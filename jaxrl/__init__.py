"""jaxrl: functional JAX implementations of Tianshou's NPG, TRPO and DDPG."""

from jaxrl import core
from jaxrl.algorithms import NPG, TRPO, ActionSample, OnPolicyState
from jaxrl.rollout import Rollout

__version__ = "0.1.0"

__all__ = ["NPG", "TRPO", "ActionSample", "OnPolicyState", "Rollout", "core", "__version__"]

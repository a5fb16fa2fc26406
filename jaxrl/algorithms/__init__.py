"""Algorithms composed from :mod:`jaxrl.core`, one module each."""

from jaxrl.algorithms.npg import NPG, ActionSample, OnPolicyState
from jaxrl.algorithms.trpo import TRPO

__all__ = ["NPG", "TRPO", "ActionSample", "OnPolicyState"]

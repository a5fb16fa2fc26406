"""Algorithms composed from :mod:`jaxrl.core`, one module each."""

from jaxrl.algorithms.ddpg import DDPG, DDPGState, GaussianNoise, OUNoise
from jaxrl.algorithms.npg import NPG, ActionSample, OnPolicyBatch, OnPolicyState
from jaxrl.algorithms.trpo import TRPO

__all__ = [
    "DDPG",
    "NPG",
    "TRPO",
    "ActionSample",
    "DDPGState",
    "GaussianNoise",
    "OUNoise",
    "OnPolicyBatch",
    "OnPolicyState",
]

"""Algorithms composed from :mod:`jaxrl.core`, one module each."""

from jaxrl.algorithms._types import ActionSample
from jaxrl.algorithms.ddpg import DDPG, DDPGState, GaussianNoise, OUNoise
from jaxrl.algorithms.natural_gradient import NaturalGradient, OnPolicyBatch, OnPolicyState
from jaxrl.algorithms.npg import NPG
from jaxrl.algorithms.trpo import TRPO

__all__ = [
    "DDPG",
    "NPG",
    "TRPO",
    "ActionSample",
    "DDPGState",
    "GaussianNoise",
    "NaturalGradient",
    "OUNoise",
    "OnPolicyBatch",
    "OnPolicyState",
]

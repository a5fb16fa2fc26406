"""Algorithms composed from :mod:`jaxrl.core`, one module each; the off-policy ones from
:mod:`jaxrl.algorithms.off_policy`. The field and check helpers below are for writing new
algorithms (``examples/td3.py``)."""

from jaxrl.algorithms._common import check_field, check_int_field, document_fields, hyperparameter
from jaxrl.algorithms._types import ActionSample
from jaxrl.algorithms.ddpg import DDPG, DDPGState, GaussianNoise, OUNoise
from jaxrl.algorithms.natural_gradient import NaturalGradient, OnPolicyBatch, OnPolicyState
from jaxrl.algorithms.npg import NPG
from jaxrl.algorithms.plugins import load_plugin
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
    "check_field",
    "check_int_field",
    "document_fields",
    "hyperparameter",
    "load_plugin",
]

"""Natural Policy Gradient (Kakade 2001), with Tianshou's semantics and defaults.

The update is :class:`jaxrl.algorithms.natural_gradient.NaturalGradient`'s; NPG's part is the
surrogate ``-mean(log_prob * advantage)`` and the step ``theta + trust_region_size * d`` along
the natural-gradient direction ``d = -F^-1 g`` (Tianshou's raw multiplier, no KL bound).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from optax import tree_utils as otu

from jaxrl.algorithms._common import accept_aliases, check_field, document_fields, hyperparameter
from jaxrl.algorithms._types import ActionSample
from jaxrl.algorithms.natural_gradient import (
    CG_RESIDUAL_TOL,
    RETURN_SCALING_EPS,
    TIANSHOU_1X_ALIASES,
    TRUST_REGION_PRECISION,
    ActorStep,
    NaturalGradient,
    OnPolicyBatch,
    OnPolicyState,
    minibatch_layout,
    weighted_mean,
)

__all__ = [
    "CG_RESIDUAL_TOL",
    "NPG",
    "RETURN_SCALING_EPS",
    "TRUST_REGION_PRECISION",
    "ActionSample",
    "OnPolicyBatch",
    "OnPolicyState",
    "minibatch_layout",
]

Array = jax.Array
PyTree = Any


@accept_aliases(TIANSHOU_1X_ALIASES)
@document_fields
class NPG(NaturalGradient):
    """Natural Policy Gradient: every :class:`NaturalGradient` field plus its step size.

    Tianshou 2.x names and defaults; the 1.x names ``actor_step_size``, ``discount_factor``,
    ``reward_normalization`` and ``lr_scheduler`` are accepted as keyword aliases.
    ``normalize_step`` goes beyond Tianshou (its default keeps Tianshou's behaviour).
    """

    trust_region_size: float = hyperparameter(
        0.5, "natural-gradient step multiplier (Tianshou: theta += size * d)"
    )
    normalize_step: bool = hyperparameter(
        False,
        "if True, scale the NPG step to sqrt(2 * trust_region_size / d.Fd), making "
        "trust_region_size a KL bound, as Tianshou's docstring describes (beyond Tianshou)",
        static=True,
    )

    def _check_leaves(self, owner: str) -> None:
        super()._check_leaves(owner)
        check_field(
            owner, "trust_region_size", self.trust_region_size, 0.0, math.inf, low_open=True
        )

    def _surrogate(self, log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
        """The vanilla policy-gradient loss ``-mean(log_prob * advantage)``."""
        return -weighted_mean(log_prob * minibatch.advantage, weights)

    def _step(self, step: ActorStep) -> tuple[PyTree, dict[str, Array]]:
        """``theta + trust_region_size * d`` (or the KL-normalized step)."""
        size = jnp.asarray(self.trust_region_size, jnp.float32)
        if self.normalize_step:
            size = step.step_length(size)
        return otu.tree_add_scale(step.params, size, step.direction), {}

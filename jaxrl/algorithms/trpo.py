"""Trust Region Policy Optimization (Schulman et al. 2015), with Tianshou's semantics.

Differs from NPG in the surrogate (importance ratio against collection-time log-probs) and the
step: ``beta = sqrt(2 max_kl / d.(F + damping I)d)`` followed by a backtracking line search
that accepts the first candidate with ``KL < max_kl`` and a strictly lower surrogate, and
restores the parameters when none is accepted (Tianshou 2.x).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from optax import tree_utils as otu

from jaxrl.algorithms._common import accept_aliases, check_field, check_int_field
from jaxrl.algorithms.npg import NPG, OnPolicyBatch, _weighted_mean
from jaxrl.core.stats import SummaryStats
from jaxrl.core.trust_region import backtracking_line_search

Array = jax.Array
PyTree = Any


@accept_aliases(
    {
        "actor_step_size": "trust_region_size",
        "discount_factor": "gamma",
        "reward_normalization": "return_scaling",
        "lr_scheduler": "lr_schedule",
    }
)
class TRPO(NPG):
    """Trust Region Policy Optimization; every NPG field plus:

    Learning (leaves):
      max_kl: KL bound of each actor step.
      backtrack_coeff: line-search shrink factor in (0, 1].
    Structure (static):
      max_backtracks: number of line-search candidates.

    ``trust_region_size`` is accepted for parity with Tianshou and ignored. Stats add
    ``step_size`` (SummaryStats; 0 for a failed line search), ``backtracks`` and
    ``line_search_failures``. ``kl`` is measured at the parameters kept after the step.
    """

    max_kl: float = 0.01
    backtrack_coeff: float = 0.8
    max_backtracks: int = struct.field(pytree_node=False, default=10)

    def _check_leaves(self, owner: str) -> None:
        super()._check_leaves(owner)
        check_field(owner, "max_kl", self.max_kl, 0.0, math.inf, low_open=True)
        check_field(owner, "backtrack_coeff", self.backtrack_coeff, 0.0, 1.0, low_open=True)
        check_int_field(owner, "max_backtracks", self.max_backtracks, 1)

    def _surrogate(self, log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
        ratio = jnp.exp(log_prob - minibatch.log_prob_old)
        return -_weighted_mean(ratio * minibatch.advantage, weights)

    def _step(
        self,
        params: PyTree,
        direction: PyTree,
        fvp: Callable,
        loss: Array,
        surrogate: Callable,
        mean_kl: Callable,
    ) -> tuple[PyTree, dict[str, Array]]:
        curvature = otu.tree_vdot(direction, fvp(direction))
        usable = jnp.isfinite(curvature) & (curvature > 0)
        # Non-positive curvature (or a zero direction) gives beta = 0: no candidate can
        # strictly improve the loss, so the line search fails and restores the parameters.
        beta = jnp.where(
            usable, jnp.sqrt(2.0 * self.max_kl / jnp.where(usable, curvature, 1.0)), 0.0
        )

        def acceptable(candidate: PyTree) -> Array:
            return (mean_kl(candidate) < self.max_kl) & (surrogate(candidate) < loss)

        search = backtracking_line_search(
            acceptable, params, direction, beta, self.backtrack_coeff, self.max_backtracks
        )
        return search.params, {
            "step_size": search.step_size,
            "backtracks": jnp.where(search.accepted, search.index, 0),
            "line_search_failed": (~search.accepted).astype(jnp.int32),
        }

    def _summarize(self, per_step: dict[str, Array]) -> dict[str, Any]:
        stats = super()._summarize(per_step)
        stats["step_size"] = SummaryStats.from_sequence(per_step["step_size"])
        stats["backtracks"] = jnp.sum(per_step["backtracks"])
        stats["line_search_failures"] = jnp.sum(per_step["line_search_failed"])
        return stats

"""Trust Region Policy Optimization (Schulman et al. 2015), with Tianshou's semantics.

Differs from NPG in the surrogate (importance ratio against collection-time log-probs) and the
step: ``beta = sqrt(2 max_kl / d.(F + damping I)d)`` followed by a backtracking line search
that accepts the first candidate with ``KL < max_kl`` and a strictly lower surrogate, and
restores the parameters when none is accepted (Tianshou 2.x).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.algorithms._common import (
    accept_aliases,
    check_field,
    check_int_field,
    document_fields,
    hyperparameter,
)
from jaxrl.algorithms.natural_gradient import (
    TIANSHOU_1X_ALIASES,
    ActorStep,
    NaturalGradient,
    OnPolicyBatch,
    weighted_mean,
)
from jaxrl.core.stats import SummaryStats
from jaxrl.core.trust_region import backtracking_line_search

Array = jax.Array
PyTree = Any


@accept_aliases(
    TIANSHOU_1X_ALIASES,
    ignored={
        "trust_region_size": "TRPO's step is set by max_kl and the line search "
        "(Tianshou's TRPO takes it and does not use it either)",
    },
)
@document_fields
class TRPO(NaturalGradient):
    """Trust Region Policy Optimization: the :class:`NaturalGradient` update with TRPO's
    surrogate and a KL-bounded step (``max_kl``, ``backtrack_coeff``, ``max_backtracks``).

    ``trust_region_size`` (and its 1.x name ``actor_step_size``) is accepted for parity with
    Tianshou and ignored, with a warning. Stats add
    ``step_size`` (SummaryStats; 0 for a failed line search), ``backtracks`` and
    ``line_search_failures``. ``kl`` is measured at the parameters kept after the step.
    """

    max_kl: float = hyperparameter(0.01, "KL bound of each actor step")
    backtrack_coeff: float = hyperparameter(0.8, "line-search shrink factor in (0, 1]")
    max_backtracks: int = hyperparameter(10, "number of line-search candidates", static=True)

    def _check_leaves(self, owner: str) -> None:
        super()._check_leaves(owner)
        check_field(owner, "max_kl", self.max_kl, 0.0, math.inf, low_open=True)
        check_field(owner, "backtrack_coeff", self.backtrack_coeff, 0.0, 1.0, low_open=True)
        check_int_field(owner, "max_backtracks", self.max_backtracks, 1)

    def _surrogate(self, log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
        ratio = jnp.exp(log_prob - minibatch.log_prob_old)
        return -weighted_mean(ratio * minibatch.advantage, weights)

    def _step(self, step: ActorStep) -> tuple[PyTree, dict[str, Array]]:
        """``beta = sqrt(2 max_kl / d.(F + damping I)d)``, then the line search over
        ``theta + beta * backtrack_coeff^i * d``."""
        # Non-positive curvature (or a zero direction) gives beta = 0: no candidate can
        # strictly improve the loss, so the line search fails and restores the parameters.
        beta = step.step_length(self.max_kl)

        def acceptable(candidate: PyTree) -> tuple[Array, Array]:
            kl = step.mean_kl(candidate)
            return (kl < self.max_kl) & (step.surrogate(candidate) < step.loss), kl

        search = backtracking_line_search(
            acceptable,
            step.params,
            step.direction,
            beta,
            self.backtrack_coeff,
            self.max_backtracks,
            has_aux=True,
        )
        return search.params, {
            # The KL at the kept parameters: the accepted candidate's, or 0 when the search
            # fails and the parameters stay (KL(pi || pi) = 0 exactly).
            "kl": jnp.where(search.accepted, search.aux, 0.0),
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

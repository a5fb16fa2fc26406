"""Trust Region Policy Optimization (Schulman et al. 2015), with Tianshou's semantics.

TRPO is the :class:`jaxrl.algorithms.natural_gradient.NaturalGradient` update with the rule
:func:`trpo_rule`: the importance-ratio surrogate against the collection-time
log-probabilities, and the step ``beta = sqrt(2 max_kl / d.(F + damping I)d)`` followed by a
backtracking line search that accepts the first candidate with ``KL < max_kl`` and a strictly
lower surrogate, and restores the parameters when none is accepted (Tianshou 2.x).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxrl.algorithms._common import (
    accept_aliases,
    document_fields,
    hyperparameter,
)
from jaxrl.algorithms.natural_gradient import TIANSHOU_1X_ALIASES, NaturalGradient
from jaxrl.algorithms.natural_step import ActorRule, ActorStep, StepResult, importance_surrogate
from jaxrl.core.trust_region import backtracking_line_search


def trpo_rule(
    max_kl: float | jax.Array, backtrack_coeff: float | jax.Array = 0.8, max_backtracks: int = 10
) -> ActorRule:
    """TRPO's actor rule: the importance-ratio surrogate and a KL-bounded step.

    The step tries ``theta + beta * backtrack_coeff^i * d`` for ``i < max_backtracks``, with
    ``beta = sqrt(2 max_kl / d.(F + damping I)d)``, and keeps the first candidate whose KL is
    below ``max_kl`` and whose surrogate is strictly lower; none kept leaves ``theta``. The
    step's KL is the accepted candidate's (0 when none is), and its line search joins the
    update's stats (``step_size``, ``backtracks``, ``line_search_failures``)."""

    def step(actor: ActorStep) -> StepResult:
        # Non-positive curvature (or a zero direction) gives beta = 0: no candidate can
        # strictly improve the loss, so the line search fails and restores the parameters.
        beta = actor.step_length(max_kl)

        def acceptable(candidate: object) -> tuple[jax.Array, jax.Array]:
            kl = actor.mean_kl(candidate)
            return (kl < max_kl) & (actor.surrogate(candidate) < actor.loss), kl

        search = backtracking_line_search(
            acceptable,
            actor.params,
            actor.direction,
            beta,
            backtrack_coeff,
            max_backtracks,
            has_aux=True,
        )
        # KL(pi || pi) = 0 exactly where the search fails and the parameters stay.
        return StepResult(search.params, jnp.where(search.accepted, search.aux, 0.0), search)

    return ActorRule(importance_surrogate, step)


@accept_aliases(
    TIANSHOU_1X_ALIASES,
    ignored={
        "trust_region_size": "TRPO's step is set by max_kl and the line search "
        "(Tianshou's TRPO takes it and does not use it either)",
    },
)
@document_fields
class TRPO(NaturalGradient):
    """Trust Region Policy Optimization: the :class:`~jaxrl.algorithms.NaturalGradient`
    update with TRPO's surrogate and a KL-bounded step (``max_kl``, ``backtrack_coeff``,
    ``max_backtracks``).

    ``trust_region_size`` (and its 1.x name ``actor_step_size``) is accepted for parity with
    Tianshou and ignored, with a warning. Stats add
    ``step_size`` (SummaryStats; 0 for a failed line search), ``backtracks`` and
    ``line_search_failures``. ``kl`` is measured at the parameters kept after the step.
    """

    max_kl: float = hyperparameter(0.01, "KL bound of each actor step", low=0.0, low_open=True)
    backtrack_coeff: float = hyperparameter(
        0.8, "line-search shrink factor in (0, 1]", low=0.0, high=1.0, low_open=True
    )
    max_backtracks: int = hyperparameter(10, "number of line-search candidates", static=True, low=1)

    def update_loops(self, batch: int) -> dict[str, int]:
        """The natural-gradient update's loop bounds and the line search's candidates."""
        loops = super().update_loops(batch)
        return {**loops, "line-search candidates per actor step": self.max_backtracks}

    def actor_rule(self) -> ActorRule:
        """:func:`~jaxrl.algorithms.trpo_rule` with this object's KL bound and line search."""
        return trpo_rule(self.max_kl, self.backtrack_coeff, self.max_backtracks)

"""Natural Policy Gradient (Kakade 2001), with Tianshou's semantics and defaults.

NPG is the :class:`jaxrl.algorithms.natural_gradient.NaturalGradient` update with the rule
:func:`npg_rule`: the surrogate ``-mean(log_prob * advantage)`` and the step
``theta + trust_region_size * d`` along the natural-gradient direction ``d = -F^-1 g``
(Tianshou's raw multiplier, no KL bound).
"""

from __future__ import annotations

import jax.numpy as jnp
from optax import tree_utils as otu

from jaxrl.algorithms._common import accept_aliases, document_fields, hyperparameter
from jaxrl.algorithms.natural_gradient import TIANSHOU_1X_ALIASES, NaturalGradient
from jaxrl.algorithms.natural_step import (
    ActorRule,
    ActorStep,
    StepResult,
    policy_gradient_surrogate,
)


def npg_rule(trust_region_size: float, normalize_step: bool = False) -> ActorRule:
    """NPG's actor rule: the policy-gradient surrogate and the step
    ``theta + trust_region_size * d``, or with ``normalize_step`` the step of KL
    ``trust_region_size`` under the KL's quadratic model (``sqrt(2 size / d.Fd) * d``)."""

    def step(actor: ActorStep) -> StepResult:
        size = jnp.asarray(trust_region_size, jnp.float32)
        if normalize_step:
            size = actor.step_length(size)
        return StepResult(otu.tree_add_scale(actor.params, size, actor.direction))

    return ActorRule(policy_gradient_surrogate, step)


@accept_aliases(TIANSHOU_1X_ALIASES)
@document_fields
class NPG(NaturalGradient):
    """Natural Policy Gradient: every :class:`~jaxrl.algorithms.NaturalGradient` field plus
    its step size.

    Tianshou 2.x names and defaults; the 1.x names ``actor_step_size``, ``discount_factor``,
    ``reward_normalization`` and ``lr_scheduler`` are accepted as keyword aliases.
    ``normalize_step`` goes beyond Tianshou (its default keeps Tianshou's behaviour).
    """

    trust_region_size: float = hyperparameter(
        0.5,
        "natural-gradient step multiplier (Tianshou: theta += size * d)",
        low=0.0,
        low_open=True,
    )
    normalize_step: bool = hyperparameter(
        False,
        "if True, scale the NPG step to sqrt(2 * trust_region_size / d.Fd), making "
        "trust_region_size a KL bound, as Tianshou's docstring describes (beyond Tianshou)",
        static=True,
    )

    def actor_rule(self) -> ActorRule:
        """:func:`~jaxrl.algorithms.npg_rule` with this object's step size."""
        return npg_rule(self.trust_region_size, self.normalize_step)

"""The natural-gradient actor step NPG and TRPO share, and the rule that sets them apart.

An actor step on a minibatch (:func:`actor_step`): the surrogate's loss and gradient ``g``
from one linearization of the policy (:func:`surrogate_gradient`), the damped Fisher-vector
product in Gauss-Newton form (:func:`fisher_product`), the direction
``d = -(F + damping I)^-1 g`` by conjugate gradients (:func:`natural_direction`), the
algorithm's step along ``d``, and the guard that refuses a non-finite step
(:func:`guard_step`). The algorithm's part is a value, an :class:`ActorRule`: its surrogate
and its step (:func:`~jaxrl.algorithms.npg_rule`, :func:`~jaxrl.algorithms.trpo_rule`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from optax import tree_utils as otu

from jaxrl.algorithms.on_policy import OnPolicyBatch, weighted_mean
from jaxrl.core import distributions
from jaxrl.core.stats import SummaryStats
from jaxrl.core.tree import all_finite, tree_select
from jaxrl.core.trust_region import (
    ConjugateGradientResult,
    LineSearchResult,
    conjugate_gradient,
    make_gauss_newton_vector_product,
)

Array = jax.Array
PyTree = Any

CG_RESIDUAL_TOL = 1e-10  # Tianshou's conjugate-gradient tolerance
# Matmul precision of the natural-gradient step (gradient, Fisher-vector products, conjugate
# gradients, KL checks): float32 on every backend, not GPUs' default TF32. Critic steps and
# acting keep the backend's default.
TRUST_REGION_PRECISION = "float32"


# ---------------------------------------------------------------------------------------------
# The actor rule: what NPG and TRPO do differently
# ---------------------------------------------------------------------------------------------


class ActorStep(NamedTuple):
    """What a rule's step along the natural-gradient direction starts from.

    Attributes:
      params: the actor's parameters ``theta``.
      direction: the natural-gradient direction ``d = -F^-1 g`` (a pytree like ``params``).
      fvp: ``v -> (F + damping I) v``, the damped Fisher-vector product at ``theta``.
      curvature: ``d.(F + damping I)d``, from conjugate gradients' residual (no extra product).
      loss: the surrogate at ``theta``.
      surrogate: ``params -> loss`` on the minibatch.
      mean_kl: ``params -> mean KL(pi_theta || pi_params)`` on the minibatch.
    """

    params: PyTree
    direction: PyTree
    fvp: Callable[[PyTree], PyTree]
    curvature: Array
    loss: Array
    surrogate: Callable[[PyTree], Array]
    mean_kl: Callable[[PyTree], Array]

    def step_length(self, kl_bound: float | Array) -> Array:
        """``sqrt(2 kl_bound / d.(F + damping I)d)``: the multiple of ``d`` at which the KL's
        quadratic model reaches ``kl_bound``; 0 for a non-positive or non-finite curvature
        (a zero direction included), so that no step is taken."""
        usable = jnp.isfinite(self.curvature) & (self.curvature > 0)
        safe = jnp.where(usable, self.curvature, 1.0)
        return jnp.where(usable, jnp.sqrt(2.0 * kl_bound / safe), 0.0)


class StepResult(NamedTuple):
    """A rule's step: the new parameters and what the step measured on the way.

    Attributes:
      params: the actor's new parameters.
      kl: the KL at ``params`` where the step measured it (TRPO's line search judged its
        candidate by it); None: :func:`~jaxrl.algorithms.natural_step.actor_step` measures it.
      line_search: the :class:`jaxrl.core.trust_region.LineSearchResult` of a step that
        searched (its step size, backtracks and failures join the update's stats); None
        for a fixed step.
    """

    params: PyTree
    kl: Array | None = None
    line_search: LineSearchResult | None = None


Surrogate = Callable[[Array, OnPolicyBatch, Array], Array]


class ActorRule(NamedTuple):
    """An algorithm's actor update, as a value: the surrogate loss and the step along the
    natural-gradient direction (optax's way: a rule is a value, not a subclass).

    Attributes:
      surrogate: ``(log_prob [S], minibatch, weights [S]) -> loss``, the actor's loss on a
        minibatch from its log-probabilities of the collected actions.
      step: ``ActorStep -> StepResult``, the parameters taken along the direction.
    """

    surrogate: Surrogate
    step: Callable[[ActorStep], StepResult]


def policy_gradient_surrogate(log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
    """The vanilla policy-gradient loss ``-mean(log_prob * advantage)`` (NPG's)."""
    return -weighted_mean(log_prob * minibatch.advantage, weights)


def importance_surrogate(log_prob: Array, minibatch: OnPolicyBatch, weights: Array) -> Array:
    """``-mean(ratio * advantage)``, ``ratio = exp(log_prob - log_prob_old)`` (TRPO's)."""
    ratio = jnp.exp(log_prob - minibatch.log_prob_old)
    return -weighted_mean(ratio * minibatch.advantage, weights)


# ---------------------------------------------------------------------------------------------
# The actor
# ---------------------------------------------------------------------------------------------


def actor_step(
    rule: ActorRule,
    actor_apply: Callable,
    params: PyTree,
    minibatch: OnPolicyBatch,
    weights: Array,
    key: Array,
    *,
    damping: float | Array,
    cg_iters: int,
    fvp_batch_size: int | None,
) -> tuple[PyTree, dict[str, Array]]:
    """One natural-gradient actor step on a minibatch (trace it at
    ``TRUST_REGION_PRECISION``).

    The surrogate's loss and gradient ``g`` at ``theta = params`` (:func:`surrogate_gradient`),
    the Fisher-vector product (:func:`fisher_product`; on a subsample of ``fvp_batch_size``
    drawn with ``key`` if set), the direction ``d`` by ``cg_iters`` conjugate-gradient
    iterations (:func:`natural_direction`), ``rule.step`` along it, and the guard against a
    non-finite step (:func:`guard_step`). ``weights [S]`` mask the minibatch's padding.

    Returns:
      ``(params, stats)``: the kept parameters and scalars ``actor_loss``, ``kl`` (at the kept
      parameters), ``cg_residual``, ``cg_iterations``, ``rejected`` and, for a rule that
      searched, ``step_size``, ``backtracks`` and ``line_search_failed``.
    """

    def surrogate_at(dist: distributions.DistributionParams) -> Array:
        return rule.surrogate(distributions.log_prob(dist, minibatch.action), minibatch, weights)

    def policy(p: PyTree) -> distributions.DistributionParams:
        return actor_apply(p, minibatch.obs)

    def surrogate(p: PyTree) -> Array:
        return surrogate_at(policy(p))

    linearized, old_dist, loss, grad = surrogate_gradient(policy, surrogate_at, params)

    def mean_kl(p: PyTree) -> Array:
        return weighted_mean(distributions.kl_divergence(old_dist, policy(p)), weights)

    fvp = fisher_product(
        actor_apply,
        params,
        minibatch.obs,
        old_dist,
        weights,
        key,
        linearized,
        damping=damping,
        subsample=fvp_batch_size,
    )
    cg, direction, curvature = natural_direction(fvp, grad, cg_iters)
    result = rule.step(ActorStep(params, direction, fvp, curvature, loss, surrogate, mean_kl))
    return guard_step(params, result, loss, grad, cg, mean_kl)


def surrogate_gradient(
    policy: Callable[[PyTree], distributions.DistributionParams],
    surrogate_at: Callable[[distributions.DistributionParams], Array],
    params: PyTree,
) -> tuple[tuple[Any, Callable], distributions.DistributionParams, Array, PyTree]:
    """``(linearized, old_dist, loss, grad)``: ``policy`` linearized at ``params`` (its
    outputs and ``J``, :func:`jax.linearize`), its outputs held fixed (``old_dist``), the
    surrogate's loss there and its gradient in ``params`` (a pytree like ``params``).

    One linearization of the policy at theta serves three purposes: its outputs are the old
    distribution, its transpose takes the surrogate's gradient from the gradient in the
    distribution's parameters (the chain rule, as ``jax.grad`` of the surrogate would), and it
    is the ``J`` of the Fisher-vector products. One forward pass, not three."""
    linearized = jax.linearize(policy, params)
    old_dist = jax.lax.stop_gradient(linearized[0])
    loss, dist_grad = jax.value_and_grad(surrogate_at)(old_dist)
    (grad,) = jax.linear_transpose(linearized[1], params)(dist_grad)
    return linearized, old_dist, loss, grad


def fisher_product(
    actor_apply: Callable,
    params: PyTree,
    obs: Array,
    old_dist: distributions.DistributionParams,
    weights: Array,
    key: Array,
    linearized: tuple[Any, Callable],
    *,
    damping: float | Array,
    subsample: int | None,
) -> Callable[[PyTree], PyTree]:
    """``v -> (F + damping I) v`` at ``params`` on the minibatch ``obs [S, ...]`` (with
    ``old_dist`` the policy's outputs there and ``weights [S]``), or on a subsample of
    ``subsample`` of its samples (drawn with ``key`` in proportion to ``weights``).

    The product is in Gauss-Newton form: ``J^T M J v`` with ``J`` the Jacobian of the
    distribution parameters in ``theta`` and ``M`` the KL's Hessian in those parameters.
    This is the Hessian of the mean KL at ``theta_old`` (what Tianshou differentiates
    twice), for about half the cost per conjugate-gradient iteration. On the whole
    minibatch it reuses ``linearized`` (:func:`surrogate_gradient`'s) as its ``J``."""
    fvp_obs, fvp_old, fvp_weights = obs, old_dist, weights
    subsampled = subsample is not None and subsample < weights.shape[0]
    if subsampled:
        subset = jax.random.choice(
            key, weights.shape[0], (subsample,), replace=False, p=weights / jnp.sum(weights)
        )
        fvp_obs = fvp_obs[subset]
        fvp_old = jax.tree_util.tree_map(lambda x: x[subset], old_dist)
        fvp_weights = jnp.ones((subsample,), weights.dtype)

    def output_kl(dist: distributions.DistributionParams) -> Array:
        return weighted_mean(distributions.kl_divergence(fvp_old, dist), fvp_weights)

    return make_gauss_newton_vector_product(
        lambda p: actor_apply(p, fvp_obs),
        output_kl,
        params,
        damping,
        linearized=None if subsampled else linearized,
    )


def natural_direction(
    fvp: Callable[[PyTree], PyTree], grad: PyTree, cg_iters: int
) -> tuple[ConjugateGradientResult, PyTree, Array]:
    """``(cg, direction, curvature)``: conjugate gradients' solution of ``(F + damping I) x =
    g`` (:func:`jaxrl.core.conjugate_gradient`, with its residual and
    iterations), the direction ``d = -x`` and ``d.(F + damping I)d`` (a scalar).

    The curvature needs no other Fisher-vector product: CG tracks the residual
    ``r = g - (F + damping I) x``, and ``d = -x``, so ``d.(F + damping I)d = x.(g - r)``."""
    cg = conjugate_gradient(fvp, grad, cg_iters, CG_RESIDUAL_TOL)
    direction = otu.tree_scale(-1.0, cg.x)
    curvature = otu.tree_vdot(cg.x, otu.tree_sub(grad, cg.residual))
    return cg, direction, curvature


def guard_step(
    params: PyTree,
    result: StepResult,
    loss: Array,
    grad: PyTree,
    cg: ConjugateGradientResult,
    mean_kl: Callable[[PyTree], Array],
) -> tuple[PyTree, dict[str, Array]]:
    """The parameters an actor step keeps and its stats (scalars): a non-finite loss,
    gradient or step (NaN/inf anywhere) is refused, the parameters stay ``params`` and the
    refusal is counted in ``rejected``. The KL at the kept parameters is the step's own
    measure of it where it has one, else ``mean_kl`` of them; 0 for a refused step."""
    finite = jnp.isfinite(loss) & all_finite(grad) & all_finite(result.params)
    new_params = tree_select(finite, result.params, params)
    kl = result.kl if result.kl is not None else mean_kl(new_params)
    stats = {
        "actor_loss": loss,
        "kl": jnp.where(finite, kl, 0.0),
        "cg_residual": cg.residual_sq,
        "cg_iterations": cg.iterations.astype(jnp.float32),
        "rejected": (~finite).astype(jnp.int32),
    }
    search = result.line_search
    if search is not None:
        stats["step_size"] = search.step_size
        stats["backtracks"] = jnp.where(search.accepted, search.index, 0)
        stats["line_search_failed"] = (~search.accepted).astype(jnp.int32)
    return new_params, stats


def summarize_steps(per_step: dict[str, Array]) -> dict[str, Any]:
    """An update's stats from its actor steps' ``[K]``: SummaryStats of the losses, KL and
    CG's work, totals of the refusals and, after a line search, its step sizes, backtracks
    and failures."""
    stats: dict[str, Any] = {
        name: SummaryStats.from_sequence(per_step[name])
        for name in ("actor_loss", "critic_loss", "kl", "cg_residual", "cg_iterations")
    }
    stats["rejected_steps"] = jnp.sum(per_step["rejected"])
    if "step_size" in per_step:
        stats["step_size"] = SummaryStats.from_sequence(per_step["step_size"])
        stats["backtracks"] = jnp.sum(per_step["backtracks"])
        stats["line_search_failures"] = jnp.sum(per_step["line_search_failed"])
    return stats

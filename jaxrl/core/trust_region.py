"""Second-order pieces of natural-gradient methods: Fisher-vector products, conjugate
gradients and a backtracking line search. All work on parameter pytrees and run under
``jit`` and ``vmap``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.flatten_util import ravel_pytree
from optax import tree_utils as otu

from jaxrl.core._checks import check_in_range, check_like
from jaxrl.core.tree import tree_select

Array = jax.Array
PyTree = Any


def make_fisher_vector_product(
    kl_fn: Callable[[PyTree], Array], params: PyTree, damping: float | Array = 0.1
) -> Callable[[PyTree], PyTree]:
    """Linearize the KL's gradient once and return ``v -> (H + damping I) v``.

    ``H`` is the Hessian of ``kl_fn`` at ``params``. With ``kl_fn(theta)`` the mean
    ``KL(pi_old || pi_theta)`` and ``pi_old`` held fixed at ``params``, ``H`` is the Fisher
    information matrix of the policy. The product is forward-over-reverse differentiation
    (``jax.linearize`` of ``jax.grad``, the partial evaluation of ``jax.jvp``): the forward and
    backward passes are traced once and each product afterwards costs one linear pass; the
    matrix is never formed. Use this inside conjugate gradients, where the same ``H`` is
    applied many times.

    Args:
      kl_fn: scalar function of the parameters.
      params: the point ``theta_old`` where the Hessian is taken (any pytree of arrays).
      damping: Tikhonov damping added to the product (Tianshou: 0.1).

    Returns:
      A function mapping a pytree ``v`` shaped like ``params`` to ``H v + damping * v``.
    """
    check_in_range("damping", damping, 0.0, float("inf"))
    _, hessian_vector_product = jax.linearize(jax.grad(kl_fn), params)

    def product(vector: PyTree) -> PyTree:
        return otu.tree_add_scale(hessian_vector_product(vector), damping, vector)

    return product


def make_gauss_newton_vector_product(
    model_fn: Callable[[PyTree], PyTree],
    output_kl_fn: Callable[[PyTree], Array],
    params: PyTree,
    damping: float | Array = 0.1,
    *,
    linearized: tuple[PyTree, Callable[[PyTree], PyTree]] | None = None,
) -> Callable[[PyTree], PyTree]:
    """``v -> (J^T M J + damping I) v``: the Fisher-vector product in Gauss-Newton form.

    With ``z = model_fn(theta)`` the policy's distribution parameters (e.g. the Gaussian's mean
    and log-std for every observation) and ``output_kl_fn(z)`` the mean ``KL(pi_old || pi_z)``
    with ``pi_old`` fixed at ``z_old = model_fn(params)``, the KL's Hessian at ``params`` is
    ``J^T M J``: ``J = dz/dtheta`` and ``M`` the KL's Hessian in ``z`` (the Fisher matrix of
    the distribution). The other term of the chain rule, ``sum_k dKL/dz_k d2z_k/dtheta2``,
    vanishes there because the KL is minimal (zero gradient) at ``z_old``. So at ``params``
    this equals :func:`make_fisher_vector_product` of ``output_kl_fn(model_fn(.))`` up to
    rounding, and costs less: each product is one linearized forward pass of ``model_fn``
    (``J v``), an elementwise product in ``z`` (``M u``, itself a forward-over-reverse product
    of the cheap ``output_kl_fn``) and one transposed pass (``J^T w``), instead of the
    linearized forward *and* backward passes of the KL's gradient.

    Args:
      model_fn: ``theta -> z``, any pytree of arrays.
      output_kl_fn: ``z -> scalar``, minimal (zero gradient) at ``model_fn(params)``.
      params: the point ``theta_old`` (any pytree of arrays).
      damping: Tikhonov damping added to the product (Tianshou: 0.1).
      linearized: optionally ``jax.linearize(model_fn, params)``, already computed by the
        caller (e.g. to take the loss's gradient from the same forward pass); ``model_fn``
        is then not evaluated again.

    Returns:
      A function mapping a pytree ``v`` shaped like ``params`` to ``J^T M J v + damping * v``.
    """
    check_in_range("damping", damping, 0.0, float("inf"))
    outputs, jacobian_vector_product = linearized or jax.linearize(model_fn, params)
    transpose = jax.linear_transpose(jacobian_vector_product, params)
    _, output_hessian_product = jax.linearize(jax.grad(output_kl_fn), outputs)

    def product(vector: PyTree) -> PyTree:
        (gauss_newton,) = transpose(output_hessian_product(jacobian_vector_product(vector)))
        return otu.tree_add_scale(gauss_newton, damping, vector)

    return product


def fisher_vector_product(
    kl_fn: Callable[[PyTree], Array],
    params: PyTree,
    vector: PyTree,
    damping: float | Array = 0.1,
) -> PyTree:
    """One damped Fisher-vector product ``(H + damping I) v``, ``H = Hessian of kl_fn at params``.

    Computed as ``jax.jvp(jax.grad(kl_fn), (params,), (vector,))``: an exact Hessian-vector
    product at the cost of about two gradient evaluations, never forming ``H``. See
    :func:`make_fisher_vector_product` for the repeated-product form.

    Args:
      kl_fn: scalar function of the parameters, e.g. mean ``KL(pi_old || pi_theta)``.
      params: pytree ``theta_old``.
      vector: pytree shaped like ``params``.
      damping: non-negative damping (Tianshou: 0.1).

    Returns:
      A pytree shaped like ``params``.
    """
    check_in_range("damping", damping, 0.0, float("inf"))
    check_like("vector", vector, "params", params)
    _, hessian_vector_product = jax.jvp(jax.grad(kl_fn), (params,), (vector,))
    return otu.tree_add_scale(hessian_vector_product, damping, vector)


class ConjugateGradientResult(NamedTuple):
    """Output of :func:`conjugate_gradient`.

    Attributes:
      x: the approximate solution, shaped like ``b``.
      residual_sq: ``r . r`` for the returned ``x``, ``r = b - A x``.
      iterations: the number of iterations that updated ``x``.
      converged: whether ``r . r < residual_tol`` was reached.
      residual: ``r`` itself, shaped like ``b``, as CG's recurrence tracks it (equal to
        ``b - A x`` up to rounding). ``A x = b - r`` comes with it, so ``x . A x`` (e.g. TRPO's
        step length) needs no further product with ``A``.
    """

    x: PyTree
    residual_sq: Array
    iterations: Array
    converged: Array
    residual: PyTree


def conjugate_gradient(
    matvec: Callable[[PyTree], PyTree],
    b: PyTree,
    max_iters: int | Array = 10,
    residual_tol: float | Array = 1e-10,
) -> ConjugateGradientResult:
    """Solve ``A x = b`` for symmetric positive-definite ``A`` given only ``v -> A v``.

    Standard CG from ``x0 = 0`` (Tianshou's ``_conjugate_gradients``): at most ``max_iters``
    iterations, stopping once ``r . r < residual_tol`` (Tianshou: 10 and 1e-10). Works on any
    pytree ``b``. It never produces NaN: when ``b = 0`` it returns ``x = 0`` without iterating,
    and when a search direction has non-positive or non-finite curvature ``p . A p`` (``A`` not
    positive definite) it stops and returns the last good iterate. Under ``vmap`` every lane
    runs as long as the slowest one, with finished lanes masked.

    Args:
      matvec: the linear map ``v -> A v`` on pytrees shaped like ``b``.
      b: right-hand side pytree.
      max_iters: maximum number of iterations (may be traced).
      residual_tol: threshold on the squared residual norm.

    Returns:
      A :class:`ConjugateGradientResult`.
    """
    check_in_range("max_iters", max_iters, 0, float("inf"))
    check_in_range("residual_tol", residual_tol, 0.0, float("inf"))
    # CG runs on one flat vector: a handful of vector ops per iteration instead of a few per
    # leaf, which XLA compiles (and runs) faster.
    tree = b
    b, unravel = ravel_pytree(b)

    def flat_matvec(v: Array) -> Array:
        product = matvec(unravel(v))
        check_like("matvec(v)", product, "b", tree)
        return ravel_pytree(product)[0]

    x = jnp.zeros_like(b)
    rdotr = jnp.vdot(b, b)
    converged = (rdotr < residual_tol) | (rdotr == 0)
    init = (x, b, b, rdotr, jnp.asarray(0), converged, ~jnp.isfinite(rdotr) | converged)

    def keep_going(state: tuple) -> Array:
        *_, iteration, _, stopped = state
        return (~stopped) & (iteration < max_iters)

    def iterate(state: tuple) -> tuple:
        x, r, p, rdotr, iteration, _, _ = state
        ap = flat_matvec(p)
        curvature = jnp.vdot(p, ap)
        usable = jnp.isfinite(curvature) & (curvature > 0)
        alpha = jnp.where(usable, rdotr / jnp.where(usable, curvature, 1.0), 0.0)
        new_x = x + alpha * p
        new_r = r - alpha * ap
        new_rdotr = jnp.vdot(new_r, new_r)
        usable = usable & jnp.isfinite(new_rdotr)
        beta = new_rdotr / jnp.where(rdotr > 0, rdotr, 1.0)
        new_p = new_r + beta * p
        x, r, p, rdotr = otu.tree_where(usable, (new_x, new_r, new_p, new_rdotr), (x, r, p, rdotr))
        converged = usable & (new_rdotr < residual_tol)
        return x, r, p, rdotr, iteration + usable, converged, converged | ~usable

    x, r, _, rdotr, iterations, converged, _ = lax.while_loop(keep_going, iterate, init)

    def like_b(flat: Array) -> PyTree:
        return jax.tree_util.tree_map(lambda new, old: new.astype(old.dtype), unravel(flat), tree)

    return ConjugateGradientResult(like_b(x), rdotr, iterations, converged, like_b(r))


class LineSearchResult(NamedTuple):
    """Output of :func:`backtracking_line_search`.

    Attributes:
      params: the accepted candidate, or the original parameters when none was accepted.
      index: ``i`` of the accepted candidate, ``max_backtracks`` when none was accepted.
      accepted: whether a candidate was accepted.
      step_size: ``initial_step * backtrack_coeff ** index``, 0 when none was accepted.
      aux: with ``has_aux``, what ``accept_fn`` returned beside its verdict for the accepted
        candidate (for the last one tried when none was accepted); None otherwise.
    """

    params: PyTree
    index: Array
    accepted: Array
    step_size: Array
    aux: Any = None


def backtracking_line_search(
    accept_fn: Callable[[PyTree], Array],
    params: PyTree,
    direction: PyTree,
    initial_step: float | Array,
    backtrack_coeff: float | Array = 0.8,
    max_backtracks: int | Array = 10,
    *,
    has_aux: bool = False,
) -> LineSearchResult:
    """Try ``params + initial_step * backtrack_coeff**i * direction`` for ``i < max_backtracks``.

    Candidates are evaluated in order and the first one for which ``accept_fn`` returns true is
    returned (TRPO: KL below the bound and a strict improvement of the surrogate loss). When
    none is accepted the original ``params`` come back unchanged with ``accepted = False`` and
    ``step_size = 0`` (Tianshou 2.x restores the parameters). Evaluation stops at the first
    acceptance (a ``while_loop``); under ``vmap`` lanes are masked.

    Args:
      accept_fn: candidate parameters -> boolean scalar. A candidate whose predicate is NaN
        (e.g. ``kl < max_kl`` with a NaN KL) is rejected.
      params: the starting point.
      direction: the search direction, shaped like ``params``.
      initial_step: ``beta``, the full step length along ``direction``.
      backtrack_coeff: shrink factor in ``(0, 1]``.
      max_backtracks: number of candidates (may be traced).
      has_aux: ``accept_fn`` returns ``(verdict, aux)``; the accepted candidate's ``aux`` (a
        pytree of arrays, e.g. the KL already computed to judge it) comes back in the result.

    Returns:
      A :class:`LineSearchResult`.
    """
    check_in_range("backtrack_coeff", backtrack_coeff, 0.0, 1.0, low_open=True)
    check_in_range("max_backtracks", max_backtracks, 0, float("inf"))
    check_like("direction", direction, "params", params)

    def candidate(index: Array) -> PyTree:
        step = initial_step * jnp.power(backtrack_coeff, index)
        return otu.tree_add_scale(params, step, direction)

    def judge(candidate_params: PyTree) -> tuple[Array, Any]:
        verdict, aux = accept_fn(candidate_params) if has_aux else (accept_fn(candidate_params), ())
        verdict = jnp.asarray(verdict)
        # Cast with NaN counted as a rejection (a plain bool cast turns NaN into True).
        return jnp.where(jnp.isnan(verdict), False, verdict.astype(bool)), aux

    def keep_going(state: tuple[Array, Array, Any]) -> Array:
        index, accepted, _ = state
        return (~accepted) & (index < max_backtracks)

    def try_candidate(state: tuple[Array, Array, Any]) -> tuple[Array, Array, Any]:
        index, _, _ = state
        accepted, aux = judge(candidate(index))
        return jnp.where(accepted, index, index + 1), accepted, aux

    # The aux carried before any candidate is judged: zeros shaped like accept_fn's.
    no_aux = ()
    if has_aux:
        no_aux = jax.tree_util.tree_map(
            lambda leaf: jnp.zeros(leaf.shape, leaf.dtype),
            jax.eval_shape(lambda: judge(candidate(jnp.asarray(0)))[1]),
        )
    index, accepted, aux = lax.while_loop(
        keep_going, try_candidate, (jnp.asarray(0), jnp.asarray(False), no_aux)
    )
    new_params = tree_select(accepted, candidate(index), params)
    step_size = jnp.where(accepted, initial_step * jnp.power(backtrack_coeff, index), 0.0)
    return LineSearchResult(new_params, index, accepted, step_size, aux if has_aux else None)

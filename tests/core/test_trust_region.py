"""Tests for jaxrl.core.trust_region: Fisher-vector products, conjugate gradients, line search.

The Fisher-vector products and the 50x50 conjugate-gradient systems are checked in float64,
inside ``jax.enable_x64(True)`` blocks; an autouse fixture checks that x64 never leaks out.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jax.flatten_util import ravel_pytree

from jaxrl.core import (
    CategoricalParams,
    ConjugateGradientResult,
    GaussianParams,
    LineSearchResult,
    backtracking_line_search,
    conjugate_gradient,
    fisher_vector_product,
    kl_divergence,
    make_fisher_vector_product,
    make_gauss_newton_vector_product,
)


@pytest.fixture(params=[lambda f: f, jax.jit], ids=["nojit", "jit"])
def variant(request):
    return request.param


@pytest.fixture(autouse=True)
def _x64_does_not_leak():
    assert not jax.config.jax_enable_x64
    yield
    assert not jax.config.jax_enable_x64
    assert jnp.zeros(()).dtype == jnp.float32


# ---------------------------------------------------------------------------------------------
# Fisher-vector products on tiny hand-written MLP policies
# ---------------------------------------------------------------------------------------------

OBS_DIM, HIDDEN, ACTION_DIM, NUM_ACTIONS, NUM_OBS = 3, 4, 2, 3, 6
KINDS = ("gaussian", "categorical")


def init_policy(rng, kind):
    """NumPy float64 parameters of a one-hidden-layer tanh MLP policy."""
    out_dim = ACTION_DIM if kind == "gaussian" else NUM_ACTIONS
    params = {
        "hidden": {
            "w": rng.normal(size=(OBS_DIM, HIDDEN)) / np.sqrt(OBS_DIM),
            "b": 0.1 * rng.normal(size=(HIDDEN,)),
        },
        "out": {
            "w": rng.normal(size=(HIDDEN, out_dim)) / np.sqrt(HIDDEN),
            "b": 0.1 * rng.normal(size=(out_dim,)),
        },
    }
    if kind == "gaussian":  # state-independent log-std, a parameter like any other
        params["log_std"] = -0.5 + 0.2 * rng.normal(size=(out_dim,))
    return params


def policy(kind, params, obs, xp=jnp):
    """The distribution parameters; ``xp=np`` evaluates it in NumPy (pi_old, no compile)."""
    hidden = xp.tanh(obs @ params["hidden"]["w"] + params["hidden"]["b"])
    head = hidden @ params["out"]["w"] + params["out"]["b"]
    if kind == "gaussian":
        return GaussianParams(head, params["log_std"])
    return CategoricalParams(head)


def mean_kl(kind, theta, old, obs):
    """mean_s KL(pi_old(.|s) || pi_theta(.|s)); ``old`` is constant (no gradient flows to it)."""
    old = jax.tree.map(jax.lax.stop_gradient, old)
    return jnp.mean(kl_divergence(old, policy(kind, theta, obs)))


mean_kl_jit = jax.jit(mean_kl, static_argnums=0)


def make_problem(kind, seed=0, dtype=np.float64):
    """theta_old, observations and pi_old = stop_gradient(pi_{theta_old}), as NumPy arrays."""
    rng = np.random.default_rng(seed)
    theta_old = jax.tree.map(lambda x: x.astype(dtype), init_policy(rng, kind))
    obs = rng.normal(size=(NUM_OBS, OBS_DIM)).astype(dtype)
    old = policy(kind, theta_old, obs, xp=np)
    return theta_old, obs, old


def make_kl_fn(kind, old, obs, jit_kl=False):
    """kl_fn(theta) for the products. With ``jit_kl`` the KL is one compiled function, so that
    the un-jitted tests run the product code eagerly without compiling each primitive of the
    distrax KL one by one (many seconds on a small CPU)."""
    kl = mean_kl_jit if jit_kl else mean_kl
    return lambda theta: kl(kind, theta, old, obs)


@functools.partial(jax.jit, static_argnums=0)
def explicit_hessian(kind, theta, old, obs):
    """The dense Hessian of the mean KL over the flattened parameters (ravel_pytree)."""
    flat, unravel = ravel_pytree(theta)
    return jax.hessian(lambda f: mean_kl(kind, unravel(f), old, obs))(flat)


@pytest.fixture(scope="module", params=KINDS)
def fisher_problem(request):
    """A float64 problem and its explicit Hessian at theta_old, shared by the tests below."""
    kind = request.param
    theta_old, obs, old = make_problem(kind)
    with jax.enable_x64(True):
        hessian = np.asarray(explicit_hessian(kind, theta_old, old, obs))
    assert hessian.dtype == np.float64
    return kind, theta_old, obs, old, hessian


def random_vectors(theta, count, seed):
    """``count`` random flat vectors and the same as pytrees shaped like ``theta`` (NumPy,
    float64, in the leaf order of ``ravel_pytree``)."""
    leaves, treedef = jax.tree.flatten(theta)
    sizes = [np.size(leaf) for leaf in leaves]
    flat = np.random.default_rng(seed).normal(size=(count, sum(sizes)))
    trees = []
    for row in flat:
        pieces = np.split(row, np.cumsum(sizes)[:-1])
        trees.append(
            treedef.unflatten(
                [p.reshape(np.shape(leaf)) for p, leaf in zip(pieces, leaves, strict=True)]
            )
        )
    return flat, trees


def flatten(tree):
    return np.concatenate([np.ravel(leaf) for leaf in jax.tree.leaves(tree)])


def is_jit(variant):
    return variant is jax.jit


def test_fisher_vector_products_match_explicit_hessian_jitted(fisher_problem):
    # Both forms, with and without damping, on several vectors (vmapped over the linearized
    # product), at theta_old and at another point, where the Hessian of kl_fn is no longer
    # the Fisher matrix: all in one jitted program (one compilation).
    kind, theta_old, obs, old, hessian_old = fisher_problem
    theta_away = jax.tree.map(lambda x: x + 0.3, theta_old)
    vectors_flat, vectors = random_vectors(theta_old, 4, seed=1)
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *vectors)
    with jax.enable_x64(True):
        hessian_away = np.asarray(explicit_hessian(kind, theta_away, old, obs))
        kl_fn = make_kl_fn(kind, old, obs)

        @jax.jit
        def products(theta, vector, stacked_vectors):
            linearized = make_fisher_vector_product(kl_fn, theta, 0.05)
            return (
                fisher_vector_product(kl_fn, theta, vector, 0.1),
                fisher_vector_product(kl_fn, theta, vector, 0.0),
                linearized(vector),
                jax.vmap(linearized)(stacked_vectors),
            )

        at_old = products(theta_old, vectors[0], stacked)
        at_away = products(theta_away, vectors[0], stacked)
    assert not np.allclose(hessian_away, hessian_old)
    for hessian, (damped, undamped, linearized, batched) in (
        (hessian_old, at_old),
        (hessian_away, at_away),
    ):
        assert jax.tree.structure(damped) == jax.tree.structure(theta_old)
        assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(damped))
        v = vectors_flat[0]
        np.testing.assert_allclose(flatten(damped), hessian @ v + 0.1 * v, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(flatten(undamped), hessian @ v, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(
            flatten(linearized), hessian @ v + 0.05 * v, rtol=1e-7, atol=1e-9
        )
        got = np.stack([flatten(jax.tree.map(lambda x, i=i: x[i], batched)) for i in range(4)])
        expected = vectors_flat @ hessian.T + 0.05 * vectors_flat
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def test_fisher_vector_products_match_explicit_hessian_eagerly(fisher_problem):
    # Un-jitted: the product code runs eagerly (the KL itself is one jitted function, see
    # make_kl_fn); make_fisher_vector_product linearizes once and is applied several times.
    kind, theta_old, obs, old, hessian = fisher_problem
    vectors_flat, vectors = random_vectors(theta_old, 3, seed=2)
    with jax.enable_x64(True):
        kl_fn = make_kl_fn(kind, old, obs, jit_kl=True)
        damped = [fisher_vector_product(kl_fn, theta_old, v, 0.1) for v in vectors[:2]]
        undamped = fisher_vector_product(kl_fn, theta_old, vectors[0], 0.0)
        linearized = make_fisher_vector_product(kl_fn, theta_old, 0.05)
        applied = [linearized(v) for v in vectors]
    for product, v in zip(damped, vectors_flat, strict=False):
        assert jax.tree.structure(product) == jax.tree.structure(theta_old)
        np.testing.assert_allclose(flatten(product), hessian @ v + 0.1 * v, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(flatten(undamped), hessian @ vectors_flat[0], rtol=1e-7, atol=1e-9)
    for product, v in zip(applied, vectors_flat, strict=True):
        np.testing.assert_allclose(flatten(product), hessian @ v + 0.05 * v, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("jitted", [True, False], ids=["jit", "eager"])
def test_gauss_newton_product_equals_the_kl_hessian_at_theta_old(fisher_problem, jitted):
    # J^T M J v with the KL's Hessian in the distribution parameters: equal to the explicit
    # Hessian of the mean KL at theta_old (where the algorithms use it), vmappable, damped.
    kind, theta_old, obs, old, hessian = fisher_problem
    vectors_flat, vectors = random_vectors(theta_old, 3, seed=4)
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *vectors)
    with jax.enable_x64(True):

        def output_kl(dist):
            return jnp.mean(kl_divergence(old, dist))

        def products(theta, stacked_vectors):
            product = make_gauss_newton_vector_product(
                lambda p: policy(kind, p, obs), output_kl, theta, 0.05
            )
            undamped = make_gauss_newton_vector_product(
                lambda p: policy(kind, p, obs), output_kl, theta, 0.0
            )
            first = jax.tree.map(lambda x: x[0], stacked_vectors)
            return jax.vmap(product)(stacked_vectors), undamped(first)

        batched, undamped = (jax.jit(products) if jitted else products)(theta_old, stacked)
    got = np.stack([flatten(jax.tree.map(lambda x, i=i: x[i], batched)) for i in range(3)])
    assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(batched))
    np.testing.assert_allclose(
        got, vectors_flat @ hessian.T + 0.05 * vectors_flat, rtol=1e-7, atol=1e-9
    )
    np.testing.assert_allclose(flatten(undamped), hessian @ vectors_flat[0], rtol=1e-7, atol=1e-9)


def test_gauss_newton_product_rejects_negative_damping():
    with pytest.raises(ValueError, match=r"^damping must be in \[0\.0, inf\), got "):
        make_gauss_newton_vector_product(lambda p: p, lambda z: jnp.sum(z**2), jnp.ones(2), -1.0)


def test_hessian_at_theta_old_is_the_fisher_matrix(fisher_problem):
    # Sanity check of the test problem: at theta_old the KL's Hessian is J^T M J, with J the
    # Jacobian of the distribution parameters and M the Fisher matrix of the distribution in
    # those parameters (diag(1/sigma^2) for the mean, 2 for each log-std; diag(p) - p p^T for
    # the logits), averaged over the observations.
    kind, theta_old, obs, old, hessian = fisher_problem
    with jax.enable_x64(True):
        flat, unravel = ravel_pytree(theta_old)
        jacobians = jax.jit(jax.jacobian(lambda f: tuple(policy(kind, unravel(f), obs))))(flat)
        jacobians = [np.asarray(j) for j in jacobians]
    if kind == "gaussian":
        jac_mean, jac_log_std = jacobians  # [NUM_OBS, ACTION_DIM, P], [ACTION_DIM, P]
        inv_var = np.exp(-2.0 * old.log_std)
        fisher = np.einsum("sap,a,saq->pq", jac_mean, inv_var, jac_mean) / NUM_OBS
        fisher += 2.0 * jac_log_std.T @ jac_log_std
    else:
        (jac,) = jacobians  # [NUM_OBS, NUM_ACTIONS, P]
        probs = np.exp(old.logits - old.logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        metric = np.stack([np.diag(p) - np.outer(p, p) for p in probs])
        fisher = np.einsum("sap,sab,sbq->pq", jac, metric, jac) / NUM_OBS
    np.testing.assert_allclose(hessian, fisher, rtol=1e-6, atol=1e-9)
    assert np.all(np.linalg.eigvalsh(hessian) > -1e-9)  # positive semi-definite


def test_fisher_vector_product_float32_under_jit(fisher_problem):
    # The default precision, as used in training: accurate to float32 rounding.
    kind, theta_old, obs, old, hessian = fisher_problem
    to32 = functools.partial(jax.tree.map, lambda x: np.asarray(x, np.float32))
    kl_fn = make_kl_fn(kind, to32(old), to32(obs))
    v_flat, (v,) = random_vectors(theta_old, 1, seed=8)
    product = jax.jit(lambda p, v: fisher_vector_product(kl_fn, p, v))(to32(theta_old), to32(v))
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(product))
    np.testing.assert_allclose(
        flatten(product), hessian @ v_flat[0] + 0.1 * v_flat[0], rtol=1e-4, atol=1e-5
    )


def test_fisher_vector_product_rejects_negative_damping():
    theta_old, obs, old = make_problem("categorical", dtype=np.float32)
    kl_fn = make_kl_fn("categorical", old, obs)
    with pytest.raises(ValueError, match=r"^damping must be in \[0\.0, inf\), got "):
        fisher_vector_product(kl_fn, theta_old, theta_old, -0.1)
    with pytest.raises(ValueError, match=r"^damping must be in \[0\.0, inf\), got "):
        make_fisher_vector_product(kl_fn, theta_old, float("nan"))


# ---------------------------------------------------------------------------------------------
# Conjugate gradient
# ---------------------------------------------------------------------------------------------


def spd_matrix(rng, size=50):
    """A = X X^T / size + I, X standard normal: SPD with eigenvalues in about [1, 5]."""
    x = rng.normal(size=(size, size))
    return x @ x.T / size + np.eye(size)


def cg_reference(a, b, max_iters, residual_tol):
    """Textbook CG from x0 = 0 (Tianshou's loop), NumPy float64: (x, r.r, iterations)."""
    x = np.zeros_like(b)
    r = b.copy()
    p = b.copy()
    rdotr = r @ r
    iterations = 0
    if rdotr < residual_tol:
        return x, rdotr, iterations
    for _ in range(max_iters):
        ap = a @ p
        alpha = rdotr / (p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        new_rdotr = r @ r
        iterations += 1
        if new_rdotr < residual_tol:
            return x, new_rdotr, iterations
        p = r + new_rdotr / rdotr * p
        rdotr = new_rdotr
    return x, rdotr, iterations


def solve_with_cg(a, b, max_iters, residual_tol):
    return conjugate_gradient(lambda v: a @ v, b, max_iters, residual_tol)


# Eager CG compiles its while_loop at every call (fresh closures); tests that are not about
# jit/no-jit use this, compiled once per shape and dtype (max_iters and tol are traced).
solve_jit = jax.jit(solve_with_cg)


def relative_residual(a, x, b):
    return np.linalg.norm(b - a @ x) / np.linalg.norm(b)


def test_conjugate_gradient_solves_random_spd_systems(variant):
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        solve = variant(solve_with_cg)
        for _ in range(2 if is_jit(variant) else 1):  # more systems in the vmapped test
            a, b = spd_matrix(rng), rng.normal(size=50)
            result = solve(a, b, 50, 1e-14)
            assert isinstance(result, ConjugateGradientResult)
            x = np.asarray(result.x)
            assert x.dtype == np.float64
            assert bool(result.converged)
            assert 0 < int(result.iterations) <= 50
            assert relative_residual(a, x, b) < 1e-6
            np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(result.x, jnp.linalg.solve(a, b), rtol=1e-6, atol=1e-8)
            # residual_sq tracks |b - A x|^2.
            np.testing.assert_allclose(
                result.residual_sq, np.sum((b - a @ x) ** 2), rtol=1e-3, atol=1e-20
            )


def test_conjugate_gradient_matches_reference_iterates(variant):
    # Iteration by iteration, the same iterates as the textbook loop (max_iters respected).
    with jax.enable_x64(True):
        rng = np.random.default_rng(1)
        a, b = spd_matrix(rng), rng.normal(size=50)
        solve = variant(solve_with_cg)
        for max_iters in (0, 1, 7) if is_jit(variant) else (0, 3):
            result = solve(a, b, max_iters, 0.0)
            ref_x, ref_rdotr, ref_iterations = cg_reference(a, b, max_iters, 0.0)
            assert int(result.iterations) == ref_iterations == max_iters
            assert not bool(result.converged)
            np.testing.assert_allclose(result.x, ref_x, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(result.residual_sq, ref_rdotr, rtol=1e-9)


def test_conjugate_gradient_stops_at_residual_tol(variant):
    with jax.enable_x64(True):
        rng = np.random.default_rng(2)
        a, b = spd_matrix(rng), rng.normal(size=50)
        tol = 1e-3 * float(b @ b)
        result = variant(solve_with_cg)(a, b, 50, tol)
        ref_x, ref_rdotr, ref_iterations = cg_reference(a, b, 50, tol)
        assert bool(result.converged)
        assert int(result.iterations) == ref_iterations
        assert 0 < ref_iterations < 50
        assert float(result.residual_sq) < tol
        np.testing.assert_allclose(result.residual_sq, ref_rdotr, rtol=1e-9)
        np.testing.assert_allclose(result.x, ref_x, rtol=1e-9, atol=1e-12)
        # One iteration fewer is not enough.
        fewer = solve_jit(a, b, ref_iterations - 1, tol)
        assert not bool(fewer.converged) and float(fewer.residual_sq) >= tol


def test_conjugate_gradient_float32_tianshou_defaults():
    # The training configuration: float32, 10 iterations, tol 1e-10, a well-conditioned system.
    rng = np.random.default_rng(3)
    a = spd_matrix(rng, 20).astype(np.float32)
    b = rng.normal(size=20).astype(np.float32)
    result = jax.jit(lambda a, b: conjugate_gradient(lambda v: a @ v, b))(a, b)
    assert int(result.iterations) <= 10
    np.testing.assert_allclose(result.x, np.linalg.solve(a, b), rtol=1e-3, atol=1e-3)


def test_conjugate_gradient_vmapped_over_systems():
    with jax.enable_x64(True):
        rng = np.random.default_rng(4)
        # Differently conditioned systems, so lanes stop after different numbers of iterations.
        a = np.stack([spd_matrix(rng) * scale for scale in (1.0, 0.1, 10.0, 1.0)])
        a[3] = a[3] + np.diag(np.linspace(0.0, 30.0, 50))
        b = rng.normal(size=(4, 50))
        result = jax.jit(jax.vmap(lambda a, b: solve_with_cg(a, b, 50, 1e-14)))(a, b)
        assert result.x.shape == (4, 50) and result.iterations.shape == (4,)
        assert bool(np.all(result.converged))
        for i in range(4):
            assert relative_residual(a[i], np.asarray(result.x[i]), b[i]) < 1e-6
            solution = np.linalg.solve(a[i], b[i])
            np.testing.assert_allclose(
                result.x[i], solution, rtol=1e-6, atol=1e-8 * np.abs(solution).max()
            )
            single = solve_jit(a[i], b[i], 50, 1e-14)
            assert int(result.iterations[i]) == int(single.iterations)
        assert len(set(np.asarray(result.iterations).tolist())) > 1


def test_conjugate_gradient_on_pytrees_equals_flat():
    with jax.enable_x64(True):
        rng = np.random.default_rng(5)
        a = spd_matrix(rng, 7)
        b_tree = {"w": rng.normal(size=(2, 2)), "b": rng.normal(size=(3,))}
        b_flat, unravel = ravel_pytree(b_tree)

        def matvec(tree):
            return unravel(a @ ravel_pytree(tree)[0])

        tree_result = jax.jit(lambda b: conjugate_gradient(matvec, b, 7, 1e-20))(b_tree)
        flat_result = solve_jit(a, b_flat, 7, 1e-20)
        assert jax.tree.structure(tree_result.x) == jax.tree.structure(b_tree)
        assert tree_result.x["w"].shape == (2, 2)
        np.testing.assert_allclose(ravel_pytree(tree_result.x)[0], flat_result.x, rtol=1e-10)
        np.testing.assert_allclose(
            ravel_pytree(tree_result.x)[0], np.linalg.solve(a, b_flat), rtol=1e-8
        )
        assert int(tree_result.iterations) == int(flat_result.iterations)


@pytest.mark.parametrize("residual_tol", [1e-10, 0.0])
def test_conjugate_gradient_zero_rhs_returns_zeros(variant, residual_tol):
    a = spd_matrix(np.random.default_rng(6), 5).astype(np.float32)
    result = variant(solve_with_cg)(a, np.zeros(5, np.float32), 10, residual_tol)
    np.testing.assert_array_equal(result.x, np.zeros(5))
    assert int(result.iterations) == 0
    assert np.isfinite(float(result.residual_sq))
    if residual_tol > 0:
        assert bool(result.converged)


@pytest.mark.parametrize(
    "matrix",
    [
        -np.eye(5),  # negative definite
        np.zeros((5, 5)),  # zero curvature
        np.diag([1.0, -1.0, 2.0, -3.0, 0.5]),  # indefinite
        np.diag([1.0, 1.0, np.nan, 1.0, 1.0]),  # non-finite products
    ],
    ids=["negative", "zero", "indefinite", "nan"],
)
def test_conjugate_gradient_non_positive_curvature_is_finite(variant, matrix):
    b = np.ones(5, np.float32)
    result = variant(solve_with_cg)(matrix.astype(np.float32), b, 10, 1e-10)
    assert np.all(np.isfinite(result.x))
    assert np.isfinite(float(result.residual_sq))
    assert not bool(result.converged)
    assert int(result.iterations) < 10


def test_conjugate_gradient_negative_identity_returns_initial_iterate():
    result = conjugate_gradient(lambda v: -v, jnp.ones(3))
    np.testing.assert_array_equal(result.x, np.zeros(3))
    assert int(result.iterations) == 0


def test_conjugate_gradient_traced_max_iters():
    a = spd_matrix(np.random.default_rng(7), 10).astype(np.float32)
    b = np.ones(10, np.float32)
    for max_iters in (1, 2, 4):
        assert int(solve_jit(a, b, max_iters, 0.0).iterations) == max_iters


@pytest.mark.parametrize(
    ("name", "value", "interval"),
    [("max_iters", -1, "[0, inf)"), ("residual_tol", -1e-3, "[0.0, inf)")],
)
def test_conjugate_gradient_rejects_bad_arguments(name, value, interval):
    message = f"{name} must be in {interval}, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        conjugate_gradient(lambda v: v, jnp.ones(3), **{name: value})


# ---------------------------------------------------------------------------------------------
# Backtracking line search
# ---------------------------------------------------------------------------------------------


def line_search_reference(accept_fn, params, direction, beta, coeff, max_backtracks):
    for i in range(max_backtracks):
        step = beta * coeff**i
        candidate = params + step * direction
        if accept_fn(candidate):
            return candidate, i, True, step
    return params, max_backtracks, False, 0.0


def trpo_like_problem(seed, dim=4):
    """A quadratic surrogate loss and a squared-distance 'KL', TRPO's acceptance rule."""
    rng = np.random.default_rng(seed)
    params = rng.normal(size=dim).astype(np.float32)
    optimum = rng.normal(size=dim).astype(np.float32)
    direction = (optimum - params) * rng.uniform(0.5, 4.0)
    if rng.random() < 0.25:  # an uphill direction: nothing is ever accepted
        direction = -direction
    max_kl = np.float32(rng.uniform(0.01, 2.0))
    return params, direction.astype(np.float32), optimum, max_kl


def make_accept(params, optimum, max_kl, xp):
    def loss(x):
        return xp.sum((x - optimum) ** 2)

    def accept(candidate):
        kl = xp.sum((candidate - params) ** 2)
        return (kl < max_kl) & (loss(candidate) < loss(params))

    return accept


@pytest.mark.parametrize("seed", range(4))
def test_line_search_matches_reference(variant, seed):
    params, direction, optimum, max_kl = trpo_like_problem(seed)

    def search(params, direction, optimum, max_kl):
        accept = make_accept(params, optimum, max_kl, jnp)
        return backtracking_line_search(accept, params, direction, 1.0, 0.8, 10)

    result = variant(search)(params, direction, optimum, max_kl)
    assert isinstance(result, LineSearchResult)
    accept_np = make_accept(params.astype(np.float64), optimum, max_kl, np)
    ref_params, ref_index, ref_accepted, ref_step = line_search_reference(
        accept_np, params.astype(np.float64), direction, 1.0, 0.8, 10
    )
    assert bool(result.accepted) == ref_accepted
    assert int(result.index) == ref_index
    np.testing.assert_allclose(result.step_size, ref_step, rtol=1e-6)
    np.testing.assert_allclose(result.params, ref_params, rtol=1e-6, atol=1e-6)


def test_line_search_picks_the_first_acceptable_candidate(variant):
    # Candidates 1, 0.5, 0.25, 0.125, ...: everything below 0.3 is acceptable, and so is 0.5
    # only in the second case; the first acceptable one wins.
    def search(threshold, also_half):
        def accept(x):
            return (x[0] < threshold) | (also_half & (jnp.abs(x[0] - 0.5) < 1e-6))

        return backtracking_line_search(accept, jnp.zeros(1), jnp.ones(1), 1.0, 0.5, 6)

    result = variant(search)(0.3, False)
    assert bool(result.accepted) and int(result.index) == 2
    np.testing.assert_allclose(result.step_size, 0.25)
    np.testing.assert_allclose(result.params, [0.25])
    result = variant(search)(0.3, True)
    assert bool(result.accepted) and int(result.index) == 1
    np.testing.assert_allclose(result.step_size, 0.5)
    np.testing.assert_allclose(result.params, [0.5])


def test_line_search_evaluates_candidates_in_order_and_stops():
    calls = []

    def accept(x):
        jax.debug.callback(lambda x: calls.append(float(x)), x, ordered=True)
        return x < 0.3

    result = backtracking_line_search(accept, jnp.float32(0.0), jnp.float32(1.0), 1.0, 0.5, 6)
    assert int(result.index) == 2
    np.testing.assert_allclose(calls, [1.0, 0.5, 0.25])


def test_line_search_restores_params_when_nothing_is_accepted(variant):
    params = {"w": np.arange(3, dtype=np.float32), "b": np.float32(-1.0)}
    direction = {"w": np.ones(3, np.float32), "b": np.float32(2.0)}
    result = variant(
        lambda p, d: backtracking_line_search(lambda c: jnp.asarray(False), p, d, 1.0, 0.8, 10)
    )(params, direction)
    assert not bool(result.accepted)
    assert int(result.index) == 10
    assert float(result.step_size) == 0.0
    jax.tree.map(np.testing.assert_array_equal, result.params, params)


def test_line_search_on_pytrees(variant):
    params = {"w": np.zeros((2, 2), np.float32), "b": np.zeros(2, np.float32)}
    direction = {"w": np.ones((2, 2), np.float32), "b": -np.ones(2, np.float32)}

    def accept(candidate):
        return jnp.sum(candidate["w"]) < 1.5  # 4 * step < 1.5: step < 0.375

    result = variant(lambda p, d: backtracking_line_search(accept, p, d, 1.0, 0.5, 5))(
        params, direction
    )
    assert bool(result.accepted) and int(result.index) == 2
    np.testing.assert_allclose(result.params["w"], np.full((2, 2), 0.25))
    np.testing.assert_allclose(result.params["b"], np.full(2, -0.25))


def test_line_search_rejects_nan_comparisons(variant):
    # A NaN KL (or loss) makes `kl < max_kl` false: such candidates are rejected. Here the
    # "KL" is NaN for the two longest steps (sqrt of a negative number).
    def search(params, direction):
        def accept(candidate):
            kl = jnp.sqrt(0.3 - candidate[0])
            return kl < 1.0

        return backtracking_line_search(accept, params, direction, 1.0, 0.5, 5)

    result = variant(search)(np.zeros(1, np.float32), np.ones(1, np.float32))
    assert bool(result.accepted) and int(result.index) == 2
    np.testing.assert_allclose(result.params, [0.25])
    all_nan = variant(
        lambda p, d: backtracking_line_search(lambda c: jnp.nan < c[0], p, d, 1.0, 0.5, 5)
    )(np.zeros(1, np.float32), np.ones(1, np.float32))
    assert not bool(all_nan.accepted)
    np.testing.assert_array_equal(all_nan.params, [0.0])


def test_line_search_rejects_a_nan_valued_predicate():
    result = backtracking_line_search(
        lambda c: jnp.float32(jnp.nan), jnp.zeros(1), jnp.ones(1), 1.0, 0.5, 5
    )
    assert not bool(result.accepted)
    assert float(result.step_size) == 0.0
    np.testing.assert_array_equal(result.params, [0.0])


def test_line_search_vmapped_over_problems():
    problems = [trpo_like_problem(seed) for seed in range(8)]
    params, direction, optimum, max_kl = (np.stack(x) for x in zip(*problems, strict=True))
    betas = np.linspace(0.5, 2.0, 8).astype(np.float32)

    def search(params, direction, optimum, max_kl, beta):
        accept = make_accept(params, optimum, max_kl, jnp)
        return backtracking_line_search(accept, params, direction, beta, 0.7, 8)

    result = jax.jit(jax.vmap(search))(params, direction, optimum, max_kl, betas)
    assert result.index.shape == (8,)
    indices = set()
    for i in range(8):
        accept_np = make_accept(params[i].astype(np.float64), optimum[i], max_kl[i], np)
        ref_params, ref_index, ref_accepted, ref_step = line_search_reference(
            accept_np, params[i].astype(np.float64), direction[i], float(betas[i]), 0.7, 8
        )
        assert bool(result.accepted[i]) == ref_accepted
        assert int(result.index[i]) == ref_index
        np.testing.assert_allclose(result.step_size[i], ref_step, rtol=1e-6)
        np.testing.assert_allclose(result.params[i], ref_params, rtol=1e-6, atol=1e-6)
        indices.add(ref_index)
    assert len(indices) > 2  # lanes really stop at different candidates
    assert 8 in indices  # including one where nothing is accepted


def test_line_search_zero_backtracks_accepts_nothing():
    result = backtracking_line_search(lambda c: True, jnp.zeros(2), jnp.ones(2), 1.0, 0.8, 0)
    assert not bool(result.accepted) and float(result.step_size) == 0.0
    np.testing.assert_array_equal(result.params, np.zeros(2))


@settings(max_examples=30, deadline=None)
@given(
    threshold=st.floats(0.0, 2.0),
    beta=st.floats(0.1, 2.0),
    coeff=st.floats(0.1, 1.0),
    max_backtracks=st.integers(0, 12),
)
def test_line_search_property(threshold, beta, coeff, max_backtracks):
    result = _scalar_search(
        np.float32(threshold), np.float32(beta), np.float32(coeff), max_backtracks
    )
    # Reference in float32 arithmetic, like the implementation; steps within rounding of the
    # threshold are ambiguous (pow may differ by an ulp) and skipped.
    ref = None
    for i in range(max_backtracks):
        step = np.float32(beta) * np.float32(coeff) ** np.float32(i)
        assume(abs(float(step) - float(np.float32(threshold))) > 1e-5 * float(step))
        if step < np.float32(threshold):
            ref = (i, step)
            break
    if ref is None:
        assert not bool(result.accepted) and int(result.index) == max_backtracks
        assert float(result.step_size) == 0.0 and float(result.params) == 0.0
    else:
        assert bool(result.accepted) and int(result.index) == ref[0]
        np.testing.assert_allclose(result.step_size, ref[1], rtol=1e-5)
        np.testing.assert_allclose(result.params, ref[1], rtol=1e-5)


@jax.jit
def _scalar_search(threshold, beta, coeff, max_backtracks):
    return backtracking_line_search(
        lambda x: x < threshold, jnp.float32(0.0), jnp.float32(1.0), beta, coeff, max_backtracks
    )


@pytest.mark.parametrize(
    ("name", "value", "interval"),
    [
        ("backtrack_coeff", 0.0, "(0.0, 1.0]"),
        ("backtrack_coeff", 1.5, "(0.0, 1.0]"),
        ("max_backtracks", -1, "[0, inf)"),
    ],
)
def test_line_search_rejects_bad_arguments(name, value, interval):
    message = f"{name} must be in {interval}, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        backtracking_line_search(lambda c: True, jnp.zeros(2), jnp.ones(2), 1.0, **{name: value})


def test_conjugate_gradient_returns_its_residual(variant):
    # r = b - A x as CG's recurrence tracks it: equal to the true residual up to rounding, so
    # x . (b - r) is x . A x (TRPO's step length) without another product with A.
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        a, b = spd_matrix(rng), rng.normal(size=50)
        result = variant(solve_with_cg)(a, b, 10, 1e-30)
        x, r = np.asarray(result.x), np.asarray(result.residual)
    assert r.shape == b.shape and r.dtype == np.float64
    np.testing.assert_allclose(r, b - a @ x, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(float(r @ r), float(result.residual_sq), rtol=1e-10)
    np.testing.assert_allclose(x @ (b - r), x @ a @ x, rtol=1e-10)


def test_conjugate_gradient_residual_is_shaped_like_b():
    b = {"w": jnp.ones((2, 3)), "b": jnp.arange(3.0)}
    result = conjugate_gradient(lambda v: jax.tree.map(lambda x: 2.0 * x, v), b, 5, 1e-12)
    assert jax.tree.structure(result.residual) == jax.tree.structure(b)
    zero = conjugate_gradient(lambda v: v, jnp.zeros(3))  # b = 0: no iteration, r = b
    np.testing.assert_array_equal(zero.residual, np.zeros(3))


def test_line_search_returns_the_accepted_candidates_aux(variant):
    # Candidates 1, 0.5, 0.25, ...: the first below 0.3 (0.25) is accepted, and its aux (what
    # accept_fn computed to judge it) comes back; when none is accepted, the last one tried's.
    def search(threshold):
        def accept(x):
            return x[0] < threshold, {"value": 10.0 * x[0], "index_hint": x[0] < 1.0}

        return backtracking_line_search(
            accept, jnp.zeros(1), jnp.ones(1), 1.0, 0.5, 6, has_aux=True
        )

    found = variant(search)(jnp.float32(0.3))
    assert bool(found.accepted) and int(found.index) == 2
    np.testing.assert_allclose(found.aux["value"], 2.5)
    assert bool(found.aux["index_hint"])
    missed = variant(search)(jnp.float32(-1.0))
    assert not bool(missed.accepted)
    np.testing.assert_allclose(missed.aux["value"], 10.0 * 0.5**5)
    plain = backtracking_line_search(lambda c: c[0] < 0.3, jnp.zeros(1), jnp.ones(1), 1.0, 0.5, 6)
    assert plain.aux is None


def test_gauss_newton_product_reuses_a_given_linearization(fisher_problem):
    kind, theta_old, obs, old, _ = fisher_problem
    _, vectors = random_vectors(theta_old, 1, seed=5)
    with jax.enable_x64(True):

        def output_kl(dist):
            return jnp.mean(kl_divergence(old, dist))

        def model(p):
            return policy(kind, p, obs)

        fresh = make_gauss_newton_vector_product(model, output_kl, theta_old, 0.05)
        given = make_gauss_newton_vector_product(
            None, output_kl, theta_old, 0.05, linearized=jax.linearize(model, theta_old)
        )
        np.testing.assert_allclose(
            flatten(given(vectors[0])), flatten(fresh(vectors[0])), rtol=1e-12, atol=1e-14
        )


# ---------------------------------------------------------------------------------------------
# Default arguments: Tianshou's (damping 0.1, CG 10 iterations and tolerance 1e-10, line search
# coefficient 0.8 and 10 candidates)
# ---------------------------------------------------------------------------------------------


def test_fisher_vector_products_default_damping_is_0_1():
    # kl(theta) = theta^T A theta / 2 has the Hessian A everywhere: the damped product is
    # (A + 0.1 I) v, and the Gauss-Newton form of z = theta, kl(z) = z^T A z / 2 is the same.
    hessian = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, -0.25], [0.0, -0.25, 3.0]], np.float32)
    theta = np.array([0.3, -0.2, 0.1], np.float32)
    vector = np.array([1.0, -2.0, 0.5], np.float32)
    expected = hessian.astype(np.float64) @ vector + 0.1 * vector

    def quadratic(x):
        return 0.5 * x @ jnp.asarray(hessian) @ x

    products = {
        "make_fisher_vector_product": make_fisher_vector_product(quadratic, theta)(vector),
        "fisher_vector_product": fisher_vector_product(quadratic, theta, vector),
        "make_gauss_newton_vector_product": make_gauss_newton_vector_product(
            lambda x: x, quadratic, theta
        )(vector),
    }
    for name, product in products.items():
        np.testing.assert_allclose(product, expected, rtol=1e-6, err_msg=name)


def test_line_search_defaults_are_coefficient_0_8_and_10_candidates():
    tried = []

    def reject_all(x):
        jax.debug.callback(lambda x: tried.append(float(x)), x, ordered=True)
        return jnp.asarray(False)

    result = backtracking_line_search(reject_all, jnp.float32(0.0), jnp.float32(1.0), 2.0)
    assert not bool(result.accepted) and int(result.index) == 10
    np.testing.assert_allclose(tried, 2.0 * 0.8 ** np.arange(10), rtol=1e-6)


def test_conjugate_gradient_checks_the_tolerance_strictly_before_iterating(variant):
    # Before the first iteration too, CG stops only when r.r = b.b is strictly below
    # residual_tol; b = 0 is solved exactly (converged) whatever the tolerance.
    a = np.diag([2.0, 4.0, 8.0]).astype(np.float32)
    solve = variant(solve_with_cg)
    cases = [
        # (b, residual_tol, iterations, x)
        (np.full(3, 1e-6), 1e-10, 0, np.zeros(3)),  # b.b = 3e-12 < tol: x0 = 0 returned
        ([0.5, 0.0, 0.0], 0.25, 1, [0.25, 0.0, 0.0]),  # b.b == tol: not below it, one step
        ([1.0, 0.0, 0.0], 1e-10, 1, [0.5, 0.0, 0.0]),  # b.b = 1: one step solves it
        (np.zeros(3), 0.0, 0, np.zeros(3)),  # b = 0 with tol 0
    ]
    for b, residual_tol, iterations, x in cases:
        result = solve(a, np.asarray(b, np.float32), 10, residual_tol)
        assert int(result.iterations) == iterations, (b, residual_tol)
        assert bool(result.converged), (b, residual_tol)
        np.testing.assert_allclose(result.x, x, rtol=1e-6, atol=0)
    # After an iteration the test is strict as well: with tol 0, reaching r = 0 exactly is not
    # "r.r < 0"; CG goes on, finds no curvature along p = 0 and stops after that one update.
    result = solve(a, np.array([1.0, 0.0, 0.0], np.float32), 10, 0.0)
    assert int(result.iterations) == 1 and float(result.residual_sq) == 0.0
    assert not bool(result.converged)
    np.testing.assert_allclose(result.x, [0.5, 0.0, 0.0], rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------------
# Arrays that do not fit together
# ---------------------------------------------------------------------------------------------


def test_a_vector_unlike_the_parameters_is_named(variant):
    """A direction, a vector or a product shaped unlike what it goes with is refused naming
    both arrays, jitted or not (shapes are static: the check is free), where JAX spoke of a
    broadcast deep inside."""
    params = {"w": jnp.ones(2)}

    def refused(message: str, call):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            variant(call)()

    refused(
        "direction leaf of shape (3,) does not match params leaf of shape (2,)",
        lambda: backtracking_line_search(lambda p: True, params, {"w": jnp.ones(3)}, 1.0).params,
    )
    refused(
        "vector leaf of shape (3,) does not match params leaf of shape (2,)",
        lambda: fisher_vector_product(lambda p: jnp.sum(p["w"] ** 2), params, {"w": jnp.ones(3)}),
    )
    refused(
        "matvec(v) leaf of shape (2,) does not match b leaf of shape (3,)",
        lambda: conjugate_gradient(lambda v: v[:2], jnp.ones(3)).x,
    )
    with pytest.raises(ValueError, match=r"^direction must have the tree structure of params"):
        variant(
            lambda: backtracking_line_search(lambda p: True, params, [jnp.ones(2)], 1.0).params
        )()

"""Action distributions as plain arrays.

Distribution *parameters* are NamedTuples of arrays (:class:`GaussianParams`,
:class:`CategoricalParams`), safe to pass across ``jit``/``vmap`` boundaries and to store in
rollouts. The functions below build distrax distributions inside the traced computation
only; distrax objects never cross a ``jit`` boundary (distrax 0.1.9 breaks when they do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    import distrax

Array = jax.Array


class GaussianParams(NamedTuple):
    """A diagonal Gaussian: ``mean`` and ``log_std`` of shape ``[..., action_dim]``.

    A state-independent log-std is a parameter vector broadcast to the mean's shape.
    """

    mean: Array
    log_std: Array


class CategoricalParams(NamedTuple):
    """A categorical distribution: unnormalized ``logits`` of shape ``[..., num_actions]``."""

    logits: Array


DistributionParams = GaussianParams | CategoricalParams


def _to_distrax(params: DistributionParams) -> distrax.Distribution:
    # distrax (with TensorFlow Probability's JAX substrate) takes 2-3 s to import: it is
    # imported by the first trace that builds a distribution, so that what never builds one
    # (DDPG, `jaxrl train ALGO --help`, the command's usage errors) does not wait for it.
    import distrax

    if isinstance(params, GaussianParams):
        scale = jnp.exp(jnp.broadcast_to(params.log_std, jnp.shape(params.mean)))
        return distrax.MultivariateNormalDiag(params.mean, scale)
    if isinstance(params, CategoricalParams):
        return distrax.Categorical(logits=params.logits)
    raise TypeError(
        f"params must be GaussianParams or CategoricalParams, got {type(params).__name__}"
    )


def log_prob(params: DistributionParams, action: Array) -> Array:
    """Log-density of ``action`` (shape ``[..., action_dim]`` or integer ``[...]``) -> ``[...]``.

    Gaussian log-densities are summed over the action dimensions (an independent
    multivariate normal, as Tianshou's ``Independent(Normal, 1)``).
    """
    return _to_distrax(params).log_prob(action)


def kl_divergence(p: DistributionParams, q: DistributionParams) -> Array:
    """``KL(p || q)`` per sample, shape ``[...]`` (batch shape of the parameters)."""
    if type(p) is not type(q):
        raise TypeError(
            f"p and q must be the same kind of distribution, got {type(p)} and {type(q)}"
        )
    return _to_distrax(p).kl_divergence(_to_distrax(q))


def entropy(params: DistributionParams) -> Array:
    """Entropy per sample, shape ``[...]``."""
    return _to_distrax(params).entropy()


def sample(key: Array, params: DistributionParams) -> Array:
    """Draw one action per sample: float ``[..., action_dim]`` or integer ``[...]``."""
    return _to_distrax(params).sample(seed=key)


def mode(params: DistributionParams) -> Array:
    """The most likely action: the Gaussian mean or the categorical argmax."""
    if isinstance(params, GaussianParams):
        return params.mean
    if isinstance(params, CategoricalParams):
        return jnp.argmax(params.logits, axis=-1)
    raise TypeError(
        f"params must be GaussianParams or CategoricalParams, got {type(params).__name__}"
    )

"""Target-network averaging."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxrl.core._checks import check_in_range, check_like

PyTree = Any


def soft_update(target: PyTree, online: PyTree, tau: float | jax.Array) -> PyTree:
    """Polyak averaging ``target <- tau * online + (1 - tau) * target``, leaf by leaf.

    Args:
      target: target-network parameters (any pytree).
      online: online-network parameters, the same structure and shapes.
      tau: averaging weight in ``[0, 1]`` (``1`` copies ``online``, ``0`` keeps ``target``);
        may be traced (vmapped sweeps).

    Returns:
      The new target parameters, shaped like ``target``.
    """
    check_in_range("tau", tau, 0.0, 1.0)
    check_like("online", online, "target", target)
    return jax.tree_util.tree_map(
        lambda t, o: jnp.asarray(tau * o + (1.0 - tau) * t, jnp.result_type(t)), target, online
    )

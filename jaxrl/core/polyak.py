"""Target-network averaging."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.core._checks import check_in_range

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
    target_structure = jax.tree_util.tree_structure(target)
    online_structure = jax.tree_util.tree_structure(online)
    if target_structure != online_structure:
        raise ValueError(
            f"online must have the tree structure of target: {online_structure} "
            f"vs {target_structure}"
        )
    for target_leaf, online_leaf in zip(
        jax.tree_util.tree_leaves(target), jax.tree_util.tree_leaves(online), strict=True
    ):
        if np.shape(target_leaf) != np.shape(online_leaf):
            raise ValueError(
                f"online leaf of shape {np.shape(online_leaf)} does not match target leaf "
                f"of shape {np.shape(target_leaf)}"
            )
    return jax.tree_util.tree_map(
        lambda t, o: jnp.asarray(tau * o + (1.0 - tau) * t, jnp.result_type(t)), target, online
    )

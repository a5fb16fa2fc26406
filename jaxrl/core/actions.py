"""Mapping policy outputs in ``[-1, 1]`` to an environment's Box action space."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.core._checks import concrete_value

Array = jax.Array
BoundMethod = Literal["clip", "tanh"] | None
BOUND_METHODS: tuple[BoundMethod, ...] = ("clip", "tanh", None)


def check_bound_method(action_bound_method: object) -> None:
    """Raise ``ValueError`` unless ``action_bound_method`` is "clip", "tanh" or None."""
    if action_bound_method not in BOUND_METHODS:
        raise ValueError(
            f"action_bound_method must be one of 'clip', 'tanh' or None, "
            f"got {action_bound_method!r}"
        )


def bound_action(action: Array, action_bound_method: BoundMethod = "clip") -> Array:
    """Bound raw actions to ``[-1, 1]``: ``clip``, ``tanh``, or ``None`` (unchanged)."""
    check_bound_method(action_bound_method)
    if action_bound_method == "clip":
        return jnp.clip(action, -1.0, 1.0)
    if action_bound_method == "tanh":
        return jnp.tanh(action)
    return action


def scale_action(action: Array, low: Array, high: Array) -> Array:
    """Affine map ``[-1, 1] -> [low, high]``: ``low + (high - low) * (action + 1) / 2``."""
    return low + (high - low) * (action + 1.0) / 2.0


def unscale_action(action: Array, low: Array, high: Array) -> Array:
    """Inverse of :func:`scale_action`: ``[low, high] -> [-1, 1]``."""
    return 2.0 * (action - low) / (high - low) - 1.0


def check_action_bounds(low: Array, high: Array) -> None:
    """Raise ``ValueError`` unless concrete ``low < high`` are finite (needed for scaling)."""
    low_value, high_value = concrete_value(low), concrete_value(high)
    if low_value is None or high_value is None:
        return
    try:
        np.broadcast_shapes(np.shape(low_value), np.shape(high_value))
    except ValueError:
        raise ValueError(
            f"low and high must broadcast together, got shapes {low_value.shape} and "
            f"{high_value.shape}"
        ) from None
    if not (np.all(np.isfinite(low_value)) and np.all(np.isfinite(high_value))):
        raise ValueError("action_scaling needs a Box action space with finite low and high bounds")
    if not np.all(low_value < high_value):
        raise ValueError(
            f"action space bounds need low < high, got low={low_value}, high={high_value}"
        )


def map_action(
    action: Array,
    low: Array,
    high: Array,
    action_scaling: bool = True,
    action_bound_method: BoundMethod = "clip",
) -> Array:
    """Turn a raw policy action into an environment action (Tianshou's ``map_action``).

    First bound to ``[-1, 1]`` with ``action_bound_method``; then, if ``action_scaling``, map
    affinely to ``[low, high]``. Shapes: ``action`` ``[..., action_dim]``; ``low``/``high``
    broadcastable to it.
    """
    check_bound_method(action_bound_method)
    bounded = bound_action(action, action_bound_method)
    if not action_scaling:
        return bounded
    check_action_bounds(low, high)
    low, high = jnp.asarray(low), jnp.asarray(high)
    scaled = scale_action(bounded, low, high)
    if action_bound_method is None:
        return scaled
    # The affine map can round one ulp past a bound in float32; bounded actions stay inside.
    return jnp.clip(scaled, low, high)

"""Argument checks shared by the pure core.

The core functions are called both eagerly (research code, tests) and inside
``jit``/``vmap`` (training runs, hyperparameter sweeps). Range checks can only
look at concrete values, so every check here silently skips traced values:
a hyperparameter swept under ``vmap`` is validated by the algorithm object
that owns it, before tracing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np


def concrete_value(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array, or ``None`` when it is a tracer."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def check_in_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raise ``ValueError`` naming ``name`` if a concrete ``value`` is outside the interval
    (closed unless ``low_open``/``high_open``; an infinite bound is always open, as no number
    reaches it). Traced values are skipped; a non-numeric value raises ``TypeError``.

    The one range check of the library: the core calls it with argument names, the algorithm
    objects (:func:`jaxrl.algorithms._common.check_bounds`) with ``Owner.field``."""
    concrete = concrete_value(value)
    if concrete is None:
        return
    if concrete.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a number, got {value!r}")
    high_open = high_open or high == float("inf")
    low_open = low_open or low == float("-inf")
    above_low = concrete > low if low_open else concrete >= low
    below_high = concrete < high if high_open else concrete <= high
    if not np.all(above_low & below_high):  # NaN fails both comparisons
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must be in {left}{low}, {high}{right}, got {value!r}")


def check_bool(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` is a Python or NumPy bool (or
    ``None`` when ``optional``): a flag given as a string or a number is refused, not read by
    its truthiness."""
    if isinstance(value, bool | np.bool_) or (optional and value is None):
        return
    expected = "True, False or None" if optional else "True or False"
    raise TypeError(f"{name} must be {expected}, got {value!r:.60}")


def integer_words(low: int | None) -> str:
    """How an error names an integer ``>= low``: "an integer", "a positive integer" (``low``
    1) or "an integer >= low"."""
    return {None: "an integer", 1: "a positive integer"}.get(low, f"an integer >= {low}")


def check_int(name: str, value: Any, *, low: int | None = None, optional: bool = False) -> None:
    """Raise naming ``name`` unless ``value`` is an integer (a Python or NumPy integer, or a
    0-d integer array; no bool) ``>= low`` (or ``None`` when ``optional``): ``TypeError`` for
    no integer, ``ValueError`` for one below ``low``."""
    if value is None and optional:
        return
    words, concrete = integer_words(low) + " or None" * optional, concrete_value(value)
    if concrete is None or concrete.ndim or concrete.dtype.kind not in "iu":
        raise TypeError(f"{name} must be {words}, got {value!r:.60}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be {words}, got {value!r}")


def check_key(name: str, key: Any) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``key`` is a JAX PRNG key, concrete or
    traced: a typed key (``jax.random.key(seed)``) or raw ``uint32`` key data
    (``jax.random.PRNGKey(seed)``); leading batch axes are allowed."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return
    if dtype == np.uint32 and np.ndim(key) >= 1:
        return
    got = f"{type(key).__name__} {key!r}" if dtype is None else f"{dtype}{list(np.shape(key))}"
    raise TypeError(f"{name} must be a PRNG key (jax.random.key(seed)), got {got}")


def check_same_shape(names: Sequence[str], arrays: Sequence[Any]) -> None:
    """Raise ``ValueError`` naming the first array whose shape differs from the first one."""
    reference = np.shape(arrays[0])
    for name, array in zip(names[1:], arrays[1:], strict=True):
        if np.shape(array) != reference:
            raise ValueError(
                f"{name} must have the shape of {names[0]} {reference}, got {np.shape(array)}"
            )


def check_like(name: str, tree: Any, reference: str, like: Any) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``tree`` has the tree structure of
    ``like`` (named ``reference``) and each of its leaves the shape of ``like`` 's."""
    structure, expected = jax.tree_util.tree_structure(tree), jax.tree_util.tree_structure(like)
    if structure != expected:
        raise ValueError(
            f"{name} must have the tree structure of {reference}: {structure} vs {expected}"
        )
    leaves = jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(like)
    for leaf, other in zip(*leaves, strict=True):
        if np.shape(leaf) != np.shape(other):
            raise ValueError(
                f"{name} leaf of shape {np.shape(leaf)} does not match {reference} leaf of "
                f"shape {np.shape(other)}"
            )


def check_min_rank(name: str, array: Any, rank: int) -> None:
    """Raise ``ValueError`` if ``array`` has fewer than ``rank`` dimensions or an empty
    leading (time) axis."""
    if np.ndim(array) < rank:
        raise ValueError(
            f"{name} must have at least {rank} dimension(s), got shape {np.shape(array)}"
        )
    if np.shape(array)[0] == 0:
        raise ValueError(f"{name} must have at least one step, got shape {np.shape(array)}")

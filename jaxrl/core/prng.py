"""Threefry's random numbers, with its hash compiled at a few shapes instead of every shape.

JAX's default PRNG, Threefry-2x32, computes every key split and every draw as a hash of a
counter array of the requested shape. On a CPU, XLA compiles that hash as fused kernels of
that shape, so a program that splits keys into 2, 3, 10, 16, 24, 128 and 200 and draws
normals at its layers' and environments' shapes compiles the hash (two large kernels, 20
rounds of 32-bit arithmetic) again for every one of those shapes: in the 16-seed TRPO
Pendulum run they were 149 of 426 distinct kernels (``docs/benchmarks/speed.md``, "Compile
time").

:data:`BUCKETED_THREEFRY` is a PRNG implementation (``jax.extend.random.define_prng_impl``)
that computes **the same bits as Threefry for the same key**, bit for bit, but hashes the
counters ``0, 1, ..., B - 1`` of a bucket size ``B`` (:data:`BUCKETS`: 2, 16 or 256, the
smallest that holds the ``n`` values asked for) and keeps the first ``n``. Every call of a
bucket is the same computation, which XLA compiles once. Larger requests (a few shapes per
program: a layer's initialization, a minibatch permutation) are hashed at their own size, as
Threefry does: there a bucket would double the work of a hash that runs every update. A
bucket wastes at most 15/16 of a hash of at most 256 counters; a split in two (the commonest
request) has its own bucket, so an environment step's keys cost what they did (measured on a
2-core CPU: a 16-seed run took as long with the buckets as without, 44.0-47.8 s;
``docs/benchmarks/speed.md``).

The drivers (:func:`jaxrl.training.over_seeds`) run their programs with
:func:`bucketed_keys`: Threefry keys are rewrapped as :data:`BUCKETED_THREEFRY` keys on the
way in and back on the way out, so callers only ever see Threefry keys and every number is
the one Threefry gives. Only on CPU backends, where it was measured: on accelerators the
drivers batch thousands of seeds, whose small draws a bucket would pad, and what compiling
the hash costs there is unmeasured.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend.random import define_prng_impl, threefry2x32_p, threefry_prng_impl

Tree = TypeVar("Tree")

#: Bucket sizes: a request for ``n <= B`` values hashes the counters ``0 .. B - 1``; one for
#: more than the largest, its own ``n``.
BUCKETS: tuple[int, ...] = (2, 16, 256)


def bucket_size(n: int) -> int:
    """The number of counters hashed for ``n`` values: the smallest of :data:`BUCKETS` that
    is at least ``n``, or ``n`` itself above the largest."""
    return next((size for size in BUCKETS if n <= size), n)


def _hash_counters(key: jax.Array, shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """Threefry-2x32 of the 64-bit counters ``0 .. n - 1`` (``n`` the size of ``shape``, high
    words 0) under the raw key ``key`` (``uint32[2]``): two ``uint32[*shape]`` words, hashed
    at :func:`bucket_size` ``(n)``."""
    n = math.prod(shape)
    if n >= 2**32:  # Threefry's high counter words would be nonzero: not reproduced here
        raise ValueError(
            f"BUCKETED_THREEFRY draws fewer than 2**32 values per call, got {n}; draw in parts"
        )
    size = bucket_size(n)
    high, low = jnp.zeros((size,), jnp.uint32), lax.iota(jnp.uint32, size)
    first, second = threefry2x32_p.bind(key[0], key[1], high, low)
    return first[:n].reshape(shape), second[:n].reshape(shape)


def _split(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Raw keys ``uint32[*shape, 2]``: Threefry's (partitionable) split."""
    first, second = _hash_counters(key, shape)
    return jnp.stack([first, second], axis=len(shape))


def _random_bits(key: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    """``bit_width``-bit unsigned integers of ``shape``: Threefry's (partitionable) bits."""
    first, second = _hash_counters(key, shape)
    dtype = jnp.dtype(f"uint{bit_width}")
    if bit_width == 64:
        high = lax.convert_element_type(first, dtype)
        low = lax.convert_element_type(second, dtype)
        return lax.shift_left(high, jnp.asarray(32, dtype)) | low
    bits = first ^ second
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _fold_in(key: jax.Array, data: jax.Array) -> jax.Array:
    """Threefry's fold-in: the hash of the one counter ``data`` (as Threefry seeds it)."""
    counter = threefry_prng_impl.seed(jnp.asarray(data, jnp.uint32))
    first, second = threefry2x32_p.bind(key[0], key[1], counter[0], counter[1])
    return jnp.stack([first, second])


BUCKETED_THREEFRY = define_prng_impl(
    key_shape=(2,),
    seed=threefry_prng_impl.seed,
    split=_split,
    random_bits=_random_bits,
    fold_in=_fold_in,
    name="threefry2x32_bucketed",
    tag="frb",
)


def is_key(x: Any) -> bool:
    """Whether ``x`` is a typed PRNG key array (``jax.random.key``, any implementation);
    raw ``uint32`` keys are not."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def _is_key_of(x: Any, impl: Any) -> bool:
    """Whether ``x`` is a typed key array of the PRNG ``impl`` (a name or a spec)."""
    return is_key(x) and jax.random.key_impl(x) == impl


def _rewrap(tree: Tree, source: Any, target: Any) -> Tree:
    def one(x: Any) -> Any:
        if not _is_key_of(x, source):
            return x
        return jax.random.wrap_key_data(jax.random.key_data(x), impl=target)

    return jax.tree_util.tree_map(one, tree)


def to_bucketed(tree: Tree) -> Tree:
    """Every Threefry key array in ``tree`` as a :data:`BUCKETED_THREEFRY` key array (the
    same key data); other leaves, other PRNGs' keys and raw ``uint32`` keys unchanged."""
    return _rewrap(tree, threefry_prng_impl.name, BUCKETED_THREEFRY)


def to_threefry(tree: Tree) -> Tree:
    """Every :data:`BUCKETED_THREEFRY` key array in ``tree`` back as a Threefry key array."""
    return _rewrap(tree, BUCKETED_THREEFRY, threefry_prng_impl.name)


def bucketed_keys(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its Threefry key arguments drawn through :data:`BUCKETED_THREEFRY` and
    its key outputs returned as Threefry keys: the same numbers, fewer distinct kernels.

    A no-op (``fn`` itself runs) on a default backend that is not a CPU (see the module
    docstring) and with ``jax_threefry_partitionable`` off (Threefry's other counter layout,
    which :data:`BUCKETED_THREEFRY` does not reproduce). Decided when the wrapper is called
    (traced), so jit the wrapper, not ``fn``.
    """

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if jax.default_backend() != "cpu" or not jax.config.jax_threefry_partitionable:
            return fn(*args, **kwargs)
        args, kwargs = to_bucketed((args, kwargs))
        return to_threefry(fn(*args, **kwargs))

    return wrapped

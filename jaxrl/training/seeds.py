"""How one program trains many seeds: batched (``jax.vmap``) or one after another
(``lax.map``).

Both give a leading seed axis on every output, and each seed's numbers are its own (equal,
up to float rounding, to the seed trained alone). They differ in cost:

- ``"vmap"`` batches the seeds into every operation. On a GPU or TPU this is what makes many
  seeds nearly free. On a CPU it buys little (the CPU has a few cores, which one seed's
  matrix products already use) and it costs: batched ``while_loop`` s, such as NPG/TRPO's
  conjugate gradients and line search, run every seed until the slowest one is done, with
  every carried value masked at every iteration, and the batched program takes longer to
  trace and to compile.
- ``"map"`` runs the seeds one after another inside the one compiled program, each with the
  single-seed program's operations: on a CPU it compiles faster, and runs NPG/TRPO faster;
  DDPG's update (no loops, tiny operations whose per-call overhead a batch amortizes) runs
  faster batched.
- ``"auto"`` (the default of the drivers): ``"vmap"`` on accelerators; on a CPU ``"map"``
  for on-policy agents (NPG, TRPO) and ``"vmap"`` for the others, and for environments that
  say they batch seeds better (a true ``batches_seeds`` attribute: Brax's, whose physics
  steps are many small operations).

The figures behind these choices: ``docs/benchmarks/scaling.md``, "Seeds on a CPU".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.algorithms.protocol import Agent, batches_seeds_on_cpu
from jaxrl.core.prng import bucketed_keys

SeedAxis = Literal["auto", "vmap", "map"]
SEED_AXES: tuple[str, ...] = ("auto", "vmap", "map")


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """The PRNG keys of seeds ``seed, seed + 1, ..., seed + num_seeds - 1``, ``[S]``.

    The one seeding rule of both drivers and the command: seed ``s`` is
    ``jax.random.key(s)``, whatever the number of seeds it trains with, and a run splits it
    into its initialization, environment and run keys (:func:`split_seed_key`). So the same
    seed gives the same initial parameters on the jitted and the host driver, and seed ``s``
    of a run of several seeds equals the single-seed run with seed ``s``.
    """
    return jax.vmap(jax.random.key)(jnp.arange(seed, seed + num_seeds))


def split_seed_key(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(init, environment, run)`` keys of one seed's key (:func:`seed_keys`): the agent's
    initialization, the environments' resets (the host driver explores with it), and the
    run's collections, learning and evaluations.

    Raises:
      TypeError: ``key`` is no single PRNG key (an int, a batch of keys: naming
        :func:`over_seeds`, which trains a batch).
    """
    typed = jax.dtypes.issubdtype(jnp.result_type(key), jax.dtypes.prng_key)
    if jnp.shape(key) != (() if typed else (2,)):
        got = f"{type(key).__name__} {list(jnp.shape(key))}"
        raise TypeError(
            f"train: key must be one seed's PRNG key (jax.random.key(seed)), got {got}; "
            "over_seeds(train, agent=agent)(keys) trains a batch of seeds"
        )
    init_key, env_key, run_key = jax.random.split(key, 3)
    return init_key, env_key, run_key


def host_seed_keys(seeds: list[int]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The host driver's keys of seeds ``seeds`` (any integers, one per trained seed): per
    seed ``s``, :func:`split_seed_key` of :func:`seed_keys` ``(s, 1)``, the jitted driver's
    rule, as ``(init, explore, learn)`` keys, ``[S]`` each."""
    keys = jnp.stack([seed_keys(s, 1)[0] for s in seeds])
    return jax.vmap(split_seed_key)(keys)


def resolve_seed_axis(
    how: str, agent: Agent | None = None, env: Any = None, name: str = "seed_axis"
) -> Literal["vmap", "map"]:
    """``"vmap"`` or ``"map"`` for ``how`` (``"auto"`` decides from the default backend, the
    agent's :func:`jaxrl.algorithms.protocol.batches_seeds_on_cpu` and the environment's
    ``batches_seeds``; see the module docstring)."""
    if how not in SEED_AXES:
        raise ValueError(f"{name} must be one of {list(SEED_AXES)}, got {how!r}")
    if how != "auto":
        return how  # type: ignore[return-value]
    if jax.default_backend() != "cpu" or agent is None or getattr(env, "batches_seeds", False):
        return "vmap"
    return "vmap" if batches_seeds_on_cpu(agent) else "map"


def over_seeds(
    fn: Callable[..., Any], how: str = "auto", agent: Agent | None = None, env: Any = None
) -> Callable[..., Any]:
    """``fn`` over a leading seed axis of every argument, batched or one seed at a time.

    Args:
      fn: a pure per-seed function, e.g. ``train(key)`` from
        :func:`jaxrl.training.make_train` or ``TrainLoop.run_period(carry)``.
      how: ``"vmap"``, ``"map"`` or ``"auto"`` (see the module docstring).
      agent: the algorithm, which ``"auto"`` consults (its ``batches_seeds_on_cpu``).
      env: the environment, which ``"auto"`` consults (its ``batches_seeds``), if any.

    Returns:
      ``(*xs) -> ys``: every ``x`` has a leading seed axis ``[S, ...]``, and so does every
      leaf of ``ys``; as ``jax.vmap(fn)``. Jit it: ``jax.jit(over_seeds(train, agent=agent))``.
      On a CPU its random numbers are drawn through :func:`jaxrl.core.bucketed_keys`
      (the same numbers as Threefry, compiled as fewer kernels); its key outputs are
      Threefry keys.
    """
    if resolve_seed_axis(how, agent, env, "over_seeds: how") == "vmap":
        return bucketed_keys(jax.vmap(fn))

    def one_after_another(*xs: Any) -> Any:
        return lax.map(lambda args: fn(*args), xs)

    return bucketed_keys(one_after_another)

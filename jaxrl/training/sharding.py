"""Run many seeds across every device: the seed axis sharded with ``jax.sharding``.

``train_sharded(train, keys)`` is ``jax.jit(jax.vmap(train))(keys)`` with the seed axis of
the keys, and so of every output, split over a one-axis device mesh. The same call uses one
CPU, all GPUs of a host, a TPU slice, or (after :func:`initialize_distributed`) the devices of
every host of a multi-host job. Results equal the unsharded ones: each seed's computation is
independent, so sharding only decides where it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

SEED_AXIS = "seeds"


def seed_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh named ``"seeds"`` over ``devices`` (default: all global devices)."""
    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.asarray(devices), (SEED_AXIS,))


def train_sharded(
    train: Callable[[jax.Array], Any], keys: jax.Array, mesh: Mesh | None = None
) -> Any:
    """Run ``jax.vmap(train)`` over ``keys`` with the seed axis sharded over ``mesh``.

    Args:
      train: a pure ``train(key) -> outputs`` (e.g. from :func:`jaxrl.training.make_train`).
      keys: ``[S]`` PRNG keys, one per seed; ``S`` must be a multiple of the number of
        devices in the mesh.
      mesh: the device mesh (default :func:`seed_mesh` over all devices).

    Returns:
      ``outputs`` with a leading seed axis, sharded the same way (``jax.device_get`` gathers).
    """
    mesh = seed_mesh() if mesh is None else mesh
    num_devices = mesh.devices.size
    num_seeds = keys.shape[0]
    if num_seeds % num_devices:
        raise ValueError(
            f"keys: the number of seeds ({num_seeds}) must be a multiple of the number of "
            f"devices ({num_devices})"
        )
    sharding = NamedSharding(mesh, PartitionSpec(SEED_AXIS))
    typed = jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
    key_data = np.asarray(jax.random.key_data(keys) if typed else keys)
    # Built from a callback so every process of a multi-host job supplies its own shards.
    global_keys = jax.make_array_from_callback(key_data.shape, sharding, lambda i: key_data[i])

    def train_from_data(data: jax.Array) -> Any:
        return train(jax.random.wrap_key_data(data) if typed else data)

    return jax.jit(jax.vmap(train_from_data), in_shardings=sharding, out_shardings=sharding)(
        global_keys
    )


def initialize_distributed(**kwargs: Any) -> None:
    """Join a multi-host job (``jax.distributed.initialize``), after which ``jax.devices()``
    and so :func:`seed_mesh` span every host. Call once per process, before any computation;
    keyword arguments (coordinator_address, num_processes, process_id) pass through, and
    on managed clusters (SLURM, TPU pods) none are needed."""
    jax.distributed.initialize(**kwargs)

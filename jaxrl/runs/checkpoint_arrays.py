"""A checkpoint's arrays: a pytree flattened into plain arrays with a JSON description
(leaf paths, shapes, dtypes, PRNG key impls, a CRC-32 of each array) for orbax to write, and
read back without orbax.

A restore reads the arrays with TensorStore, one blocking read per array, rather than through
orbax's restore: orbax reads them in tasks of an event loop it closes as soon as one read fails,
and the reads still under way then each print a traceback from TensorStore's threads. A damaged
file is one :class:`CheckpointDamaged` instead; only the files a restore needs are read (the
arrays' database under ``tree/`` and ``meta/metadata``).
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.core.prng import is_key


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or does not fit the run."""


class CheckpointDamaged(CheckpointError):
    """A checkpoint's files cannot be read back as they were written."""


def several_processes() -> bool:
    return jax.process_count() > 1


def encode(tree: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flatten ``tree`` into ``{"00000": leaf, ...}`` of plain arrays (typed PRNG keys as
    ``jax.random.key_data``) and a JSON description: leaf paths, shapes, dtypes, key impls
    and a CRC-32 of each array's bytes (a restore checks it: damage is never silent). An
    array with no elements (MJX's state has some) is described only: orbax saves none."""
    leaves_with_paths, _ = jax.tree_util.tree_flatten_with_path(tree)
    host = several_processes()  # orbax writes no process-local device arrays there
    flat, described = {}, []
    for index, (path, leaf) in enumerate(leaves_with_paths):
        impl = None
        if is_key(leaf):
            impl = str(jax.random.key_impl(leaf))
            leaf = jax.random.key_data(leaf)
        if np.size(leaf) > 0:
            flat[f"{index:05d}"] = np.asarray(leaf) if host else leaf
        described.append(
            {
                "path": jax.tree_util.keystr(path),
                "shape": list(np.shape(leaf)),
                "dtype": str(np.asarray(leaf).dtype) if impl is None else str(leaf.dtype),
                "key_impl": impl,
                "crc32": _crc32(leaf),
            }
        )
    return flat, {"leaves": described}


def _crc32(array: Any) -> int:
    return zlib.crc32(np.ascontiguousarray(np.asarray(array)).tobytes())


def check_sums(flat: dict[str, Any], description: dict[str, Any], where: Path) -> None:
    """That each restored array has the CRC-32 it was saved with (checkpoints written before
    the sums were recorded have none to check)."""
    for index, entry in enumerate(description["leaves"]):
        expected = entry.get("crc32")
        if f"{index:05d}" not in flat:  # an array with no elements: nothing was saved
            continue
        if expected is not None and _crc32(flat[f"{index:05d}"]) != expected:
            raise CheckpointDamaged(
                f"checkpoint {where} is damaged: {entry['path'] or 'its array'} differs from "
                "what was saved (CRC-32)"
            )


def read_arrays(tree_dir: Path, description: dict[str, Any]) -> dict[str, Any]:
    """The saved arrays of a checkpoint (``{"00000": array, ...}``, as :func:`encode` names
    them), read from orbax's array database (OCDBT, one zarr array per leaf) with blocking
    TensorStore reads: on this process's first device, or as NumPy arrays in a job of several
    processes (no process-local device arrays there).

    Raises:
      CheckpointDamaged: a file is missing or cannot be decoded (the first reason).
    """
    import tensorstore as ts

    names = [
        f"{index:05d}"
        for index, entry in enumerate(description["leaves"])
        if math.prod(entry["shape"]) > 0  # saved as its description only (encode)
    ]
    context = ts.Context()  # one cache of the database's manifest and b-tree for every array
    base = {"driver": "file", "path": str(tree_dir) + "/"}
    opened = [
        ts.open(
            {
                "driver": "zarr",
                "kvstore": {"driver": "ocdbt", "base": base, "path": f"{name}/"},
                "fill_missing_data_reads": False,  # a missing chunk is damage, not zeros
            },
            open=True,
            read=True,
            context=context,
        )
        for name in names
    ]
    # Restore onto this process's first device, whatever device wrote the checkpoint (in a
    # job of several processes jax.devices()[0] may be another process's).
    device = None if several_processes() else jax.local_devices()[0]

    def damaged(name: str, error: Exception) -> CheckpointDamaged:
        path = description["leaves"][int(name)]["path"] or "its array"
        return CheckpointDamaged(f"reading {path}: {_tensorstore_reason(error)}")

    # Every array's read starts before any is waited for; reads still under way when one
    # fails run no Python code (no event loop is involved) and end unseen.
    reads = []
    for name, future in zip(names, opened, strict=True):
        try:
            reads.append(future.result().read())
        except ValueError as error:  # TensorStore's errors: a file missing, a checksum, ...
            raise damaged(name, error) from None
    flat = {}
    for name, read in zip(names, reads, strict=True):
        try:
            array = read.result()
        except ValueError as error:
            raise damaged(name, error) from None
        flat[name] = array if device is None else jax.device_put(array, device)
    return flat


def _tensorstore_reason(error: Exception) -> str:
    """The innermost clause of a TensorStore error and its status (the message nests every
    layer the read passed through and appends the JSON specs), e.g. ``Error decoding b-tree
    node: CRC-32C checksum verification failed: ... (data loss)``."""
    text = " ".join(str(error).split(" [tensorstore_spec")[0].split())
    status, _, rest = text.partition(": ")
    if not (status.isupper() and rest):  # no status code in front
        status, rest = "", text
    clause = "Error " + rest.rsplit(": Error ", 1)[-1] if ": Error " in rest else rest
    return f"{clause} ({status.lower().replace('_', ' ')})" if status else clause


def decode(flat: dict[str, Any], like: Any, description: dict[str, Any]) -> Any:
    """Rebuild a tree shaped like ``like`` from :func:`encode`'s flat dict and description."""
    leaves, treedef = jax.tree_util.tree_flatten(like)
    restored = []
    for index, (template, entry) in enumerate(zip(leaves, description["leaves"], strict=True)):
        # An array with no elements was described only (encode).
        value = flat.get(f"{index:05d}", np.zeros(entry["shape"], entry["dtype"]))
        if is_key(template):
            value = jax.random.wrap_key_data(value, impl=entry["key_impl"])
        restored.append(value)
    return jax.tree_util.tree_unflatten(treedef, restored)

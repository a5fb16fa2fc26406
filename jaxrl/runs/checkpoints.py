"""Checkpoints of any pytree with orbax, written atomically.

A checkpoint is one orbax step directory holding the pytree's leaves (typed PRNG keys as
their key data) and a small JSON of metadata. orbax writes each step into a temporary
directory and renames it when complete (``commit_success.txt`` marks it), so an interrupted
save leaves only a temporary directory; :meth:`CheckpointStore.steps` lists finalized steps
only, and :meth:`CheckpointStore.prune_after` removes anything newer than the step a run
resumes from (incomplete directories included) before new checkpoints are written.

In a job of several processes every process uses the store by itself (orbax's
``active_processes`` of one: no process waits for another inside orbax), with NumPy copies of
the leaves (orbax refuses to write one process's device arrays in a multi-process job): the
runner has process 0 alone save whole arrays (gathered from every process), and every process
restore them, from a directory all of them read. The files are the same either way, so a run
resumes with any number of processes.

A restore reads the arrays with TensorStore, one blocking read per array, rather than through
orbax's restore: orbax reads them in tasks of an event loop it closes as soon as one read fails,
and the reads still under way then each print a traceback from TensorStore's threads. A damaged
file is one :class:`CheckpointDamaged` instead; only the files a restore needs are read (the
arrays' database under ``tree/`` and ``meta/metadata``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import shutil
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.core.prng import is_key

COMMIT_MARKER = "commit_success.txt"
_TREE, _META = "tree", "meta"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or does not fit the run."""


class CheckpointDamaged(CheckpointError):
    """A checkpoint's files cannot be read back as they were written."""


def _quiet_orbax() -> None:
    # orbax logs every save and restore through absl at INFO/WARNING level, and a failed
    # background write with its traceback at ERROR level; the failure reaches the caller
    # as an exception (the command's one line), so none of it is shown.
    for name in ("absl", "orbax", "orbax.checkpoint"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _several_processes() -> bool:
    return jax.process_count() > 1


def encode(tree: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Flatten ``tree`` into ``{"00000": leaf, ...}`` of plain arrays (typed PRNG keys as
    ``jax.random.key_data``) and a JSON description: leaf paths, shapes, dtypes, key impls
    and a CRC-32 of each array's bytes (a restore checks it: damage is never silent). An
    array with no elements (MJX's state has some) is described only: orbax saves none."""
    leaves_with_paths, _ = jax.tree_util.tree_flatten_with_path(tree)
    host = _several_processes()  # orbax writes no process-local device arrays there
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


def _check_sums(flat: dict[str, Any], description: dict[str, Any], where: Path) -> None:
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


def _read_arrays(tree_dir: Path, description: dict[str, Any]) -> dict[str, Any]:
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
    device = None if _several_processes() else jax.local_devices()[0]

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


def _manager_options(**options: Any) -> Any:
    """orbax's ``CheckpointManagerOptions`` of the saving manager; in a job of several
    processes, for this process alone (orbax then cannot create the directory itself)."""
    import orbax.checkpoint as ocp

    if _several_processes():
        index = jax.process_index()
        alone = ocp.options.MultiprocessingOptions(primary_host=index, active_processes={index})
        options.update(create=False, multiprocessing_options=alone)
    return ocp.CheckpointManagerOptions(**options)


@dataclasses.dataclass(frozen=True)
class _Kept:
    """orbax's preservation policy of a :class:`CheckpointStore`: its newest ``max_to_keep``
    steps and those its ``preserve`` names."""

    store: CheckpointStore

    def should_preserve(self, checkpoints: Sequence[Any], *, context: Any) -> list[bool]:
        del context
        steps = sorted(info.step for info in checkpoints)
        kept = set(steps[-self.store.max_to_keep :])
        if self.store.preserve is not None and len(steps) > len(kept):
            kept |= set(self.store.preserve(steps))
        return [info.step in kept for info in checkpoints]


class CheckpointStore:
    """The checkpoints of one run: a directory of orbax steps.

    Args:
      directory: where the steps live (created on the first save).
      max_to_keep: the newest finalized checkpoints kept (orbax deletes the older ones).
      preserve: ``steps -> kept``: of the finalized ``steps``, those kept at any age (a run's
        best-evaluated one, :func:`jaxrl.runs.bookkeeping.best_checkpoint`), asked by the
        thread of orbax's that finalizes a save.
    """

    def __init__(
        self,
        directory: str | Path,
        max_to_keep: int = 2,
        preserve: Callable[[list[int]], Iterable[int]] | None = None,
    ) -> None:
        self.directory = Path(directory).absolute()
        self.max_to_keep = max_to_keep
        self.preserve = preserve
        self._manager: Any = None

    # ------------------------------------------------------------------ listing
    def steps(self) -> list[int]:
        """Finalized steps, oldest first (temporary and unmarked directories are skipped)."""
        if not self.directory.is_dir():
            return []
        return sorted(
            int(path.name)
            for path in self.directory.iterdir()
            if path.is_dir() and path.name.isdigit() and (path / COMMIT_MARKER).is_file()
        )

    def latest_step(self) -> int | None:
        """The newest finalized step, or None."""
        return (self.steps() or [None])[-1]

    def path(self, step: int) -> Path:
        """The directory of ``step``."""
        return self.directory / str(step)

    def prune_after(self, step: int | None) -> list[Path]:
        """Delete step directories newer than ``step`` and every incomplete one (temporary
        directories of interrupted saves, step directories without the commit marker), so a
        resumed run writes its next checkpoints on a clean slate. Returns what was removed."""
        self.close()
        removed = []
        if not self.directory.is_dir():
            return removed
        finalized = set(self.steps())
        for path in sorted(self.directory.iterdir()):
            if not path.is_dir():
                continue
            name, head = path.name, path.name.split(".", 1)[0]
            newer = head.isdigit() and step is not None and int(head) > step
            incomplete = not name.isdigit() or int(name) not in finalized
            if (head.isdigit() and (newer or incomplete)) or ".orbax-checkpoint-tmp" in name:
                shutil.rmtree(path)
                removed.append(path)
        return removed

    # ------------------------------------------------------------------ saving
    def _get_manager(self) -> Any:
        if self._manager is None:
            import orbax.checkpoint as ocp

            _quiet_orbax()
            self.directory.mkdir(parents=True, exist_ok=True)
            options = _manager_options(preservation_policy=_Kept(self), create=True)
            self._manager = ocp.CheckpointManager(self.directory, options=options)
        return self._manager

    def save(self, step: int, tree: Any, metadata: dict[str, Any] | None = None) -> Path:
        """Start writing ``tree`` and ``metadata`` (JSON) as ``step``; the write finishes in
        the background (:meth:`wait` or :meth:`close` to finish it). A Ctrl-C or SIGTERM
        while the write starts is delivered once it has started
        (:func:`jaxrl.runs.preemption.interrupts_deferred`)."""
        import orbax.checkpoint as ocp

        from jaxrl.runs.preemption import interrupts_deferred

        flat, description = encode(tree)
        meta = {**(metadata or {}), "step": step, **description}
        with interrupts_deferred():
            self._get_manager().save(
                step,
                args=ocp.args.Composite(
                    **{_TREE: ocp.args.StandardSave(flat), _META: ocp.args.JsonSave(meta)}
                ),
                force=True,
            )
        return self.path(step)

    def wait(self) -> None:
        """Block until pending saves are finalized."""
        if self._manager is not None:
            self._manager.wait_until_finished()

    def close(self) -> None:
        """Finish pending saves and release orbax's resources."""
        if self._manager is not None:
            self._manager.wait_until_finished()
            self._manager.close()
            self._manager = None

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ loading
    def metadata(self, step: int) -> dict[str, Any]:
        """The JSON metadata of ``step``."""
        path = self.path(step) / _META / "metadata"
        if not path.is_file():
            raise CheckpointDamaged(f"checkpoint {self.path(step)} has no metadata")
        try:
            return json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise CheckpointDamaged(f"checkpoint {self.path(step)}: {path} is damaged") from None

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Load ``step`` (default: the latest finalized one) into a tree shaped like ``like``
        (a tree of arrays or ``jax.ShapeDtypeStruct``).

        Raises:
          CheckpointError: no finalized checkpoint, or one that does not fit ``like``.
        """
        step = self.latest_step() if step is None else step
        if step is None or step not in self.steps():
            raise CheckpointError(f"no finalized checkpoint in {self.directory}")
        meta = self.metadata(step)
        leaves = jax.tree_util.tree_leaves(like)
        saved = meta.get("leaves", [])
        if len(saved) != len(leaves):
            raise CheckpointError(
                f"checkpoint {self.path(step)} holds {len(saved)} arrays, the run needs "
                f"{len(leaves)}: it was written by a different configuration"
            )
        for index, (entry, leaf) in enumerate(zip(saved, leaves, strict=True)):
            saved_as = jax.eval_shape(jax.random.key_data, leaf) if is_key(leaf) else leaf
            shape = tuple(np.shape(saved_as))  # a typed PRNG key is saved as its key data
            if tuple(entry["shape"]) != shape or (entry["key_impl"] is None) != (not is_key(leaf)):
                raise CheckpointError(
                    f"checkpoint {self.path(step)}: {entry['path']} has shape "
                    f"{tuple(entry['shape'])}, the run needs {shape} (array {index})"
                )
        try:
            flat = _read_arrays(self.path(step) / _TREE, meta)
        except CheckpointDamaged as damage:
            raise CheckpointDamaged(f"checkpoint {self.path(step)} is damaged: {damage}") from None
        for name, array in flat.items():
            entry = saved[int(name)]
            if tuple(array.shape) != tuple(entry["shape"]) or str(array.dtype) != entry["dtype"]:
                raise CheckpointDamaged(
                    f"checkpoint {self.path(step)} is damaged: {entry['path'] or 'its array'} "
                    f"is {array.dtype}{list(array.shape)}, saved as {entry['dtype']}"
                    f"{entry['shape']}"
                )
        _check_sums(flat, meta, self.path(step))
        return decode(flat, like, meta), meta

    def restore_newest(self, like: Any) -> tuple[Any, dict[str, Any], list[tuple[int, str]]]:
        """:meth:`restore` of the newest checkpoint that restores: damaged newer ones are
        skipped, each with why (``[(step, reason)]``).

        Raises:
          CheckpointError: none restores, or one does not fit the run (a configuration
            mismatch is no damage: older checkpoints would not fit either).
        """
        skipped = []
        for step in reversed(self.steps()):
            try:
                tree, meta = self.restore(like, step)
            except CheckpointDamaged as damage:
                skipped.append((step, str(damage)))
                continue
            return tree, meta, skipped
        reasons = "; ".join(reason for _, reason in skipped) or "none is finalized"
        raise CheckpointError(f"no checkpoint in {self.directory} restores ({reasons})")

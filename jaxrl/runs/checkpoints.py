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

The arrays' format (how a tree is flattened, described and checked, and read back without
orbax) is :mod:`jaxrl.runs.checkpoint_arrays`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.core.prng import is_key
from jaxrl.runs.checkpoint_arrays import (
    CheckpointDamaged,
    CheckpointError,
    check_sums,
    decode,
    encode,
    read_arrays,
    several_processes,
)

COMMIT_MARKER = "commit_success.txt"
_TREE, _META = "tree", "meta"


def _quiet_orbax() -> None:
    # orbax logs every save and restore through absl at INFO/WARNING level, and a failed
    # background write with its traceback at ERROR level; the failure reaches the caller
    # as an exception (the command's one line), so none of it is shown.
    for name in ("absl", "orbax", "orbax.checkpoint"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _without_stray_callbacks(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """``sys.unraisablehook`` less the stray callbacks of a failed save's writes: a failed
    write closes orbax's event loop while TensorStore still calls back into it, each call a
    ``RuntimeError('Event loop is closed')`` traceback; the failure itself is raised."""

    def without(unraisable: Any) -> None:
        value = unraisable.exc_value
        if not (isinstance(value, RuntimeError) and str(value) == "Event loop is closed"):
            hook(unraisable)

    without.hook = hook  # type: ignore[attr-defined]
    return without


def _manager_options(**options: Any) -> Any:
    """orbax's ``CheckpointManagerOptions`` of the saving manager; in a job of several
    processes, for this process alone (orbax then cannot create the directory itself)."""
    import orbax.checkpoint as ocp

    if several_processes():
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
        self._hook: Any = None

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
            self._hook = sys.unraisablehook = _without_stray_callbacks(sys.unraisablehook)
        return self._manager

    def _release(self, manager: Any) -> None:
        self._manager = None
        try:
            manager.close()
        finally:
            if sys.unraisablehook is self._hook:
                sys.unraisablehook = self._hook.hook

    def save(self, step: int, tree: Any, metadata: dict[str, Any] | None = None) -> Path:
        """Start writing ``tree`` and ``metadata`` (JSON) as ``step``; the write finishes in
        the background (:meth:`wait` or :meth:`close` to finish it; a failed write raises
        there or in the next save, as :meth:`wait` says). A Ctrl-C or SIGTERM while the write
        starts is delivered once it has started
        (:func:`jaxrl.runs.preemption.interrupts_deferred`)."""
        import orbax.checkpoint as ocp

        from jaxrl.runs.preemption import interrupts_deferred

        flat, description = encode(tree)
        meta = {**(metadata or {}), "step": step, **description}
        args = ocp.args.Composite(
            **{_TREE: ocp.args.StandardSave(flat), _META: ocp.args.JsonSave(meta)}
        )
        with interrupts_deferred():
            try:
                self._get_manager().save(step, args=args, force=True)
            except Exception:  # this save's failure, or the one before it (orbax raises it here)
                self._abandon()
                raise
        return self.path(step)

    def wait(self) -> None:
        """Block until pending saves are finalized. When one failed, its failure is raised
        once every write of that save has ended and its incomplete directory is removed."""
        if self._manager is None:
            return
        try:
            self._manager.wait_until_finished()
        except Exception:
            self._abandon()
            raise

    def close(self) -> None:
        """Finish pending saves (as :meth:`wait`) and release orbax's resources."""
        if self._manager is not None:
            self.wait()
            self._release(self._manager)

    def _abandon(self) -> None:
        """After a failed save: orbax reports a save's first failed write while its other
        writes go on in their threads, so wait for those, release the manager and remove the
        save's temporary directory; nothing then writes into the run behind its back (a run
        resumed in this process would race the stray writes)."""
        manager = self._manager
        checkpointer = getattr(manager, "_checkpointer", None)
        writes = getattr(getattr(checkpointer, "_async_manager", None), "_commit_futures", None)
        for write in writes or ():
            with contextlib.suppress(BaseException):
                write.result()
        if manager is not None:
            with contextlib.suppress(BaseException):
                self._release(manager)
        # A save whose first failed write raised in save() itself (an array's metadata,
        # written while its arrays' writes start) leaves those writes running, out of
        # orbax's reach: they may make the temporary directory again. It is removed until
        # nothing has reappeared for 0.3 s (5 s at most).
        quiet = start = time.monotonic()
        while time.monotonic() - quiet < 0.3 and time.monotonic() - start < 5.0:
            for path in self.directory.glob("*.orbax-checkpoint-tmp"):
                shutil.rmtree(path, ignore_errors=True)
                quiet = time.monotonic()
            time.sleep(0.05)

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
            flat = read_arrays(self.path(step) / _TREE, meta)
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
        check_sums(flat, meta, self.path(step))
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

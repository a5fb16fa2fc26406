"""Write faults: a file write that fails (ENOSPC, as from a full disk) during ``jaxrl train``
ends the command in one line that names the file and how to continue (nothing else is
printed, from any thread), leaves every file the
run had written readable, and the run continued from there ends with an uninterrupted run's
numbers (the JAX driver: exactly).

The fault is injected in this process at a write of each file the run writes (its first and
its last write), through Python's ``open`` (which ``pathlib``, ``csv``, matplotlib and
TensorBoard's writer use); checkpoints are written by orbax's own I/O and committed only
when whole (tests/reliability/test_interrupted_runs.py kills the process while one is
written).
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from jaxrl.cli import main
from jaxrl.runs import read_csv
from jaxrl.runs.checkpoints import CheckpointStore

TINY = [
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--num-seeds", "2", "--total-steps", "512"),
    *("--checkpoint-every", "1"),
]
REAL_OPEN = builtins.open


def _kind(path: Path) -> str:
    """The file a write is for: a temporary file (``.NAME.tmp.SUFFIX``) counts as its
    target; TensorBoard's event files as one kind per seed directory."""
    name = re.sub(r"^\.(.*)\.tmp(\.[^.]*)?$", r"\1\2", path.name)
    if name.startswith("events.out.tfevents"):
        return f"{path.parent.name}/events"
    return name


class Writes:
    """Python's ``open`` counting the writes under ``root`` by file kind, and raising ENOSPC
    at the ``fail`` one (``(kind, n)``: the n-th write of that kind)."""

    def __init__(self, root: Path, fail: tuple[str, int] | None = None) -> None:
        self.root, self.fail, self.seen = str(root), fail, Counter()

    def __call__(self, file, mode="r", *args, **kwargs):
        if isinstance(file, str | os.PathLike) and any(c in mode for c in "wax+"):
            path = Path(file)
            if str(path.resolve()).startswith(self.root):
                kind = _kind(path)
                self.seen[kind] += 1
                if (kind, self.seen[kind]) == self.fail:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return REAL_OPEN(file, mode, *args, **kwargs)


def _train(monkeypatch, writes: Writes, *args) -> int:
    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", writes)
        patch.setattr(io, "open", writes)
        return main(["train", "trpo", *map(str, args)])


def _readable(run_dir: Path) -> None:
    """Every file of the run reads: JSON parses, CSVs parse, no temporary file or directory
    (ours, ``.NAME.tmp``; orbax's, ``STEP.orbax-checkpoint-tmp``) is left."""
    for path in run_dir.rglob("*"):
        assert ".tmp" not in path.name and not path.name.endswith("-tmp"), path
        if path.suffix == ".json" and "checkpoints" not in path.parts:
            json.loads(path.read_text())
        if path.suffix == ".csv":
            read_csv(path)


def test_a_failed_checkpoint_write_is_raised_once_that_saves_every_write_has_ended(
    tmp_path, monkeypatch
):
    """orbax reports a save's first failed write while its other writes still run; the store
    raises it only when they have ended, with the save's temporary directory removed, so a
    run resumed in the same process (a notebook's next cell) writes on a clean slate."""
    tree = {f"layer_{i}": np.full((512, 512), float(i), np.float32) for i in range(8)}
    store = CheckpointStore(tmp_path / "checkpoints")
    with monkeypatch.context() as patch:
        writes = Writes(tmp_path.resolve(), ("metadata", 1))
        patch.setattr(builtins, "open", writes)
        patch.setattr(io, "open", writes)
        with pytest.raises(OSError, match="No space left on device"):
            store.save(1, tree)
            store.wait()
    left = sorted(str(path) for path in tmp_path.rglob("*"))
    assert not [path for path in left if "tmp" in Path(path).name], left
    time.sleep(0.3)
    assert sorted(str(path) for path in tmp_path.rglob("*")) == left
    store.save(1, tree)
    store.close()
    restored, _ = store.restore(tree)
    assert store.steps() == [1]
    np.testing.assert_array_equal(restored["layer_7"], tree["layer_7"])


def _evals(run_dir: Path) -> dict[str, np.ndarray]:
    return {k: v for k, v in read_csv(run_dir / "evals.csv").items() if k != "wall_time"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter]:
    """An uninterrupted run, and its writes by file kind."""
    root = tmp_path_factory.mktemp("plain").resolve()
    writes = Writes(root)
    with pytest.MonkeyPatch.context() as patch:
        assert _train(patch, writes, *TINY, "--run-dir", root / "run") == 0
    return root / "run", writes.seen


@pytest.mark.slow
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_failed_write_of_each_file_ends_in_one_line_and_loses_nothing(
    plain, monkeypatch, tmp_path, capsys
):
    plain_dir, seen = plain
    kinds = sorted(seen)
    assert {"config.json", "evals.csv", "updates.csv", "final_eval.json"} <= set(kinds), kinds
    points = sorted({(kind, n) for kind in kinds for n in (1, seen[kind])})
    for number, (kind, n) in enumerate(points):
        run_dir = (tmp_path / f"run-{number}").resolve()
        capsys.readouterr()
        status = _train(
            monkeypatch, Writes(tmp_path.resolve(), (kind, n)), *TINY, "--run-dir", run_dir
        )
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("jaxrl: error:")]
        assert status == 1, (kind, n, err[-2000:])
        assert "Traceback" not in err, err[-3000:]
        assert len(lines) == 1 and "No space left on device" in lines[0], (kind, n, err)
        assert kind.split("/")[-1].split(".")[0] in lines[0], (kind, lines[0])
        _readable(run_dir)
        command = lines[0].split("continue with: jaxrl ", 1)[1].split()
        assert _train(monkeypatch, Writes(tmp_path.resolve()), *command[2:]) == 0, (kind, n)
        _readable(run_dir)
        got, want = _evals(run_dir), _evals(plain_dir)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{kind} #{n}: {name}")
        assert (run_dir / "final_eval.json").read_text() == (
            plain_dir / "final_eval.json"
        ).read_text(), (kind, n)

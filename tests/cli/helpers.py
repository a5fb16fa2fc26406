"""Shared pieces of the ``jaxrl`` command tests."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import struct
import sys
from pathlib import Path

import pytest

from jaxrl.config import RunConfig

# Tiny runs: 2 seeds, 4 environments x 32 steps per update, one update per evaluation period.
TINY = [
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--num-seeds", "2"),
]
TRPO_RUN = ["train", "trpo", *TINY, "--total-steps", "512", "--checkpoint-every", "2"]


def jaxrl_command() -> list[str]:
    """The installed console script of this interpreter (``python -m jaxrl`` without one)."""
    script = Path(sys.executable).parent / "jaxrl"
    if script.exists():
        return [str(script)]
    found = shutil.which("jaxrl")
    return [found] if found else [sys.executable, "-m", "jaxrl"]


def ctrl_c_as_in_a_terminal() -> None:
    """The ``preexec_fn`` of a command a test sends Ctrl-C: SIGINT at its default
    disposition, as in a terminal. A process started in the background of a
    non-interactive shell (CI scripts can run pytest so) inherits SIGINT ignored, and
    Python then installs no Ctrl-C handler (and a command keeps it ignored, as it should)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclasses.dataclass(frozen=True)
class Result:
    """A finished command."""

    returncode: int
    stdout: str
    stderr: str

    def check(self) -> Result:
        assert self.returncode == 0, f"exit {self.returncode}\n{self.stdout}\n{self.stderr}"
        return self


def single_error_line(result: Result) -> str:
    """The one stderr line of a rejected command (asserting exit 2 and no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("jaxrl: error: ")
    return lines[0]


def leaves_equal(a: object, b: object) -> bool:
    """Bitwise equality of two pytrees (typed PRNG keys compared by their key data)."""
    import jax
    import numpy as np

    def data(x: object) -> np.ndarray:
        if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    left, right = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(left) == len(right) and all(
        np.array_equal(data(x), data(y)) for x, y in zip(left, right, strict=True)
    )


def make_config(**changes: object) -> RunConfig:
    """A tiny TRPO run on Pendulum-v1 (the jitted driver), with ``changes``."""
    values = dict(
        algo="trpo",
        env="Pendulum-v1",
        backend="jax",
        num_envs=4,
        num_steps=8,
        total_steps=320,
        eval_every=32,
        eval_episodes=1,
        seed=0,
        num_seeds=1,
        checkpoint_every=1,
        hyperparameters={},
    )
    return RunConfig(**{**values, **changes})


def error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    from jaxrl import cli

    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jaxrl: error: "), err
    return err.strip()


def tensorboard_scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` from the TFRecord event files in ``directory``."""
    from jaxrl.runs.metrics import summary_writer_class

    summary_writer_class()  # imports tensorboardX (and its protos) without torch
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    files = sorted(directory.glob("events.out.tfevents.*"))
    assert files, f"no event file in {directory}"
    for file in files:
        data = file.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            record = data[offset + 12 : offset + 12 + length]
            offset += 12 + length + 4
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def as_columns(rows: list[dict]) -> dict[str, list]:
    """Rows (dicts) as the metrics' columns (:data:`jaxrl.runs.metrics.Columns`): every name
    any row carries, NaN where a row lacks it."""
    names = dict.fromkeys(name for row in rows for name in row)
    return {name: [row.get(name, float("nan")) for row in rows] for name in names}


def assert_kept_checkpoints(run_dir: Path, newest: list[int]) -> None:
    """A run's checkpoints are its ``newest`` and, besides them, at most its best-evaluated
    one (``jaxrl.runs.bookkeeping.best_checkpoint``): which that is depends on the returns."""
    from jaxrl.runs.bookkeeping import best_checkpoint
    from jaxrl.runs.checkpoints import CheckpointStore
    from jaxrl.runs.run_dir import RunDir

    store = CheckpointStore(Path(run_dir) / "checkpoints")
    steps = store.steps()
    assert steps[-len(newest) :] == newest, steps
    older = steps[: -len(newest)]
    assert older in ([], best_checkpoint(RunDir(Path(run_dir)), steps)), steps


def saved_by_an_earlier_version(description: Path, setting: str = "eval_alongside") -> None:
    """Rewrite a sweep's or study's saved description as a version without the run setting
    ``setting`` wrote it (the setting came later; its default keeps the old behaviour)."""
    saved = json.loads(description.read_text())
    del saved["base"]["run"][setting]
    description.write_text(json.dumps(saved, indent=2) + "\n")

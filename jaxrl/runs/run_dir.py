"""The directory of one run and what it holds.

::

    RUN_DIR/
      config.json          resolved configuration (RunConfig), rewritten on resume
      updates.csv          one row per seed and update (learning phase)
      evals.csv            one row per seed and evaluation
      tensorboard/seed_<i>/events.out.tfevents.*
      learning_curve.png   mean evaluation return across seeds, spread shaded
      final_eval.json      the final policy's deterministic and stochastic evaluations
      checkpoints/<period>/  orbax checkpoints, the newest kept (written atomically)
      wandb_id, wandb/     with --logger wandb: the wandb run's id and wandb's files
                           (jaxrl.runs.tracking); tensorboard/ only with --logger tensorboard
      .lock                who trains the run now (RunDir.claimed), empty between trainings
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path


class RunDirError(ValueError):
    """A run directory is missing, not a run, or already in use."""


LOCK = ".lock"
"""The file of :meth:`RunDir.claimed`: a folder that holds only it is still an empty one."""


@dataclasses.dataclass(frozen=True)
class RunDir:
    """Paths inside a run directory."""

    path: Path

    @property
    def config(self) -> Path:
        return self.path / "config.json"

    @property
    def updates_csv(self) -> Path:
        return self.path / "updates.csv"

    @property
    def evals_csv(self) -> Path:
        return self.path / "evals.csv"

    @property
    def tensorboard(self) -> Path:
        return self.path / "tensorboard"

    @property
    def plot(self) -> Path:
        return self.path / "learning_curve.png"

    @property
    def final_eval(self) -> Path:
        return self.path / "final_eval.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @contextlib.contextmanager
    def claimed(self) -> Iterator[None]:
        """Hold the run for this process while it trains: another process that claims it
        meanwhile (a second ``jaxrl train --resume``) gets a :class:`RunDirError` naming the
        holder, where the two would write the same files. The claim is an advisory lock
        (``flock``) that the system drops when the process ends, so a killed run leaves none
        behind; without ``fcntl`` (Windows) or on a filesystem that keeps no locks, nothing
        is held."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - POSIX only
            yield
            return
        with open(self.path / LOCK, "a+") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.seek(0)
                holder = file.read().strip() or "another process"
                raise RunDirError(
                    f"{self.path} is being trained by {holder}: let it end, or stop it, first"
                ) from None
            except OSError:  # a filesystem that keeps no locks (ENOLCK): trained unclaimed
                pass
            file.truncate(0)
            since = time.strftime("%Y-%m-%d %H:%M:%S")
            file.write(f"process {os.getpid()} on {socket.gethostname()} since {since}")
            file.flush()
            try:
                yield
            finally:
                file.truncate(0)

    @classmethod
    def create(cls, path: str | Path) -> RunDir:
        """A new run directory at ``path`` (which must not exist or be empty).

        Raises:
          RunDirError: ``path`` is a file or a directory with files in it (a run's: naming
            ``--resume``), or cannot be made (naming the reason: a parent that is a file, ...).
        """
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(f.name != LOCK for f in path.iterdir())):
            what = f"already exists; continue it with --resume {path} or"
            what = what if (path / "config.json").is_file() else "is no empty folder;"
            raise RunDirError(f"run directory {str(path)!r} {what} choose another --run-dir")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = f"cannot create run directory {str(path)!r}: {error.strerror}"
            raise RunDirError(reason) from None
        return cls(path)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """An existing run directory (one with a ``config.json``)."""
        path = Path(path)
        if path.is_file():
            parent = (path.parent / "config.json").is_file()
            hint = f"; name its run directory, {path.parent}" if parent else ", not a run directory"
            raise RunDirError(f"{str(path)!r} is a file{hint}")
        if not path.is_dir():
            raise RunDirError(f"run directory {str(path)!r} does not exist")
        if not (path / "config.json").is_file():
            raise RunDirError(f"{str(path)!r} is not a jaxrl run directory (no config.json)")
        return cls(path)


def nested_runs(path: str | Path) -> list[str]:
    """The run directories one or two levels below ``path`` (a sweep's or a tune's), relative
    to it and sorted; none for a run directory or a folder without runs."""
    path = Path(path)
    if (path / "config.json").is_file():
        return []
    found = [*path.glob("*/config.json"), *path.glob("*/*/config.json")]
    return sorted(str(config.parent.relative_to(path)) for config in found)


def default_run_path(algo: str, env: str, root: str | Path = "runs") -> Path:
    """``runs/<algo>-<env>-<YYYYmmdd-HHMMSS>`` (with a suffix if that exists already)."""
    safe_env = re.sub(r"[^A-Za-z0-9._-]+", "_", env)
    base = Path(root) / f"{algo}-{safe_env}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, suffix = base, 1
    while path.exists():
        suffix += 1
        path = base.with_name(f"{base.name}-{suffix}")
    return path

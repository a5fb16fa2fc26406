"""Helpers for the ``jaxrl`` command tests: run the installed command as a subprocess, and
share the expensive runs between tests (and pytest-xdist workers) through a file lock."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import TRPO_RUN, Result


def _command() -> list[str]:
    """The installed console script of this interpreter (``python -m jaxrl`` without one)."""
    script = Path(sys.executable).parent / "jaxrl"
    if script.exists():
        return [str(script)]
    found = shutil.which("jaxrl")
    return [found] if found else [sys.executable, "-m", "jaxrl"]


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist every worker has its own basetemp below a common parent.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _shared_root(tmp_path_factory) / "jaxrl-cli"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def jaxrl(shared_root: Path) -> Callable[..., Result]:
    """``jaxrl(*args, cwd=...)``: run the command with a compilation cache shared by the
    session, so repeated programs (a run and its resumption) compile once."""
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(shared_root / "xla-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PLATFORMS": "cpu",
        "COLUMNS": "200",
    }

    def run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> Result:
        done = subprocess.run(
            [*_command(), *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def run_once(shared_root: Path, jaxrl: Callable[..., Result]) -> Callable[..., tuple[Path, Result]]:
    """``run_once(name, *args)``: ``jaxrl *args --run-dir DIR`` done once per session (across
    xdist workers); returns ``(DIR, result)``. Tests must not modify DIR."""

    def once(name: str, *args: str) -> tuple[Path, Result]:
        run_dir = shared_root / name
        with open(shared_root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            marker = shared_root / f"{name}.json"
            if not marker.exists():
                result = jaxrl(*args, "--run-dir", run_dir)
                marker.write_text(json.dumps(dataclasses.asdict(result)))
            result = Result(**json.loads(marker.read_text()))
        return run_dir, result

    return once


@pytest.fixture(scope="session")
def trpo_run(run_once: Callable[..., tuple[Path, Result]]) -> tuple[Path, Result]:
    """An uninterrupted tiny TRPO run on Pendulum-v1 (4 periods, checkpoints at 2 and 4)."""
    return run_once("trpo-uninterrupted", *TRPO_RUN)

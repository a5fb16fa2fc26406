"""Helpers for the ``jaxrl`` command tests: run the command (in this process, as the
installed command would run it, or as a subprocess of the installed command), and share the
expensive runs between tests (and pytest-xdist workers) through a file lock.

In-process runs call :func:`jaxrl.cli.main` with the arguments, the working directory and
captured stdout/stderr, and restore the signal handler it installs: the command without a
fresh interpreter's start-up (importing jax, jaxrl and gymnax takes about 6 s per process).
``JAXRL_TEST_CLI_SUBPROCESS=1`` runs every command as a subprocess instead; the entry point
itself is tested as a process in ``test_commands.py``."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import io
import json
import os
import signal
import subprocess
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import TRPO_RUN, Result, jaxrl_command


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Under pytest-xdist every worker has its own basetemp below a common parent.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _shared_root(tmp_path_factory) / "jaxrl-cli"
    root.mkdir(exist_ok=True)
    return root


def in_process(args: list[str], cwd: Path | None, columns: str = "200") -> Result:
    """``jaxrl *args`` run by :func:`jaxrl.cli.main` in this process."""
    from jaxrl import cli

    out, err = io.StringIO(), io.StringIO()
    previous_handler = signal.getsignal(signal.SIGTERM)
    previous_cwd, previous_columns = os.getcwd(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = columns
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exit_:  # --help
                code = exit_.code if isinstance(exit_.code, int) else 0
            except Exception:  # what the interpreter prints before exiting with status 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(previous_cwd)
        signal.signal(signal.SIGTERM, previous_handler)
        if previous_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous_columns
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def jaxrl_process(shared_root: Path) -> Callable[..., Result]:
    """``jaxrl_process(*args, cwd=...)``: run the installed command as a subprocess, with a
    compilation cache shared by the session (and the environment as it is at each call: a
    test's ``monkeypatch.setenv`` reaches the subprocess)."""
    fixed = {
        "JAX_COMPILATION_CACHE_DIR": str(shared_root / "xla-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PLATFORMS": "cpu",
        "COLUMNS": "200",
    }

    def run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> Result:
        done = subprocess.run(
            [*jaxrl_command(), *map(str, args)],
            capture_output=True,
            text=True,
            env={**os.environ, **fixed},
            cwd=cwd,
            timeout=timeout,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def jaxrl(jaxrl_process: Callable[..., Result]) -> Callable[..., Result]:
    """``jaxrl(*args, cwd=...)``: run the command (in this process; as a subprocess with
    ``JAXRL_TEST_CLI_SUBPROCESS=1``)."""
    if os.environ.get("JAXRL_TEST_CLI_SUBPROCESS") == "1":
        return jaxrl_process

    def run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> Result:
        del timeout  # an in-process run cannot be cut short
        return in_process([str(a) for a in args], cwd)

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


@pytest.fixture
def offline_wandb(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """wandb offline (no network, no account), its settings and caches under ``tmp_path``
    (each run's own files go to its run directory); returns that directory."""
    home = tmp_path / "wandb-home"
    home.mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(name, str(home))
    return home

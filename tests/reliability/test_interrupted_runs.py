"""Interrupted runs: a ``jaxrl train`` process killed (SIGKILL, no chance to clean up) during
training or while writing a checkpoint resumes from its last complete checkpoint and ends with
exactly the parameters of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from jaxrl.io.checkpoints import CheckpointStore
from jaxrl.io.runner import load_run

TINY = [
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--num-seeds", "2", "--total-steps", "768"),
    "--checkpoint-every",
    "1",
]


def command(*args) -> list[str]:
    return [sys.executable, "-m", "jaxrl", "train", "trpo", *map(str, args)]


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    cache = tmp_path_factory.mktemp("xla-cache")
    return {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PLATFORMS": "cpu",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory, environment):
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    subprocess.run(
        command(*TINY, "--run-dir", run_dir),
        env=environment,
        check=True,
        capture_output=True,
        timeout=900,
    )
    return load_run(run_dir)


def leaves(tree) -> list[np.ndarray]:
    def data(x):
        if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return [data(x) for x in jax.tree_util.tree_leaves(tree)]


def kill_when(run_dir, environment, moment: str) -> str:
    """Start a run and SIGKILL it at ``moment``: "writing" (a temporary checkpoint directory
    exists) or "trained" (a first checkpoint is complete). Returns what was observed."""
    process = subprocess.Popen(
        command(*TINY, "--run-dir", run_dir),
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    checkpoints = run_dir / "checkpoints"
    deadline = time.monotonic() + 600
    observed = "finished"
    try:
        while process.poll() is None and time.monotonic() < deadline:
            writing = checkpoints.exists() and any(checkpoints.glob("*orbax-checkpoint-tmp*"))
            complete = checkpoints.exists() and CheckpointStore(checkpoints).steps()
            if (moment == "writing" and writing) or (moment == "trained" and complete):
                process.send_signal(signal.SIGKILL)
                observed = "writing" if writing else "trained"
                break
            time.sleep(0.002)
    finally:
        process.kill()
        process.wait()
    return observed


@pytest.mark.parametrize("moment", ["trained", "writing"])
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, environment, reference, moment):
    run_dir = tmp_path / "run"
    observed = kill_when(run_dir, environment, moment)
    assert observed != "finished", "the run ended before it could be killed"
    resumed = subprocess.run(
        command("--resume", run_dir), env=environment, capture_output=True, text=True, timeout=900
    )
    if resumed.returncode != 0 and "no finalized checkpoint" in resumed.stderr.lower():
        # Killed while writing the very first checkpoint: nothing to resume from, and the
        # partial write must not be mistaken for a checkpoint.
        assert not CheckpointStore(run_dir / "checkpoints").steps()
        return
    assert resumed.returncode == 0, resumed.stderr
    final = load_run(run_dir)
    for expected, got in zip(leaves(reference.carry), leaves(final.carry), strict=True):
        np.testing.assert_array_equal(expected, got)

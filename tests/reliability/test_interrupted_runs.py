"""Interrupted runs: a ``jaxrl train`` process killed (SIGKILL, no chance to clean up) during
training or while writing a checkpoint resumes from its last complete checkpoint and ends with
exactly the parameters of an uninterrupted run.

The kill comes at a deterministic point, from inside the process: the command runs with a hook
(``KILLER``) that SIGKILLs it either when the run asks to save period ``P`` after checkpoint
``P - 1`` is complete ("trained"), or when orbax is about to finalize period ``P`` with its
data written to a temporary directory ("writing": orbax's finalize commits and renames it).
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxrl.runs.checkpoints import CheckpointStore
from jaxrl.runs.runner import load_run
from tests.cli.helpers import assert_kept_checkpoints

TINY = [
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--num-seeds", "2", "--total-steps", "768"),
    "--checkpoint-every",
    "1",
]


KILL_AT = 3  # the period whose checkpoint the kill interrupts (6 periods; one per period)


def command(*args) -> list[str]:
    return [sys.executable, "-m", "jaxrl", "train", "trpo", *map(str, args)]


# Runs the command with a hook that SIGKILLs the process at argv[1] ("trained" or "writing")
# for period argv[2]; the command's arguments follow.
KILLER = """
import os, signal, sys
from jaxrl.runs.checkpoints import CheckpointStore

moment, period = sys.argv[1], int(sys.argv[2])

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def patch_finalize():
    # Once the store's orbax manager exists (orbax imported where the command imports it).
    from orbax.checkpoint._src.path import atomicity
    finalize = atomicity.AtomicRenameTemporaryPath.finalize
    if getattr(finalize, "kills", False):
        return
    async def killing_finalize(self):
        if self.get_final().name == str(period):
            die()  # written to the temporary directory, neither committed nor renamed
        return await finalize(self)
    killing_finalize.kills = True
    atomicity.AtomicRenameTemporaryPath.finalize = killing_finalize

save = CheckpointStore.save
def killing_save(self, step, tree, metadata=None):
    if moment == "trained" and step == period:
        self.wait()  # the previous checkpoint is complete
        die()
    if moment == "writing":
        patch_finalize()
    return save(self, step, tree, metadata)
CheckpointStore.save = killing_save

from jaxrl.cli import main
sys.exit(main(["train", "trpo", *sys.argv[3:]]))
"""


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


def kill_at(run_dir, environment, moment: str, period: int) -> subprocess.CompletedProcess:
    """Run the command and let the hook SIGKILL it at ``moment`` of ``period``."""
    return subprocess.run(
        [sys.executable, "-c", KILLER, moment, str(period), *TINY, "--run-dir", run_dir],
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["trained", "writing"])
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, environment, reference, moment):
    run_dir = tmp_path / "run"
    killed = kill_at(run_dir, environment, moment, KILL_AT)
    assert killed.returncode == -9, killed.stderr  # killed by the hook, not finished
    checkpoints = run_dir / "checkpoints"
    # Killed with checkpoints up to KILL_AT - 1 complete (the newest two are kept, and the
    # best-evaluated one) and, when writing, period KILL_AT's only in a temporary directory.
    assert_kept_checkpoints(run_dir, [KILL_AT - 2, KILL_AT - 1])
    temporary = [p.name for p in checkpoints.iterdir() if "orbax-checkpoint-tmp" in p.name]
    if moment == "writing":
        assert len(temporary) == 1 and temporary[0].startswith(f"{KILL_AT}."), temporary
    else:
        assert temporary == [] and not (checkpoints / str(KILL_AT)).exists()
    resumed = subprocess.run(
        command("--resume", run_dir), env=environment, capture_output=True, text=True, timeout=900
    )
    assert resumed.returncode == 0, resumed.stderr
    # It resumed from the last complete checkpoint, not from scratch.
    assert f"resuming at period {KILL_AT - 1}/6 ({(KILL_AT - 1) * 128:,} env steps)" in (
        resumed.stderr
    ), resumed.stderr
    final = load_run(run_dir)
    for expected, got in zip(leaves(reference.carry), leaves(final.carry), strict=True):
        np.testing.assert_array_equal(expected, got)
    assert not any("orbax-checkpoint-tmp" in p.name for p in checkpoints.iterdir())


@pytest.mark.slow
def test_killed_while_writing_the_first_checkpoint_starts_over(tmp_path, environment, reference):
    """Killed before any checkpoint is complete: the partial write is not mistaken for one,
    and the resumed run trains from the start to the uninterrupted result."""
    run_dir = tmp_path / "run"
    killed = kill_at(run_dir, environment, "writing", 1)
    assert killed.returncode == -9, killed.stderr
    assert CheckpointStore(run_dir / "checkpoints").steps() == []
    resumed = subprocess.run(
        command("--resume", run_dir), env=environment, capture_output=True, text=True, timeout=900
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming at period" not in resumed.stderr and "6 evaluations every" in resumed.stderr
    final = load_run(run_dir)
    for expected, got in zip(leaves(reference.carry), leaves(final.carry), strict=True):
        np.testing.assert_array_equal(expected, got)

"""Helpers of the benchmark tests: the benchmark scripts run end to end in their ``--quick``
mode (tiny budgets), as a subprocess exactly as a user would run it, with ``--no-tianshou``
(CI installs only ``.[test]``, so the Tianshou side must be optional) and the results in a
temporary folder. Left out, to keep CI under 20 minutes: the search, and thin loops over
pieces tested here (``seed_scaling.py``, ``pendulum_final_return.py``, ``brax_training.py``).
The scripts share a JAX compilation cache so that programs compiled by one are reused by the
next. The tests are split over two files so that pytest-xdist's ``--dist loadfile`` runs
them on both workers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def scripts_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The variables of one JAX compilation cache, shared by the test session's processes
    (pytest-xdist workers included), that keeps every program compiled."""
    # The parent of the base temp folder is shared by pytest-xdist workers.
    cache = tmp_path_factory.getbasetemp().parent / "benchmarks-jax-cache"
    cache.mkdir(exist_ok=True)
    return {
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


@pytest.fixture(scope="session")
def quick_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of the scripts' processes: one JAX compilation cache for all."""
    return {**os.environ, **scripts_cache(tmp_path_factory)}


@pytest.fixture(scope="session")
def run_quick(quick_env: dict[str, str]) -> Callable[..., str]:
    """``run_quick(script, out, *extra, env=None) -> output`` (asserting exit status 0);
    ``env`` adds variables to the scripts' environment."""

    def run(script: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> str:
        env = {**quick_env, **(env or {})}
        command = [sys.executable, str(BENCH / script), "--quick", "--no-tianshou"]
        result = subprocess.run(
            [*command, "--out", str(out), *extra],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-4000:]
        if script in ("update_latency.py", "pendulum_wall_time.py"):  # with a Tianshou side
            assert "Tianshou side skipped" in output
        return output

    return run

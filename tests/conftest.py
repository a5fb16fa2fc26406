"""Test-session settings shared by every test file (and the subprocesses tests start).

Set before any test imports jax: XLA and JAX read them once, at start-up.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import settings

# Tests spend most of their time in XLA's CPU compiler: most tests run a few steps, and their
# programs compile without most optimizations (XLA's backend optimization level 0, no
# expensive LLVM passes): about 40% less compile time, the same results up to float rounding
# (docs/benchmarks/speed.md, compile time). The subprocesses tests start (the command, benchmark
# scripts' quick modes, notebooks) inherit this. Tests marked `learning` train to a return
# threshold, so run time dominates them (2-3x slower without optimizations): they compile
# fully optimized, as users' programs do (the `_compile_mode` fixture below).
_FLAG = "--xla_llvm_disable_expensive_passes=true"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

# Float comparisons must not depend on a backend's default matmul precision (GPUs use TF32):
# the suite computes float32 matmuls in float32 on every backend (a no-op on CPU).
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "float32")

# One persistent compilation cache per test run, made by the first process that loads this
# file (the pytest-xdist controller; its workers inherit the variable) and removed at its end:
# a program that several test files build (the same agent and configuration) compiles once.
# Tests that need a fresh compilation switch the cache off around it.
_CACHE_DIR: str | None = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _CACHE_DIR = tempfile.mkdtemp(prefix="jaxrl-tests-xla-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE_DIR
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")


# Property-based tests draw new examples on every run; in CI (``CI=true``, set by CI services)
# they draw the same examples every run (seeded from each test's code: a change to a test
# changes its examples), so a CI failure is reproducible and never a new draw's luck, and no
# example database carries state between runs. Locally they keep exploring.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
HYPOTHESIS_PROFILE = "ci" if os.environ.get("CI", "").strip().lower() == "true" else "dev"
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(autouse=True)
def _compile_mode(request: pytest.FixtureRequest):
    """Learning tests (``@pytest.mark.learning``) compile with XLA's full optimizations."""
    if request.node.get_closest_marker("learning") is None:
        yield
        return
    import jax

    previous = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", previous)


# The heaviest test files first (worker-seconds measured on a 2-core CPU, most first): with
# `--dist loadfile` each file runs on one worker, and a heavy file started last leaves the
# other worker idle (simulated on a full run's durations: 1,110 s against 1,011 s). The
# order changes scheduling only, never what a test sees: tests within a file keep their order.
HEAVY_FILES_FIRST = (
    "training/test_gymnasium_driver.py",
    "reliability/test_interrupted_runs.py",
    "training/test_jax_driver.py",
    "test_learning_on_policy.py",
    "test_notebooks.py",
    "cli/test_signals.py",
    "test_readme.py",
    "cli/test_readme_headline.py",
    "envs/test_brax_env.py",
    "training/test_collect.py",
    "training/test_run_counts.py",
    "cli/test_short_budgets.py",
    "training/test_host_multi_seed.py",
    "reliability/test_determinism.py",
    "parity/test_tianshou_on_policy.py",
    "benchmark_scripts/test_quick_jax.py",
    "benchmark_scripts/test_quick_host.py",
    "benchmark_scripts/test_quick_roofline.py",
    "test_on_policy.py",
    "test_ddpg.py",
    "cli/test_resume.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    rank = {name: i for i, name in enumerate(HEAVY_FILES_FIRST)}

    def file_rank(item: pytest.Item) -> int:
        path = os.path.relpath(str(item.path), tests_dir).replace(os.sep, "/")
        return rank.get(path, len(rank))

    items.sort(key=file_rank)  # stable: the rest keep their collection order

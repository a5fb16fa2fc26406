"""Test-session settings shared by every test file (and the subprocesses tests start).

Set before any test imports jax: XLA and JAX read them once, at start-up.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

# Tests spend most of their time in XLA's CPU compiler; skip LLVM's most expensive passes.
_FLAG = "--xla_llvm_disable_expensive_passes=true"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()

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


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


# Subprocesses that run a smoke budget (the ``jaxrl`` command, the benchmark scripts' quick
# modes, the notebooks, a sharded run) spend most of their time in XLA's compiler, which takes
# about half as long without backend optimizations. What they check (files written, resumed
# runs equal to uninterrupted ones in the same mode, errors, reports) does not depend on them.
SMOKE_XLA_FLAG = "--xla_backend_optimization_level=0"


@pytest.fixture(scope="session")
def smoke_env() -> dict[str, str]:
    """This process's environment for a smoke-budget subprocess: XLA's backend optimizations
    off (:data:`SMOKE_XLA_FLAG`)."""
    flags = os.environ.get("XLA_FLAGS", "")
    return {**os.environ, "XLA_FLAGS": f"{flags} {SMOKE_XLA_FLAG}".strip()}

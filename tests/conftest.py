"""Test-session settings shared by every test file (and the subprocesses tests start).

Set before any test imports jax: XLA and JAX read them once, at start-up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

# Tests spend most of their time in XLA's CPU compiler: most tests run a few steps, and their
# programs compile without most optimizations (XLA's backend optimization level 0, no
# expensive LLVM passes): about 40% less compile time, the same results up to float rounding
# (docs/benchmarks/speed.md, compile time). The subprocesses tests start (the command, benchmark
# scripts' quick modes, notebooks) inherit this. Tests marked `learning` train to a return
# threshold, so run time dominates them (2-3x slower without optimizations): they compile
# fully optimized, as users' programs do (the `_compile_mode` fixture below), but for those
# whose compile time dominates (marked `unoptimized`).
_FLAG = "--xla_llvm_disable_expensive_passes=true"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

# Unoptimized programs also compile with XLA's older CPU code generation (its fusion emitters
# off): half the compile time, and they run no slower unoptimized (three test files of short
# runs: 142 s instead of 226 s on a 2-core CPU). Optimized programs run faster with the fusion
# emitters (the README's Pendulum command: 80 s against 102 s), so the learning tests compile
# with them (`_compile_options` below). Set for every process (subprocesses compile
# unoptimized) only where this XLA knows the flag: an unknown flag aborts the process. Two
# different programs round differently with either emitter: tests that hold two programs'
# numbers to a tolerance measured with XLA's default emitters keep those (the marker
# `default_emitters`, and `default_emitters()` for a test's subprocesses).
_EMITTERS = "--xla_cpu_use_fusion_emitters=false"
if "JAXRL_TESTS_EMITTERS" not in os.environ:
    _known = subprocess.run(
        [sys.executable, "-c", "import jax; jax.jit(lambda x: x + 1)(1)"],
        env={**os.environ, "XLA_FLAGS": f"{os.environ['XLA_FLAGS']} {_EMITTERS}"},
        capture_output=True,
        check=False,
    )
    os.environ["JAXRL_TESTS_EMITTERS"] = "legacy" if _known.returncode == 0 else "default"
    if _known.returncode == 0:
        os.environ["XLA_FLAGS"] = f"{os.environ['XLA_FLAGS']} {_EMITTERS}"

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


def default_emitters() -> dict[str, str]:
    """The environment of a test's subprocess that compiles with XLA's default CPU emitters
    (``XLA_FLAGS`` without the legacy-emitters flag)."""
    return {"XLA_FLAGS": os.environ.get("XLA_FLAGS", "").replace(_EMITTERS, "").strip()}


def optimized_programs() -> dict[str, str]:
    """The environment of a test's subprocess whose run time dominates its compile time (the
    MuJoCo table's DDPG on Hopper: an update per env step): it compiles fully optimized with
    XLA's default emitters, as users' programs do. The MuJoCo table's quick run of 3,072 env
    steps per group on a 2-core CPU: 39 s unoptimized (legacy emitters), 28 s optimized once
    its programs are in the scripts' shared cache, 43 s compiling them."""
    return {"JAX_DISABLE_MOST_OPTIMIZATIONS": "0", **default_emitters()}


@pytest.fixture(autouse=True)
def _compile_mode(request: pytest.FixtureRequest):
    """Learning tests (``@pytest.mark.learning``), and tests whose run time dominates their
    compile time (``@pytest.mark.optimized``), compile with XLA's full optimizations and its
    fusion emitters, as users' programs do, but for learning tests whose compile time
    dominates (``@pytest.mark.unoptimized``); tests marked ``default_emitters`` unoptimized
    with the fusion emitters."""
    optimized = any(request.node.get_closest_marker(n) for n in ("learning", "optimized"))
    optimized = optimized and request.node.get_closest_marker("unoptimized") is None
    if not optimized and request.node.get_closest_marker("default_emitters") is None:
        yield
        return
    import jax

    previous = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", previous and not optimized)
    # The drivers' programs compiled in the other mode are dropped: the cache's keys do not
    # name how a program was compiled. (JAX's in-memory caches are kept: emptied, every jitted
    # function, jax.numpy's included, traced again in each later test.)
    from jaxrl.training import programs

    programs.clear()
    try:
        with _compile_options({"xla_cpu_use_fusion_emitters": True}):
            yield
    finally:
        jax.config.update("jax_disable_most_optimizations", previous)
        programs.clear()


@contextlib.contextmanager
def _compile_options(options: dict[str, object]) -> Iterator[None]:
    """Within: every XLA compilation in this process takes ``options`` over ``XLA_FLAGS``
    (where ``XLA_FLAGS`` holds the legacy-emitters flag; else nothing changes). It wraps
    JAX's private ``jax._src.compiler.get_compile_options``; if that is gone, it changes
    nothing: the learning tests then compile with the legacy emitters, slower but right."""
    from jax._src import compiler

    original = getattr(compiler, "get_compile_options", None)
    if os.environ.get("JAXRL_TESTS_EMITTERS") != "legacy" or original is None:
        yield
        return

    def with_options(*args: Any, env_options_overrides: Any = None, **kwargs: Any) -> Any:
        merged = {**options, **dict(env_options_overrides or {})}
        return original(*args, env_options_overrides=merged, **kwargs)

    compiler.get_compile_options = with_options
    try:
        yield
    finally:
        compiler.get_compile_options = original

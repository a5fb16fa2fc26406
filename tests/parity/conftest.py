"""Parity tests run Tianshou 2.0.1 itself (torch's CPU wheel), installed by the ``parity``
extra that CI installs. Without it these tests are skipped locally, with the reason shown;
in CI (``CI=true``, which CI services set) a missing extra fails the run (a collection
error), so the parity tests cannot silently stop running there."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

REASON = "parity tests need the parity extra (torch, tianshou)"


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, case-insensitive)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def importable(module: str) -> bool:
    """Whether ``module`` imports."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


MISSING = tuple(module for module in ("torch", "tianshou") if not importable(module))


class MissingExtra(pytest.Module):
    """A parity test file collected without the extra: skipped locally, failed in CI."""

    def collect(self):
        message = f"{REASON}; missing: {', '.join(MISSING)}"
        if in_ci():
            pytest.fail(
                f"CI=true and {message}: install it (pip install -e '.[parity]') so the "
                "parity tests run",
                pytrace=False,
            )
        pytest.skip(message)


def pytest_pycollect_makemodule(
    module_path: Path, parent: pytest.Collector
) -> pytest.Module | None:
    """Collect the parity test files as :class:`MissingExtra` when the extra is missing."""
    if MISSING:
        return MissingExtra.from_parent(parent, path=module_path)
    return None


# Tianshou's objects as its own tests build them: benchmarks/tianshou_side.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

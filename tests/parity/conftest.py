"""Parity tests run Tianshou 2.0.1 itself (torch's CPU wheel), installed by the ``parity``
extra that CI installs. Without it these tests are skipped locally, with the reason shown;
in CI (``CI=true``, which CI services set) a missing extra fails the run (a collection
error), so the parity tests cannot silently stop running there."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REASON = "parity tests need the parity extra (torch, tianshou)"


def in_ci() -> bool:
    """Whether this is a CI run (``CI=true``, case-insensitive)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def importable(module: str) -> bool:
    """Whether ``module`` is installed (found, not imported: importing torch and Tianshou
    takes seconds, which every pytest-xdist worker would pay at start-up, the one that runs
    no parity test too)."""
    return importlib.util.find_spec(module) is not None


MISSING = tuple(module for module in ("torch", "tianshou") if not importable(module))


class Lazy:
    """A module imported at its first attribute (the parity files' ``torch``, Tianshou and
    ``tianshou_side``): collecting the parity tests imports none of them, so a worker of
    ``--dist loadfile`` that runs no parity test never does."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # what pytest's collection asks of a module's names
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self._name), attribute)


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

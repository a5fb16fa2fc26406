"""Parity tests run Tianshou 2.0.1 itself (torch's CPU wheel), installed by the ``parity``
extra that CI installs. Without it these tests are skipped, with the reason shown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="parity tests need the parity extra (torch, tianshou)")
pytest.importorskip("tianshou", reason="parity tests need the parity extra (torch, tianshou)")

# Tianshou's objects as its own tests build them: benchmarks/tianshou_side.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

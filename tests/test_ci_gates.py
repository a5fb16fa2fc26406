"""What a CI run (``CI=true``) changes in the suite: the parity tests' gate
(tests/parity/conftest.py: without the parity extra they are skipped locally but fail a CI
run, so CI cannot silently stop running them), and Hypothesis's profile (tests/conftest.py:
the same examples every CI run).

The missing extra is simulated in a subprocess by ``sys.modules[name] = None`` for torch and
tianshou (importing them then raises ImportError) before pytest starts; only collection runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_EXTRA = (
    "import sys; sys.modules['torch'] = sys.modules['tianshou'] = None; import pytest; "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


def collect_parity(ci: str | None) -> subprocess.CompletedProcess:
    """Collect tests/parity with torch and Tianshou unimportable, ``CI`` set to ``ci``
    (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_EXTRA,
            "tests/parity",
            "--collect-only",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_missing_extra_fails_in_ci() -> None:
    """With CI=true a missing extra is a collection error naming the missing modules."""
    result = collect_parity("true")
    assert result.returncode == pytest.ExitCode.INTERRUPTED, result.stdout + result.stderr
    assert "missing: torch, tianshou" in result.stdout and "skipped" not in result.stdout


def test_missing_extra_skips_locally() -> None:
    """Outside CI (no CI variable) the parity files are skipped, with the reason shown, and
    nothing errors."""
    result = collect_parity(None)
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout + result.stderr
    assert "SKIPPED [2]" in result.stdout and "missing: torch, tianshou" in result.stdout
    assert "error" not in result.stdout.lower()


PROFILE = (
    "import sys; sys.path.insert(0, 'tests'); import conftest; from hypothesis import settings; "
    "print(conftest.HYPOTHESIS_PROFILE, settings.default.derandomize, settings.default.database)"
)


@pytest.mark.parametrize(("ci", "expected"), [("true", "ci True None"), (None, "dev False")])
def test_hypothesis_draws_fixed_examples_in_ci(ci: str | None, expected: str) -> None:
    """With CI=true the test settings load the derandomized profile (no example database);
    without it, Hypothesis's defaults (random draws, the local example database)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    result = subprocess.run(
        [sys.executable, "-c", PROFILE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(expected), result.stdout

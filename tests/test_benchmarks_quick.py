"""Every benchmark script runs end to end in its ``--quick`` mode (tiny budgets).

Runs them as subprocesses exactly as a user would, with ``--no-tianshou`` (CI installs only
``.[test]``, so the Tianshou side must be optional) and the results in a temporary folder. The
scripts share a JAX compilation cache so that programs compiled by one are reused by the next.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="session")
def jax_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The parent of the base temp folder is shared by pytest-xdist workers.
    path = tmp_path_factory.getbasetemp().parent / "benchmarks-jax-cache"
    path.mkdir(exist_ok=True)
    return path


def run_quick(script: str, out: Path, cache: Path, *extra: str) -> str:
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    result = subprocess.run(
        [
            sys.executable,
            str(BENCH / script),
            "--quick",
            "--no-tianshou",
            "--out",
            str(out),
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    if script in ("update_latency.py", "pendulum_wall_time.py"):  # the scripts with a Tianshou side
        assert "Tianshou side skipped" in output
    return output


@pytest.mark.slow
def test_update_latency_quick(tmp_path, jax_cache):
    output = run_quick("update_latency.py", tmp_path, jax_cache)
    data = json.loads((tmp_path / "update_latency.json").read_text())
    assert {(r["shape"], r["algo"]) for r in data["rows"]} == {
        ("pendulum", "trpo"),
        ("pendulum", "ddpg"),
    }
    for row in data["rows"]:
        assert row["jaxrl_median"] > 0 and row["jaxrl_compile_s"] > 0
    assert "| shape | algo |" in output
    assert (tmp_path / "update_latency.csv").exists()


@pytest.mark.slow
def test_pendulum_wall_time_quick(tmp_path, jax_cache):
    run_quick("pendulum_wall_time.py", tmp_path, jax_cache)
    data = json.loads((tmp_path / "pendulum_wall_time_trpo.json").read_text())
    (row,) = data["jaxrl"]
    assert row["algo"] == "trpo" and row["num_seeds"] == 2
    assert row["env_steps_per_seed"] == 2048 and len(row["final_returns"]) == 2
    assert data["tianshou"] == []


@pytest.mark.slow
def test_seed_scaling_quick(tmp_path, jax_cache):
    run_quick("seed_scaling.py", tmp_path, jax_cache)
    data = json.loads((tmp_path / "seed_scaling.json").read_text())
    assert [(r["algo"], r["num_seeds"]) for r in data["rows"]] == [("trpo", 2), ("ddpg", 2)]
    assert all(r["env_steps_per_s"] > 0 for r in data["rows"])


@pytest.mark.slow
def test_mujoco_learning_quick(tmp_path, jax_cache):
    output = run_quick("mujoco_learning.py", tmp_path, jax_cache)
    records = [
        json.loads(line)
        for line in (tmp_path / "mujoco_learning.jsonl").read_text().splitlines()
        if line
    ]
    assert sorted(r["algo"] for r in records) == ["ddpg", "trpo"]
    assert all(len(r["eval_return"]) >= 1 for r in records)
    assert "Tianshou 1M steps" in output


@pytest.mark.slow
def test_host_throughput_quick(tmp_path, jax_cache):
    output = run_quick("host_throughput.py", tmp_path, jax_cache)
    rows = json.loads((tmp_path / "host_throughput.json").read_text())["rows"]
    assert [r["num_seeds"] for r in rows] == [1, 2]
    assert all(r["env_steps_per_s"] > 0 for r in rows)
    assert "vs gymnasium x1" in output


@pytest.mark.slow
def test_compile_time_quick(tmp_path, jax_cache):
    output = run_quick("compile_time.py", tmp_path, jax_cache)
    data = json.loads((tmp_path / "compile_time.json").read_text())
    assert [row["program"] for row in data["rows"]] == ["trpo-update", "trpo-run-1"]
    for row in data["rows"]:
        assert row["lower_s"] > 0 and row["compile_s"] > 0 and row["optimized_hlo_lines"] > 0
    assert "| program |" in output


def test_pendulum_final_return_quick(tmp_path, jax_cache):
    output = run_quick("pendulum_final_return.py", tmp_path, jax_cache)
    (path,) = tmp_path.glob("pendulum_final_return_trpo_pendulum_1000.json")
    run = json.loads(path.read_text())["run"]
    assert run["num_seeds"] == 2 and len(run["deterministic"]) == 2
    assert 0 <= run["reached"] <= 2 and run["env_steps"] == 8192
    assert "seeds >= -250" in output

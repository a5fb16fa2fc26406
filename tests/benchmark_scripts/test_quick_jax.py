"""The benchmark scripts of the jitted driver, in their ``--quick`` mode (see conftest.py)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_update_latency_quick(tmp_path, run_quick):
    output = run_quick("update_latency.py", tmp_path)
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
def test_pendulum_wall_time_quick(tmp_path, run_quick):
    run_quick("pendulum_wall_time.py", tmp_path)
    data = json.loads((tmp_path / "pendulum_wall_time_trpo.json").read_text())
    (row,) = data["jaxrl"]
    assert row["algo"] == "trpo" and row["num_seeds"] == 2
    assert row["env_steps_per_seed"] == 2048 and len(row["final_returns"]) == 2
    assert data["tianshou"] == []


@pytest.mark.slow
def test_compile_time_quick(tmp_path, run_quick):
    output = run_quick("compile_time.py", tmp_path)
    data = json.loads((tmp_path / "compile_time.json").read_text())
    assert [row["program"] for row in data["rows"]] == ["trpo-update"]
    for row in data["rows"]:
        assert row["lower_s"] > 0 and row["compile_s"] > 0 and row["optimized_hlo_lines"] > 0
    assert "| program |" in output

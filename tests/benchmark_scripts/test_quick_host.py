"""The host-driver and main-job benchmark scripts, in their ``--quick`` mode (see conftest.py)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_mujoco_learning_quick(tmp_path, run_quick):
    output = run_quick("mujoco_learning.py", tmp_path)
    records = [
        json.loads(line)
        for line in (tmp_path / "mujoco_learning.jsonl").read_text().splitlines()
        if line
    ]
    assert sorted(r["algo"] for r in records) == ["ddpg", "trpo"]
    assert all(len(r["eval_return"]) >= 1 for r in records)
    assert "Tianshou 1M steps" in output


@pytest.mark.slow
def test_host_throughput_quick(tmp_path, run_quick):
    output = run_quick("host_throughput.py", tmp_path)
    rows = json.loads((tmp_path / "host_throughput.json").read_text())["rows"]
    assert [r["num_seeds"] for r in rows] == [1, 2]
    assert all(r["env_steps_per_s"] > 0 for r in rows)
    assert "vs gymnasium x1" in output


def test_pendulum_final_return_quick(tmp_path, run_quick):
    output = run_quick("pendulum_final_return.py", tmp_path)
    (path,) = tmp_path.glob("pendulum_final_return_trpo_pendulum_1000.json")
    run = json.loads(path.read_text())["run"]
    assert run["num_seeds"] == 2 and len(run["deterministic"]) == 2
    assert 0 <= run["reached"] <= 2 and run["env_steps"] == 256
    assert "seeds >= -250" in output

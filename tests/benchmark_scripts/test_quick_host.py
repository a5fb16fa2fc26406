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

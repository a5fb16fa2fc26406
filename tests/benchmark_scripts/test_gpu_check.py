"""``benchmarks/gpu_check.py --tiny``: the accelerator check's every stage at toy sizes on the
CPU (Brax's physics-free ``fast`` task, no MJX compile), each a fresh process with a cold
compilation cache, two at a time: about 60 s on a 2-core CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.benchmark_scripts.conftest import BENCH

pytest.importorskip("brax")

STAGES = ["main-job", "pendulum-4096", "physics", "trpo-mjx", "ddpg-mjx", "brax-ppo"]


@pytest.mark.slow
def test_every_stage_runs_and_leaves_its_figures(tmp_path):
    command = [sys.executable, str(BENCH / "gpu_check.py"), "--tiny", "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    rows = {row["stage"]: row for row in report["stages"]}
    assert sorted(rows) == sorted(STAGES)
    assert all(row["status"] == "ok" and row["wall_s"] > 0 for row in rows.values())
    for name in ("trpo-mjx", "ddpg-mjx"):
        figures = rows[name]["figures"]
        assert figures["num_seeds"] == 2 and figures["env_steps_per_s"] > 0
        assert figures["compile_s"] > 0 and 0 < figures["evaluation_share_of_run"] <= 1
        assert len(figures["eval_mean"]) == 2  # two evaluation periods
    physics = rows["physics"]["figures"]["rows"]
    assert {row["program"] for row in physics} == {"env step", "step + reset"}
    assert rows["brax-ppo"]["figures"]["training_sps"] > 0
    assert "| stage | status | wall s | figures |" in done.stdout

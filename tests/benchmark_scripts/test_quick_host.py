"""The host-driver and main-job benchmark scripts, in their ``--quick`` mode (see conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_mujoco_table_resumes_after_a_kill(tmp_path, run_quick, quick_env):
    """The table command killed after its first group continues with the second group only:
    the finished rows are unchanged, the killed group is trained again, and the table is
    generated from the results file. A group stopped after a period (``--stop-after-periods``,
    as a spent budget stops it) is checkpointed and resumed from there, and its run directory
    is removed once its rows are recorded."""
    pytest.importorskip("mujoco")
    results = tmp_path / "mujoco_table.jsonl"
    command = [sys.executable, str(BENCH / "mujoco_table.py"), "--quick", "--out", str(tmp_path)]
    process = subprocess.Popen(
        command, cwd=ROOT, env=quick_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 600
    while not (results.exists() and results.read_text().endswith("\n")):
        assert process.poll() is None, process.stdout.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no row within 600 s"
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)  # during the second group (DDPG on Hopper)
    process.wait(timeout=60)
    first = _rows(results)
    assert [(r["algo"], r["seed"]) for r in first] == [("trpo", 0), ("trpo", 1)]
    required = {"algo", "env", "seed", "total_steps", "eval_env_steps", "eval_return"}
    required |= {"final_return", "seconds", "commit", "machine", "env_backend"}
    assert required <= set(first[0]), required - set(first[0])
    assert first[0]["machine"]["cores"] == os.cpu_count()

    output = run_quick("mujoco_table.py", tmp_path, "--stop-after-periods", "1")
    assert "1 groups to train" in output  # the finished TRPO seeds are not trained again
    assert "stopped at 1,024 env steps (resumable)" in output
    assert "resumes from 1,024 env steps" in output  # said under "Remaining"
    assert _rows(results) == first  # nothing recorded for a group that has not finished
    runs = tmp_path / "mujoco_table_runs"
    assert [p.name.split("-seeds-")[0] for p in runs.iterdir()] == ["ddpg-Hopper-v5"]

    output = run_quick("mujoco_table.py", tmp_path)
    assert "resuming ddpg Hopper-v5 seeds [0, 1] from 1,024 env steps" in output
    rows = _rows(results)
    assert rows[:2] == first  # finished rows unchanged
    assert sorted((r["algo"], r["seed"]) for r in rows[2:]) == [("ddpg", 0), ("ddpg", 1)]
    for row in rows[2:]:  # the evaluations before and after the stop, in one row
        assert row["eval_env_steps"] == [1024, 2048] and row["resumed_at_env_steps"] == 1024
    assert not any(runs.iterdir())  # the recorded group's run directory is gone
    assert "Every cell asked for is complete." in output
    table = (tmp_path / "mujoco_table.md").read_text()
    assert "| InvertedPendulum (v5; Tianshou v2) | TRPO |" in table
    assert (tmp_path / "mujoco_table.png").stat().st_size > 0


@pytest.mark.slow
def test_host_throughput_quick(tmp_path, run_quick):
    output = run_quick("host_throughput.py", tmp_path)
    rows = json.loads((tmp_path / "host_throughput.json").read_text())["rows"]
    assert [r["num_seeds"] for r in rows] == [1, 2]
    assert all(r["env_steps_per_s"] > 0 for r in rows)
    assert "vs gymnasium x1" in output


@pytest.mark.slow
def test_host_throughput_vs_raw_quick(tmp_path, run_quick):
    """``--vs-raw``: raw stepping, the run and its breakdown side by side, with the ratio and
    the sentence naming what bounds it; the parts add up to the timed run."""
    output = run_quick("host_throughput.py", tmp_path, "--vs-raw")
    (result,) = json.loads((tmp_path / "host_throughput_vs_raw.json").read_text())["results"]
    assert set(result["raw"]) == {"one pool", "per seed", "adapter", "one pool, after"}
    assert all(r["env_steps_per_s"] > 0 for r in result["raw"].values())
    assert result["run"]["env_steps_per_s"] > 0 and result["ratio"] > 0
    groups = result["groups_us_per_env_step"]
    assert set(groups) == {"physics", "env adapter", "acting", "learning", "evaluation"} | {
        "driver Python"
    }
    assert groups["physics"] > 0 and groups["learning"] > 0
    share = result["breakdown"]["share"]
    assert sum(share.values()) == pytest.approx(1.0)
    assert sum(groups.values()) == pytest.approx(result["timed_run_us_per_env_step"])
    assert "run / raw =" in output and result["sentence"] in output

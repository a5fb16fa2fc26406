"""The host-driver and main-job benchmark scripts, in their ``--quick`` mode (see conftest.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import optimized_programs

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _table(run_quick, out, *extra):
    """The MuJoCo table's quick run, its programs compiled optimized (they run long)."""
    return run_quick("mujoco_table.py", out, *extra, env=optimized_programs())


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _children(pid):
    """The pids of ``pid``'s child processes (from Linux's /proc)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_mujoco_table_resumes_after_a_kill(tmp_path, run_quick, quick_env):
    """The table command killed after its first group continues with the other group only:
    the finished rows are unchanged, the killed group is trained again, and the table is
    generated from the results file. A group stopped after a period (``--stop-after-periods``,
    as a spent budget stops it) is checkpointed and resumed from there, and its run directory
    is removed once its rows are recorded. The killed run has ``--jobs 2`` (where there are 2
    CPUs): its two groups train at once, each in a process of its own on its share of the
    CPUs, which the rows record, and killing the table's process stops them too; the later
    runs train one group at a time in their own process, on all the CPUs."""
    pytest.importorskip("mujoco")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    jobs = min(cpus, 2)
    results = tmp_path / "mujoco_table.jsonl"
    # The budget of the tests below (3 periods of 1,024 env steps): their programs are one.
    budget = ["--total-steps", "3072"]
    command = [sys.executable, str(BENCH / "mujoco_table.py"), "--quick", "--out", str(tmp_path)]
    process = subprocess.Popen(
        [*command, *budget, "--jobs", str(jobs)],
        cwd=ROOT,
        env={**quick_env, **optimized_programs()},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 600
    while not (results.exists() and results.read_text().endswith("\n")):
        assert process.poll() is None, process.stdout.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no row within 600 s"
        time.sleep(0.2)
    children = _children(process.pid)  # with --jobs 2: the other group's process, training
    process.send_signal(signal.SIGKILL)  # during the other group
    process.wait(timeout=60)
    first = _rows(results)
    # Whichever group finished first (one at a time: TRPO on InvertedPendulum, then DDPG on
    # Hopper; with --jobs 2 both at once), its two seeds' rows and no more.
    groups = {"trpo": "InvertedPendulum-v5", "ddpg": "Hopper-v5"}
    done = first[0]["algo"]
    (killed,) = set(groups) - {done}
    assert [(r["algo"], r["env"], r["seed"]) for r in first] == [
        (done, groups[done], 0),
        (done, groups[done], 1),
    ]
    required = {"algo", "env", "seed", "total_steps", "eval_env_steps", "eval_return"}
    required |= {"final_return", "seconds", "commit", "machine", "env_backend"}
    assert required <= set(first[0]), required - set(first[0])
    assert first[0]["machine"]["cores"] == os.cpu_count()
    assert first[0]["machine"]["process_cpus"] == cpus // jobs
    if jobs == 2:
        assert children, "no group process left when the first group's rows were written"
        gone = time.monotonic() + 30
        while any(_alive(pid) for pid in children) and time.monotonic() < gone:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in children), "a group's process outlived the table"

    output = _table(run_quick, tmp_path, *budget, "--stop-after-periods", "1")
    assert "1 groups to train" in output  # the finished seeds are not trained again
    assert "stopped at 1,024 env steps (resumable)" in output
    assert "resumes from 1,024 env steps" in output  # said under "Remaining"
    assert _rows(results) == first  # nothing recorded for a group that has not finished
    runs = tmp_path / "mujoco_table_runs"
    assert [p.name.split("-seeds-")[0] for p in runs.iterdir()] == [f"{killed}-{groups[killed]}"]

    output = _table(run_quick, tmp_path, *budget)
    assert f"resuming {killed} {groups[killed]} seeds [0, 1] from 1,024 env steps" in output
    rows = _rows(results)
    assert rows[:2] == first  # finished rows unchanged
    assert sorted((r["algo"], r["seed"]) for r in rows[2:]) == [(killed, 0), (killed, 1)]
    for row in rows[2:]:  # the evaluations before and after the stop, in one row
        assert row["eval_env_steps"] == [1024, 2048, 3072] and row["resumed_at_env_steps"] == 1024
    assert not any(runs.iterdir())  # the recorded group's run directory is gone
    assert "Every cell asked for is complete." in output
    assert all(row["machine"]["process_cpus"] == cpus for row in rows[2:])
    table = (tmp_path / "mujoco_table.md").read_text()
    assert "| InvertedPendulum (v5; Tianshou v2) | TRPO |" in table
    if jobs == 2:
        assert f"({cpus} cores, {cpus // 2} per process)" in table
    assert (tmp_path / "mujoco_table.png").stat().st_size > 0


def test_table_jobs_quick(tmp_path, run_quick):
    """``table_jobs.py``: one group on all the CPUs against groups side by side, each process
    on its own share of them (what it measured with is in its record)."""
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity (Linux) and 2 CPUs")
    output = run_quick("table_jobs.py", tmp_path)
    data = json.loads((tmp_path / "table_jobs.json").read_text())
    (measured,) = data["rounds"]
    assert measured["one"]["processes"][0]["cpus"] == len(os.sched_getaffinity(0))
    shares = data["shares"]
    assert len(shares) == 2 and not set(shares[0]) & set(shares[1])
    assert [p["cpus"] for p in measured["jobs"]["processes"]] == [len(s) for s in shares]
    for part in ("one", "jobs"):
        assert all(p["env_steps_per_second"] > 0 for p in measured[part]["processes"])
    assert measured["jobs"]["total"] == pytest.approx(
        sum(p["env_steps_per_second"] for p in measured["jobs"]["processes"])
    )
    assert "| 2 groups, a share each |" in output and "ratio, per round" in output


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


def test_cli_startup_quick(tmp_path, run_quick):
    output = run_quick("cli_startup.py", tmp_path)
    records = json.loads((tmp_path / "cli_startup.json").read_text())["results"]
    heavy = {r["command"]: r["heavy_modules"] for r in records}
    assert heavy["--help"] == [] and heavy["usage error (trian)"] == []
    assert "jax" in heavy["train trpo --help"]  # it reads the algorithms' classes
    assert [r["status"] for r in records] == [0, 2, 0]
    assert all(r["seconds"]["median"] > 0 for r in records)
    assert "| jaxrl --help |" in output


@pytest.mark.slow
def test_sigterm_checkpoints_the_table_groups_under_way_and_the_next_run_resumes_them(
    tmp_path, run_quick, quick_env
):
    """SIGTERM (a preemption) to the table command with ``--jobs 2``: the groups under way,
    each in a process of its own, checkpoint the evaluation period they are in and the
    command exits with status 130 and the line to continue; the next run resumes each group
    from its checkpoint and completes the table."""
    pytest.importorskip("mujoco")
    from jaxrl.runs import CheckpointStore

    # 3 evaluation periods of 1,024 env steps: the SIGTERM comes after the first, and the
    # resumed DDPG group trains updates (its warm-up ends at 1,536 env steps) to the end.
    budget = ["--total-steps", "3072"]
    command = [sys.executable, str(BENCH / "mujoco_table.py"), "--quick", "--no-tianshou"]
    command += ["--out", str(tmp_path), "--jobs", "2", *budget, "--preemption-grace", "240"]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**quick_env, **optimized_programs()},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    runs = tmp_path / "mujoco_table_runs"

    def periods_logged() -> int:  # the most periods any group has evaluated (2 seeds)
        files = list(runs.glob("*/evals.csv")) if runs.is_dir() else []
        return max((f.read_text().count("\n") - 3) // 2 for f in files) if files else 0

    deadline = time.monotonic() + 600
    while periods_logged() < 1:
        assert process.poll() is None, process.stdout.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no evaluation period within 600 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=300)[0].decode()
    assert process.returncode == 130, output[-3000:]
    assert "Stopped by SIGTERM: the groups under way are checkpointed" in output
    assert "Traceback" not in output
    under_way = list(runs.iterdir())
    assert under_way, output[-3000:]
    for group in under_way:  # every group under way kept its work
        assert CheckpointStore(group / "checkpoints").steps(), group.name

    output = _table(run_quick, tmp_path, *budget)
    resumed = re.findall(r"resuming (?:trpo|ddpg) \S+ seeds \[0, 1\] from", output)
    assert len(resumed) == len(under_way), output[-3000:]
    assert "Every cell asked for is complete." in output
    rows = _rows(tmp_path / "mujoco_table.jsonl")
    assert sorted((r["algo"], r["seed"]) for r in rows) == [
        ("ddpg", 0), ("ddpg", 1), ("trpo", 0), ("trpo", 1)
    ]  # fmt: skip
    assert all(r["eval_env_steps"] == [1024 * p for p in range(1, 4)] for r in rows)

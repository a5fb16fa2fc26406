"""Tasks side by side in processes pinned to their own CPUs (``jaxrl.studies.processes``): the
shares, the refusal of a bad count, that each task runs on its share with its exit status
reported, that a failure stops new tasks, and that a task's process does not outlive a
killed parent. The task functions below are imported by name in the tasks' processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxrl.studies import processes
from jaxrl.studies.processes import Task, check_jobs, cpu_shares, run_in_processes, usable_cpus

AFFINITY = hasattr(os, "sched_getaffinity")


def record(path: str, status: int, meet: str | None = None) -> int:
    """A task: write this process's CPUs and times to ``path``, then end with ``status``.
    With ``meet`` (a folder), first wait there for another task (up to 120 s): ``met`` says
    whether one came, i.e. whether the two ran at once."""
    start, met = time.time(), None
    if meet is not None:
        (Path(meet) / str(os.getpid())).touch()
        deadline = time.monotonic() + 120
        while len(list(Path(meet).iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        met = len(list(Path(meet).iterdir())) >= 2
    cpus = sorted(os.sched_getaffinity(0)) if AFFINITY else None
    data = {"cpus": cpus, "start": start, "end": time.time(), "met": met}
    Path(path).write_text(json.dumps(data))
    return status


def fail() -> int:
    raise RuntimeError("a task that fails")


def hold_forever(path: str) -> int:
    Path(path).write_text(str(os.getpid()))
    while True:
        time.sleep(0.1)


def test_cpu_shares_are_disjoint_and_as_even_as_they_divide(monkeypatch):
    monkeypatch.setattr(processes, "usable_cpus", lambda: [0, 1, 2, 3, 4, 5])
    assert cpu_shares(4) == [[0], [1, 2], [3], [4, 5]]
    assert cpu_shares(1) == [[0, 1, 2, 3, 4, 5]]
    assert cpu_shares(6) == [[c] for c in range(6)]


@pytest.mark.parametrize("jobs", [0, -1, "cpus + 1", True, 1.0, "2"])
def test_a_count_of_jobs_outside_one_to_the_cpus_is_refused_by_name(jobs):
    cpus = len(usable_cpus())
    jobs = cpus + 1 if jobs == "cpus + 1" else jobs
    with pytest.raises(ValueError, match=f"--jobs must be from 1 to this process's {cpus} CPUs"):
        check_jobs(jobs)
    assert check_jobs(cpus) == cpus and check_jobs(1) == 1


@pytest.mark.skipif(not AFFINITY or len(usable_cpus()) < 2, reason="needs affinity, 2 CPUs")
def test_tasks_run_at_once_each_on_its_own_share_and_report_their_status(tmp_path):
    files = [tmp_path / f"task{i}.json" for i in range(3)]
    (tmp_path / "meet").mkdir()
    meet = [str(tmp_path / "meet")] * 2 + [None]  # the first two wait for each other
    tasks = [Task(f"task {i}", record, (str(f), 7 * i, meet[i])) for i, f in enumerate(files)]
    seen = []  # statuses listed as ok do not stop the tasks after them
    ends = run_in_processes(iter(tasks), 2, ok=(0, 7, 14), on_end=seen.append)
    assert seen == ends
    assert sorted(e.task.label for e in ends) == ["task 0", "task 1", "task 2"]
    assert {e.task.label: e.exit_status for e in ends} == {"task 0": 0, "task 1": 7, "task 2": 14}
    done = [json.loads(f.read_text()) for f in files]
    shares = cpu_shares(2)
    assert [d["cpus"] for d in done[:2]] in (shares, shares[::-1])  # a share each
    assert done[2]["cpus"] in shares
    for end, data in zip(sorted(ends, key=lambda e: e.task.label), done, strict=True):
        assert list(end.cpus) == data["cpus"]
    # The first two ran at once; the third started when one of them had ended.
    assert done[0]["met"] and done[1]["met"]
    assert done[2]["start"] >= min(d["end"] for d in done[:2])
    assert sorted(os.sched_getaffinity(0)) == usable_cpus()  # this process's own, restored


def test_a_failed_task_stops_new_ones_and_the_running_finish(tmp_path):
    asked = []

    def tasks():
        for i, task in enumerate(
            [Task("fails", fail), Task("after", record, (str(tmp_path / "x"), 0))]
        ):
            asked.append(i)
            yield task

    ends = run_in_processes(tasks(), 1)
    assert [(e.task.label, e.exit_status) for e in ends] == [("fails", 1)]
    assert asked == [0] and not (tmp_path / "x").exists()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
def test_a_tasks_process_does_not_outlive_a_killed_parent(tmp_path):
    marker = tmp_path / "pid"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_processes as t; "
        "from jaxrl.studies.processes import Task, run_in_processes; "
        "run_in_processes(iter([Task('hold', t.hold_forever, (sys.argv[2],))]), 1)"
    )
    tests = str(Path(__file__).resolve().parent)
    parent = subprocess.Popen([sys.executable, "-c", script, tests, str(marker)])
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert parent.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    child = int(marker.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    gone = time.monotonic() + 15
    while _alive(child) and time.monotonic() < gone:
        time.sleep(0.1)
    assert not _alive(child), "the task's process outlived its parent"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"

"""Several processes: ``jaxrl train`` as a job of 2 local CPU processes on ``jax.distributed``
(JAX's CPU collectives, gloo) trains the same seeds, to the bit, as one process, and only
process 0 writes the run directory; ``jaxrl sweep`` likewise trains a group's settings x
seeds and writes the sweep directory; the launch settings and their errors.

Why bitwise: each process runs, for each of its devices' block of seeds, the single-device
program a one-process run compiles (:class:`jaxrl.training.sharding.SeedPlacement`), and on a
CPU NPG/TRPO run their seeds one after another inside it (``lax.map``), so every seed goes
through the same operations whichever process trains it and however many seeds share its
device. (An XLA program partitioned over the devices, ``jax.shard_map``, compiled with other
float simplifications: its results differed in the last bits after the first update.) So the
comparison below is exact, not to a tolerance; only ``evals.csv``'s ``wall_time`` differs.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import jaxrl
from jaxrl.config import RunConfig
from jaxrl.config.settings import RunSettings, SettingError, launch_settings
from jaxrl.training import initialize_distributed
from jaxrl.training.sharding import SeedPlacement
from tests.cli.helpers import assert_kept_checkpoints

ROOT = Path(jaxrl.__file__).resolve().parents[1]
TIMEOUT = 240  # seconds for the 2-process job (about 60 s on a loaded 2-core CPU)

# TRPO on Pendulum-v1, 4 seeds, 4 evaluation periods of one collection, checkpoints at 2, 4.
RUN = [
    *("train", "trpo", "--env", "Pendulum-v1", "--num-seeds", "4", "--total-steps", "512"),
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--checkpoint-every", "2", "--run-dir", "run"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _environment() -> dict[str, str]:
    """The command's environment: this checkout's jaxrl, on the CPU (on a GPU machine the
    processes would otherwise share its one GPU), the session's compilation cache."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu", "COLUMNS": "200"}


def _command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "jaxrl", *args]


def _run_job(args: list[str], cwds: list[Path], timeout: float) -> list[tuple[int, str, str]]:
    """``jaxrl *args`` as a job of ``len(cwds)`` processes on localhost (process ``i`` in
    ``cwds[i]``): ``(status, stdout, stderr)`` each. Every process is killed if the job is
    not done within ``timeout`` seconds (or the test fails while it runs)."""
    port = _free_port()
    count = len(cwds)
    processes = []
    with contextlib.ExitStack() as stack:
        for index, cwd in enumerate(cwds):
            launch = ["--coordinator-address", f"localhost:{port}"]
            launch += ["--num-processes", str(count), "--process-id", str(index)]
            process = subprocess.Popen(
                _command([*args, *launch]),
                cwd=cwd,
                env=_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            stack.callback(_kill, process)
            processes.append(process)
        deadline = time.monotonic() + timeout
        results = []
        for index, process in enumerate(processes):
            try:
                out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"the {count}-process job took over {timeout} s (process {index})")
            results.append((process.returncode, out, err))
    return results


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.communicate()


def _evals_without_wall_time(path: Path) -> list[list[str]]:
    rows = [line.split(",") for line in path.read_text().splitlines()]
    wall = rows[0].index("wall_time")
    return [row[:wall] + row[wall + 1 :] for row in rows]


def _alone_then_two(
    args: list[str], tmp_path: Path, prepare: Callable[[Path, Path], None] | None = None
) -> tuple[Path, Path, Path, tuple[str, str], tuple[str, str]]:
    """``jaxrl *args`` as one process in ``tmp_path/single``, then (after
    ``prepare(single, process0)``) as a job of 2, process ``i`` in ``tmp_path/process{i}``:
    the three directories and each job process's ``(stdout, stderr)``, every process having
    ended with status 0."""
    single, first, second = (tmp_path / name for name in ("single", "process0", "process1"))
    for directory in (single, first, second):
        directory.mkdir()
    reference = subprocess.run(
        _command(args),
        cwd=single,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert reference.returncode == 0, reference.stderr[-3000:]
    if prepare is not None:
        prepare(single, first)
    started = time.monotonic()
    (status0, out0, err0), (status1, out1, err1) = _run_job(args, [first, second], TIMEOUT)
    seconds = time.monotonic() - started
    assert status0 == 0, f"process 0 ({seconds:.0f} s):\n{out0}\n{err0[-3000:]}"
    assert status1 == 0, f"process 1 ({seconds:.0f} s):\n{out1}\n{err1[-3000:]}"
    return single, first, second, (out0, err0), (out1, err1)


def _same_run(ours: Path, theirs: Path) -> None:
    """Two run directories hold the same metrics, final evaluation and configuration (bit
    for bit; ``evals.csv`` but its wall time) and checkpoints of the same periods."""
    for name in ("updates.csv", "final_eval.json", "config.json"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    evals = _evals_without_wall_time(ours / "evals.csv")
    assert evals == _evals_without_wall_time(theirs / "evals.csv")
    checkpoints = sorted(p.name for p in (ours / "checkpoints").iterdir())
    assert checkpoints == sorted(p.name for p in (theirs / "checkpoints").iterdir())


@pytest.mark.slow
def test_two_processes_train_the_seeds_of_one_process_bit_for_bit(tmp_path):
    """The 'done when' of issue 29's part 2: 2 local CPU processes on jax.distributed train
    4 seeds; the run directory process 0 writes equals a 1-process run's, and process 1
    writes nothing (it runs in a directory of its own with the same --run-dir)."""
    single, first, second, (out0, err0), (out1, err1) = _alone_then_two(RUN, tmp_path)

    # Process 0 reports as a single process does; process 1 says one line and writes nothing.
    assert "Finished TRPO on Pendulum-v1: 4 seeds x 512 env steps" in out0
    assert "over 2 devices of 2 processes" in err0
    assert out1 == ""
    assert "Process 1 of 2: done (process 0 wrote the run directory)." in err1
    assert not any(second.iterdir()), sorted(p.name for p in second.rglob("*"))

    ours, theirs = first / "run", single / "run"
    _same_run(ours, theirs)
    evals = _evals_without_wall_time(ours / "evals.csv")
    assert {row[0] for row in evals[1:]} == {"0", "1", "2", "3"}  # process 1's seeds too
    assert_kept_checkpoints(ours, [2, 4])
    assert (ours / "learning_curve.png").is_file()
    saved = json.loads((ours / "config.json").read_text())
    assert not set(launch_settings()) & set(saved["run"])  # how it was launched is not saved


def test_a_process_that_cannot_reach_its_coordinator_says_so_within_its_timeout(tmp_path):
    """Process 1 of 2 with no process 0 to join: one line naming the coordinator, status 1,
    after --coordinator-timeout seconds (JAX alone would abort with a stack trace)."""
    port = _free_port()  # nobody listens there
    args = [*RUN, "--coordinator-address", f"localhost:{port}", "--num-processes", "2"]
    args += ["--process-id", "1", "--coordinator-timeout", "3"]
    started = time.monotonic()
    done = subprocess.run(
        _command(args),
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert time.monotonic() - started < 60
    assert (
        f"jaxrl: error: process 1 of 2 could not join the job at localhost:{port} within 3 s"
        in done.stderr
    )
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------
# The launch settings, in this process
# ---------------------------------------------------------------------------------------------


def test_launch_settings_are_run_settings_not_saved_and_taken_on_resume():
    assert launch_settings() == (
        "coordinator_address",
        "num_processes",
        "process_id",
        "coordinator_timeout",
    )
    launched = RunConfig.from_preset(
        "trpo",
        "Pendulum-v1",
        backend="jax",
        coordinator_address="host:1234",
        num_processes=2,
        process_id=1,
    )
    saved = launched.to_dict()
    assert not set(launch_settings()) & set(saved["run"])
    loaded = RunConfig.from_dict(saved)
    assert (loaded.coordinator_address, loaded.num_processes, loaded.process_id) == (
        None,
        None,
        None,
    )
    # A resumed run may be launched with another process layout: no conflict, taken as given.
    resumed = loaded.resumed({"num_processes": 4, "process_id": 3, "coordinator_timeout": 60})
    assert (resumed.num_processes, resumed.process_id, resumed.coordinator_timeout) == (4, 3, 60)
    assert resumed.to_dict() == saved


def test_launch_settings_are_checked_by_the_one_rule():
    with pytest.raises(SettingError) as caught:
        RunSettings(num_processes=2, process_id=2)
    assert caught.value.field == "process_id"
    assert caught.value.describe(lambda n: "--" + n.replace("_", "-")) == (
        "--process-id must be less than --num-processes (2): processes are numbered from 0, got 2"
    )
    with pytest.raises(SettingError, match=r"num_processes must be a positive integer or None"):
        RunSettings(num_processes=0)
    with pytest.raises(SettingError, match=r"coordinator_timeout must be a positive integer"):
        initialize_distributed(coordinator_timeout=0)


def test_a_single_process_joins_nothing(monkeypatch):
    """No launch setting and no cluster manager that launched several processes (a SLURM step
    of one task here): nothing to join, and JAX's distributed runtime is left alone."""
    import jax

    for name in ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_PROCID", "SLURM_LOCALID"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert initialize_distributed() is False
    assert initialize_distributed(RunSettings(num_processes=1)) is False
    assert not jax.distributed.is_initialized()
    with pytest.raises(ValueError, match="coordinator_address is needed"):
        monkeypatch.delenv("SLURM_NTASKS")
        initialize_distributed(num_processes=2, process_id=0)


def test_seeds_must_split_evenly_over_the_jobs_devices():
    two_devices = SeedPlacement(types.SimpleNamespace(devices=np.zeros(2)))  # a mesh's size
    two_devices.check(4)
    with pytest.raises(SettingError) as caught:
        two_devices.check(3)
    assert caught.value.field == "num_seeds"
    assert "must be a multiple of the job's 2 devices" in str(caught.value)


# TRPO on Pendulum-v1: 3 settings of one group x 2 seeds, 2 evaluation periods.
SWEEP = [
    *("sweep", "trpo", "--env", "Pendulum-v1", "--num-seeds", "2", "--total-steps", "256"),
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--sweep", "max-kl=0.005,0.02,0.05", "--sweep-dir", "sweep"),
]


@pytest.mark.slow
def test_two_processes_sweep_as_one_process_does_and_resume_what_process_0_finds(tmp_path):
    """Issue 54's part 4: 2 local CPU processes train the settings x seeds of a sweep group
    split over their devices; the sweep directory process 0 writes equals a 1-process
    sweep's (ranking, table, each setting's metrics and final evaluation, bit for bit), and
    process 1 writes nothing. The job resumes a sweep whose last setting has finished: only
    process 0 sees that (process 1 runs in a directory of its own), and both train the same
    2 settings (a disagreement would hang a collective or change the program's shapes)."""
    done = Path("sweep/runs/max_kl=0.05")
    kept = {}

    def prepare(single: Path, first: Path) -> None:  # the last setting finished already
        (first / done).parent.mkdir(parents=True)
        shutil.copy(single / "sweep/sweep.json", first / "sweep/sweep.json")
        shutil.copytree(single / done, first / done)
        kept.update({p: p.stat().st_mtime_ns for p in (first / done).rglob("*")})

    single, first, second, (out0, err0), (out1, err1) = _alone_then_two(SWEEP, tmp_path, prepare)
    assert "group 1: 2 setting(s) x 2 seeds: max_kl=0.005; max_kl=0.02" in err0
    assert "# Sweep ranking (3 of 3 settings finished)" in out0
    assert out1 == ""
    assert "Process 1 of 2: done (process 0 wrote the sweep directory)." in err1
    assert not any(second.iterdir()), sorted(p.name for p in second.rglob("*"))
    assert {p: p.stat().st_mtime_ns for p in (first / done).rglob("*")} == kept  # not retrained

    ours, theirs = first / "sweep", single / "sweep"
    for name in ("sweep.json", "sweep.md"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    assert _sweep_rows(ours / "sweep.csv") == _sweep_rows(theirs / "sweep.csv")
    for setting in ("max_kl=0.005", "max_kl=0.02"):
        _same_run(ours / "runs" / setting, theirs / "runs" / setting)


def _sweep_rows(path: Path) -> list[dict[str, str]]:
    """``sweep.csv``'s rows without their wall time."""
    with open(path) as handle:
        return [
            {k: v for k, v in row.items() if k != "wall_time"} for row in csv.DictReader(handle)
        ]


# TRPO on Pendulum-v1: one batch of 2 trials (the base run's values, then one the sampler
# draws) x 2 search seeds, 2 evaluation periods.
TUNE = [
    *("tune", "trpo", "--env", "Pendulum-v1", "--num-seeds", "2", "--total-steps", "256"),
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--search", "max-kl=0.002:0.05:log", "--trials", "2"),
    *("--batch", "2", "--tune-dir", "tune"),
]


@pytest.mark.slow
def test_two_processes_tune_a_batch_as_one_process_does(tmp_path):
    """`jaxrl tune` as a job of 2 local CPU processes: process 0 alone asks the study
    and sends the batch's settings to process 1; the batch trains over both processes'
    devices; the tuning directory's table and each trial's metrics equal a 1-process
    study's, bit for bit, and process 1 writes nothing."""
    single, first, second, (out0, err0), (out1, err1) = _alone_then_two(TUNE, tmp_path)
    assert "batch 1: trials 0, 1" in err0 and "2 complete, 0 pruned, 0 failed" in out0
    assert out1 == ""
    assert "Process 1 of 2: done (process 0 wrote the tuning directory)." in err1
    assert not any(second.iterdir()), sorted(p.name for p in second.rglob("*"))
    ours, theirs = first / "tune", single / "tune"
    for name in ("tune.json", "tune.csv", "best.json"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    for trial in ("trial-0", "trial-1"):
        _same_run(ours / "trials" / trial, theirs / "trials" / trial)


def test_host_studies_run_in_one_process(capsys, monkeypatch):
    """A host environment's sweep or study in a job of several processes is refused in one
    line naming the option and what to use instead (here the job is faked: joining it needs
    other processes); a launch setting cannot be swept."""
    from jaxrl.cli import main
    from jaxrl.studies.grid import SweepError, parse_grid
    from jaxrl.training import sharding

    joined = []
    monkeypatch.setattr(sharding, "initialize_distributed", lambda **kw: joined.append(kw))
    monkeypatch.setattr(sharding, "several_processes", lambda: True)
    launch = ["--coordinator-address", "localhost:1", "--num-processes", "2", "--process-id", "0"]
    host = ["trpo", "--env", "Pendulum-v1", "--backend", "gymnasium"]
    assert main(["sweep", *host, "--sweep", "max-kl=0.01,0.02", *launch]) == 2
    assert capsys.readouterr().err == (
        "jaxrl: error: --coordinator-address: jaxrl sweep on a host environment "
        "(Pendulum-v1) runs in one process; use --jobs N to train its settings side by side\n"
    )
    assert [kw["num_processes"] for kw in joined] == [2]
    for name, value in (("SLURM_JOB_ID", "7"), ("SLURM_STEP_NODELIST", "node1")):
        monkeypatch.setenv(name, value)
    for name, value in (("SLURM_PROCID", "0"), ("SLURM_LOCALID", "0"), ("SLURM_NTASKS", "4")):
        monkeypatch.setenv(name, value)
    assert main(["tune", *host, "--search", "max-kl=0.01:0.02"]) == 2
    assert capsys.readouterr().err == (
        "jaxrl: error: 4 processes (a cluster manager's): jaxrl tune on a host environment "
        "(Pendulum-v1) runs in one process; run more tune workers on the same --storage "
        "instead\n"
    )
    with pytest.raises(SweepError, match=r"num_processes: cannot be swept \(a launch setting"):
        parse_grid("trpo", "pendulum", ["num_processes=1,2"])

"""``jaxrl train`` stopped by Ctrl-C (SIGINT) or SIGTERM (a cluster's preemption, ``kill``):
pending checkpoint writes finish, the process exits with status 130 and prints the command
that continues the run, and ``--resume`` finishes it with continuous metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from jaxrl.runs import CheckpointStore, read_csv

from .helpers import TINY, Result, ctrl_c_as_in_a_terminal, jaxrl_command

PERIODS = 40  # of 128 env steps each: a few seconds of training after the first checkpoint
RUN = ["train", "trpo", *TINY, "--total-steps", str(128 * PERIODS), "--checkpoint-every", "1"]


def signal_when(
    args: list[str],
    ready: Callable[[], bool],
    environment: dict[str, str],
    signum: int = signal.SIGTERM,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """Start ``jaxrl *args`` (Ctrl-C at its default, as in a terminal) and send ``signum``
    once ``ready()`` (polled; the process is killed after ``timeout`` seconds)."""
    process = subprocess.Popen(
        [*jaxrl_command(), *map(str, args)],
        env=environment,
        preexec_fn=ctrl_c_as_in_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if ready():
                process.send_signal(signum)
                break
            time.sleep(0.005)
        stdout, stderr = process.communicate(timeout=max(deadline - time.monotonic(), 30))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def interrupt_after_first_checkpoint(
    run_dir: Path, signum: int, environment: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess:
    """Start ``jaxrl train`` and send ``signum`` once its first checkpoint is finalized."""
    checkpoints = run_dir / "checkpoints"

    def ready() -> bool:
        return checkpoints.is_dir() and bool(CheckpointStore(checkpoints).steps())

    return signal_when([*RUN, "--run-dir", run_dir], ready, environment, signum, timeout)


def evaluated_periods(evals: Path, num_seeds: int = 2) -> int:
    """Evaluation periods logged to ``evals`` after the initial policy's (0 if none)."""
    if not evals.is_file():
        return 0
    return max((evals.read_text().count("\n") - 1) // num_seeds - 1, 0)


@pytest.fixture(scope="module")
def environment(shared_root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(shared_root / "xla-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PLATFORMS": "cpu",
        "COLUMNS": "200",
    }


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_run_exits_130_and_resumes_to_the_end(
    signum: int, environment: dict[str, str], jaxrl: Callable[..., Result], tmp_path: Path
):
    run_dir = tmp_path / "run"
    stopped = interrupt_after_first_checkpoint(run_dir, signum, environment)
    assert stopped.returncode == 130, (stopped.returncode, stopped.stdout, stopped.stderr[-3000:])
    # Ctrl-C interrupts at once; SIGTERM stops at the end of the period (checkpointed).
    said = "Interrupted." if signum == signal.SIGINT else "(checkpointed)."
    assert f"{said} Continue with: jaxrl train trpo --resume {run_dir}" in stopped.stderr
    assert "Traceback" not in stopped.stderr and "Finished" not in stopped.stdout
    checkpoints = run_dir / "checkpoints"
    saved = CheckpointStore(checkpoints).steps()
    assert saved and saved[-1] < PERIODS, saved  # stopped part-way, with a checkpoint
    assert not list(checkpoints.glob("*orbax-checkpoint-tmp*"))  # pending writes finished

    # (Checkpoints only at the end from here: the resume may change the interval.)
    resumed = jaxrl("train", "trpo", "--resume", run_dir, "--checkpoint-every", "0").check()
    assert f"resuming at period {saved[-1]}/{PERIODS}" in resumed.stderr
    assert f"2 seeds x {128 * PERIODS:,} env steps (period {PERIODS}/{PERIODS})" in resumed.stdout
    assert CheckpointStore(checkpoints).latest_step() == PERIODS
    # Continuous metrics: one evaluation per seed and period, each once, from 0 to the end;
    # one update row per seed and update.
    evals = read_csv(run_dir / "evals.csv")
    for seed in (0, 1):
        steps = evals["env_steps"][evals["seed"] == seed]
        np.testing.assert_array_equal(steps, 128 * np.arange(PERIODS + 1))
    updates = read_csv(run_dir / "updates.csv")
    np.testing.assert_array_equal(
        np.sort(updates["update"]), np.repeat(np.arange(1, PERIODS + 1), 2)
    )


def test_sigterm_checkpoints_the_period_it_stops_at_and_resumes_as_if_uninterrupted(
    environment: dict[str, str], jaxrl: Callable[..., Result], tmp_path: Path
):
    """SIGTERM (preemption) with no periodic checkpoints: the run checkpoints the period it
    stops at (nothing it finished is lost), exits 130 with the resume command, and the
    resumed run ends with an uninterrupted run's numbers (the jitted driver: bit-identical
    on a CPU)."""
    run = ["train", "trpo", *TINY, "--total-steps", str(128 * PERIODS), "--checkpoint-every", "0"]
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [*jaxrl_command(), *run, "--run-dir", str(run_dir)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    evals, deadline = run_dir / "evals.csv", time.monotonic() + 300
    while not (evals.is_file() and evals.read_text().count("\n") >= 1 + 2 * 3):  # period 2
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    assert f"(checkpointed). Continue with: jaxrl train trpo --resume {run_dir}" in stderr
    saved = CheckpointStore(run_dir / "checkpoints").steps()
    logged = int(read_csv(evals)["period"].max())
    assert saved == [logged] and 2 <= logged < PERIODS, (saved, logged)
    jaxrl("train", "trpo", "--resume", run_dir).check()
    plain = tmp_path / "plain"
    jaxrl(*run, "--run-dir", plain).check()
    assert (run_dir / "final_eval.json").read_text() == (plain / "final_eval.json").read_text()
    for name in ("eval_return", "env_steps", "period"):
        np.testing.assert_array_equal(
            read_csv(run_dir / "evals.csv")[name], read_csv(plain / "evals.csv")[name]
        )


def _evals_without_wall_time(run_dir: Path) -> dict[str, np.ndarray]:
    evals = read_csv(run_dir / "evals.csv")
    return {k: v for k, v in evals.items() if k != "wall_time"}


def _assert_same_run(run_dir: Path, plain: Path) -> None:
    """The same evaluations (every period and seed) and the same final evaluation."""
    resumed, whole = _evals_without_wall_time(run_dir), _evals_without_wall_time(plain)
    assert resumed.keys() == whole.keys()
    for name in resumed:
        np.testing.assert_array_equal(resumed[name], whole[name], err_msg=name)
    assert (run_dir / "final_eval.json").read_text() == (plain / "final_eval.json").read_text()


SWEEP = ["sweep", "trpo", *TINY, "--total-steps", str(128 * PERIODS), "--checkpoint-every", "0"]
SWEEP += ["--sweep", "max-kl=0.005,0.02"]


def test_sigterm_checkpoints_a_sweep_group_and_the_sweep_resumes_it_as_if_uninterrupted(
    environment: dict[str, str], jaxrl: Callable[..., Result], tmp_path: Path
):
    """A JAX sweep group (2 settings in one program) stopped by SIGTERM checkpoints every
    setting at the period it stops at; the same command continues the group from there and
    ends with an uninterrupted sweep's numbers (bit-identical on a CPU)."""
    sweep_dir = tmp_path / "sweep"
    first = sweep_dir / "runs" / "max_kl=0.005"
    stopped = signal_when(
        [*SWEEP, "--sweep-dir", sweep_dir],
        lambda: evaluated_periods(first / "evals.csv") >= 2,
        environment,
    )
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr
    assert (
        "Stopped by SIGTERM with 0 of 2 settings finished (the group under way checkpointed). "
        f"Continue with: jaxrl {' '.join(SWEEP)} --sweep-dir {sweep_dir}"
    ) in stopped.stderr
    logged = int(read_csv(first / "evals.csv")["period"].max())
    assert 2 <= logged < PERIODS
    for setting in ("max_kl=0.005", "max_kl=0.02"):  # both, at the same period
        assert CheckpointStore(sweep_dir / "runs" / setting / "checkpoints").steps() == [logged]
    resumed = jaxrl(*SWEEP, "--sweep-dir", sweep_dir).check()
    assert f"resuming at period {logged}/{PERIODS}" in resumed.stderr
    whole = tmp_path / "whole"
    jaxrl(*SWEEP, "--sweep-dir", whole).check()
    for setting in ("max_kl=0.005", "max_kl=0.02"):
        _assert_same_run(sweep_dir / "runs" / setting, whole / "runs" / setting)


def test_sigterm_leaves_a_tune_trial_checkpointed_and_the_next_worker_finishes_it(
    environment: dict[str, str], jaxrl: Callable[..., Result], tmp_path: Path
):
    """``jaxrl tune`` stopped by SIGTERM: its trial stays running in the study, checkpointed
    at its period; the same command continues it from there (not asked again) and the trial
    ends with an uninterrupted study's numbers."""
    tune = ["tune", "trpo", *TINY, "--total-steps", str(128 * PERIODS)]
    tune += ["--checkpoint-every", "0", "--search", "max-kl=0.01,0.02"]
    tune += ["--trials", "1", "--batch", "1"]
    tune_dir = tmp_path / "tune"
    trial = tune_dir / "trials" / "trial-0"
    stopped = signal_when(
        [*tune, "--tune-dir", tune_dir],
        lambda: evaluated_periods(trial / "evals.csv") >= 2,
        environment,
    )
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr
    assert "Stopped by SIGTERM with 0 of 1 trials ended" in stopped.stderr
    logged = int(read_csv(trial / "evals.csv")["period"].max())
    assert CheckpointStore(trial / "checkpoints").steps() == [logged] and logged < PERIODS
    resumed = jaxrl(*tune, "--tune-dir", tune_dir).check()
    assert "trials 0 of a stopped worker: resumed from their checkpoints" in resumed.stderr
    assert f"resuming at period {logged}/{PERIODS}" in resumed.stderr
    assert not (tune_dir / "trials" / "trial-1").exists()  # not asked again
    whole = tmp_path / "whole"
    jaxrl(*tune, "--tune-dir", whole).check()
    _assert_same_run(trial, whole / "trials" / "trial-0")


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt in this process during the test (as in a terminal,
    whatever the test runner set), its handler restored after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_as_a_checkpoint_write_starts_comes_once_the_write_has_started(
    tmp_path, monkeypatch, ctrl_c_raises
):
    # Raised among the threads orbax starts, KeyboardInterrupt can leave a lock of
    # `threading` taken and the process hung at exit; it comes after the start instead.
    import orbax.checkpoint as ocp

    start_write = ocp.CheckpointManager.save
    started: list[int] = []

    def interrupted(manager, step, *args, **kwargs):
        signal.raise_signal(signal.SIGINT)  # Ctrl-C before orbax starts anything
        started.append(step)
        return start_write(manager, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", interrupted)
    store = CheckpointStore(tmp_path / "checkpoints")
    with pytest.raises(KeyboardInterrupt):
        store.save(1, {"w": np.arange(3.0)})
    assert started == [1]
    store.close()  # what the command does on Ctrl-C: pending writes finish
    assert store.steps() == [1]
    assert [p.name for p in store.directory.iterdir() if "tmp" in p.name] == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_deferred_signals_reach_their_handlers_in_order_after_the_block(ctrl_c_raises):
    from jaxrl.runs.preemption import interrupts_deferred

    came: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _: came.append(signum))
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                signal.raise_signal(signal.SIGTERM)
                signal.raise_signal(signal.SIGINT)
                assert came == []  # held back
        assert came == [signal.SIGTERM]  # then delivered: SIGTERM's handler, then Ctrl-C
        with interrupts_deferred():  # nothing came: nothing is delivered
            pass
        assert came == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def handlers_restored(monkeypatch):
    """The handlers a :class:`~jaxrl.runs.preemption.Preemption` installs, restored after;
    yields the exceptions Python drops (``sys.unraisablehook``) while the test runs."""
    signums = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)
    previous = {signum: signal.getsignal(signum) for signum in signums}
    dropped: list = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    yield dropped
    signal.setitimer(signal.ITIMER_REAL, 0)
    for signum, handler in previous.items():
        signal.signal(signum, handler)


class _Collected:
    """An object whose finalizer sends this process ``signum`` (or raises ``fault``)."""

    def __init__(self, signum: int | None = None, fault: Exception | None = None) -> None:
        self.signum, self.fault = signum, fault

    def __del__(self) -> None:
        if self.signum is not None:
            signal.raise_signal(self.signum)  # a KeyboardInterrupt it raises is dropped
        if self.fault is not None:
            raise self.fault


def test_a_ctrl_c_that_python_drops_in_a_finalizer_stops_the_run_at_the_next_period(
    ctrl_c_raises, handlers_restored
):
    """Python drops a KeyboardInterrupt raised while a finalizer or a collector callback
    runs; an orbax save's event loop is collected after each checkpoint, and JAX runs a
    callback on every collection. A Ctrl-C that comes then was once lost (the run trained
    to its end and exited 0), and was once reported with a traceback."""
    from jaxrl.runs.preemption import Preemption

    preemption = Preemption().install()
    _Collected(signal.SIGINT)
    assert preemption.interrupted
    assert handlers_restored == []  # not reported: it is not lost
    _Collected(fault=ValueError("a finalizer's own fault"))
    assert [dropped.exc_type for dropped in handlers_restored] == [ValueError]  # reported
    with pytest.raises(KeyboardInterrupt):
        preemption()  # the run's stop after the period


def test_a_second_sigterm_that_python_drops_in_a_finalizer_stops_the_run_at_the_period(
    handlers_restored,
):
    from jaxrl.runs.preemption import Preemption

    preemption = Preemption().install()
    _Collected(signal.SIGTERM)  # the request: no interruption yet
    _Collected(signal.SIGTERM)  # the second: now, but dropped
    assert preemption.requested and not preemption.interrupted
    assert handlers_restored == []
    assert preemption()  # the run stops (checkpointed) at this period


def test_a_ctrl_c_ignored_from_the_start_stays_ignored(handlers_restored):
    """A process started with SIGINT ignored (in the background of a shell) keeps it so."""
    from jaxrl.runs.preemption import Preemption

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preemption = Preemption().install()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert not preemption()

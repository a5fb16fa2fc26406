"""Kill points: the commands killed at seeded random points (SIGKILL: no chance to clean up;
SIGTERM: a preemption) and started again until they finish, against an uninterrupted run.

Each test is a chain: the command starts, is killed once its progress (evaluation periods
logged) reaches a drawn target plus a drawn delay, and starts again (``--resume`` or the
same command) for the next kill point, until a last call finishes it. Then:

- the JAX driver (``jaxrl train``, ``jaxrl sweep``, ``jaxrl tune`` on gymnax): the final
  results equal an uninterrupted run's exactly (every evaluation of every period and seed,
  and the final evaluation);
- the host driver (``jaxrl train --backend gymnasium``, the MuJoCo table): a resumed run
  continues on fresh environments (documented), so its numbers differ from an uninterrupted
  run's; what must hold is that nothing is lost or repeated: every evaluation period and
  update logged exactly once per seed, every file readable.

Every kill is counted: the tests assert that each drawn point was reached with the command
still running (17 points in all: train JAX 4, train host 4, sweep 3, tune 4, table 2).

A point costs a fresh process (Python and JAX start-up, the programs loaded from the
compilation cache, the checkpoint restored): the JAX driver's train chain leaves out the two
drawn points that repeat an earlier point's transition (the same kind of call, a fresh,
SIGKILLed or SIGTERMed one, killed by the same signal), and the sweep's chain one, named
there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from jaxrl.runs import read_csv
from tests.benchmark_scripts.conftest import scripts_cache
from tests.cli.helpers import ctrl_c_as_in_a_terminal
from tests.conftest import optimized_programs

ROOT = Path(__file__).resolve().parents[2]
PERIODS = 24  # evaluation periods of 128 env steps per seed
TINY = [
    *("--num-envs", "4", "--num-steps", "32", "--eval-every", "128", "--eval-episodes", "2"),
    *("--hidden-sizes", "8", "--num-seeds", "2"),
]
# The killed commands checkpoint every period (the command's default, said here: a kill
# loses at most the period under way); the uninterrupted runs they are held to only at the
# end, since checkpoints do not change what a run learns (which they show too).
EVERY_PERIOD = ["--checkpoint-every", "1"]
AT_THE_END = ["--checkpoint-every", "0"]
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The commands' environment, with the benchmark scripts' compilation cache (shared by
    the test session's workers): the MuJoCo table's programs the benchmark tests compiled
    are loaded, not compiled again."""
    return {
        **os.environ,
        **scripts_cache(tmp_path_factory),
        "JAX_PLATFORMS": "cpu",
        "COLUMNS": "200",
    }


def kill_points(seed: int, count: int, last: int) -> list[tuple[int, float, str]]:
    """``count`` kill points drawn with ``seed``: increasing progress targets in
    ``[1, last]``, a delay after each (0-50 ms) and the signal."""
    rng = np.random.default_rng(seed)
    targets = np.sort(rng.choice(np.arange(1, last + 1), count, replace=False))
    delays = rng.uniform(0.0, 0.05, count)
    names = rng.choice(sorted(SIGNALS), count)
    return [(int(t), float(d), str(n)) for t, d, n in zip(targets, delays, names, strict=True)]


def periods_logged(files: Sequence[Path], seeds: int = 2) -> int:
    """Evaluation periods logged in the ``evals.csv`` files, summed (the initial policy's
    evaluation not counted)."""
    total = 0
    for path in files:
        if path.is_file():
            total += max((path.read_text().count("\n") - 1) // seeds - 1, 0)
    return total


def kill_chain(
    command: list[str],
    again: list[str],
    progress: Callable[[], int],
    points: list[tuple[int, float, str]],
    environment: dict[str, str],
    script: Sequence[str] = ("-m", "jaxrl"),
    timeout: float = 600,
) -> list[str]:
    """Run ``command``, kill it at each of ``points`` (starting ``again`` after each kill;
    a point is taken after the call has logged a period of its own),
    then run ``again`` to the end. Returns the kills' descriptions; asserts that each came
    while the command ran, and that no call printed a traceback."""
    done, args = [], command
    for target, delay, name in points:
        process = subprocess.Popen(
            [sys.executable, *script, *map(str, args)],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + timeout
        # The point is in this call's own training: past the target, and past where the
        # call started (a resumed call first trims what came after its checkpoint).
        start = progress()
        while process.poll() is None:
            now = progress()  # once a poll: reading the logs is the poll's cost
            if now >= target and now > start:
                break
            assert time.monotonic() < deadline, f"kill point {target} not reached"
            time.sleep(0.002)
        time.sleep(delay)
        running = process.poll() is None
        if running:
            process.send_signal(SIGNALS[name])
        _, stderr = process.communicate(timeout=timeout)
        assert running, f"the command ended before kill point {target}: {stderr[-2000:]}"
        assert "Traceback" not in stderr, stderr[-3000:]
        if name == "SIGTERM":  # stopped at a period's end (or finished it), said how to go on
            assert process.returncode in (0, 130), stderr[-3000:]
        done.append(f"{name} at {target}+{delay * 1000:.0f}ms")
        args = again
    final = subprocess.run(
        [sys.executable, *script, *map(str, again)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert final.returncode == 0, final.stderr[-3000:]
    return done


def run(args: list, environment: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jaxrl", *map(str, args)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def evals(run_dir: Path) -> dict[str, np.ndarray]:
    return {k: v for k, v in read_csv(run_dir / "evals.csv").items() if k != "wall_time"}


def assert_same_run(run_dir: Path, plain: Path) -> None:
    """Every evaluation (period, seed) and the final evaluation of an uninterrupted run."""
    got, want = evals(run_dir), evals(plain)
    assert got.keys() == want.keys()
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{run_dir}: {name}")
    assert (run_dir / "final_eval.json").read_text() == (plain / "final_eval.json").read_text()


def assert_logged_once(run_dir: Path, periods: int, seeds: int = 2) -> None:
    """Each seed's evaluations at every period from 0 to ``periods``, each once; one update
    row per seed and update (one update per period here); every file readable."""
    logged = read_csv(run_dir / "evals.csv")
    for seed in range(seeds):
        np.testing.assert_array_equal(
            logged["period"][logged["seed"] == seed], np.arange(periods + 1)
        )
    updates = read_csv(run_dir / "updates.csv")
    for seed in range(seeds):
        np.testing.assert_array_equal(
            np.sort(updates["update"][updates["seed"] == seed]), np.arange(1, periods + 1)
        )
    json.loads((run_dir / "final_eval.json").read_text())
    json.loads((run_dir / "config.json").read_text())


@pytest.mark.slow
def test_train_on_the_jax_driver_killed_at_four_points_ends_as_if_uninterrupted(
    environment: dict[str, str], tmp_path: Path
):
    budget = ["--total-steps", str(128 * PERIODS)]
    run_dir, plain = tmp_path / "run", tmp_path / "plain"
    # Drawn: SIGKILL 1 (a fresh call), SIGTERM 3 (after a SIGKILL), SIGKILL 8 (after a
    # SIGTERM), SIGKILL 9 (after a SIGKILL); the draw's last two, SIGTERM 13 after a SIGKILL
    # and SIGKILL 18 after a SIGTERM, repeat the second and the third: left out.
    points = kill_points(1, 6, PERIODS - 4)[:4]
    kills = kill_chain(
        ["train", "trpo", *TINY, *EVERY_PERIOD, *budget, "--run-dir", run_dir],
        ["train", "trpo", "--resume", run_dir],
        lambda: periods_logged([run_dir / "evals.csv"]),
        points,
        environment,
    )
    assert len(kills) == 4, kills
    run(["train", "trpo", *TINY, *AT_THE_END, *budget, "--run-dir", plain], environment)
    assert_same_run(run_dir, plain)
    assert_logged_once(run_dir, PERIODS)


@pytest.mark.slow
def test_train_on_the_host_driver_killed_at_four_points_loses_and_repeats_nothing(
    environment: dict[str, str], tmp_path: Path
):
    periods = 12
    run_dir = tmp_path / "run"
    command = ["train", "trpo", "--backend", "gymnasium", *TINY, *EVERY_PERIOD]
    command += ["--total-steps", str(128 * periods), "--run-dir", run_dir]
    kills = kill_chain(
        command,
        ["train", "trpo", "--resume", run_dir],
        lambda: periods_logged([run_dir / "evals.csv"]),
        kill_points(2, 4, periods - 3),
        environment,
    )
    assert len(kills) == 4, kills
    assert_logged_once(run_dir, periods)


@pytest.mark.slow
def test_a_sweep_killed_at_three_points_ends_as_if_uninterrupted(
    environment: dict[str, str], tmp_path: Path
):
    sweep = ["sweep", "trpo", *TINY, "--total-steps", str(128 * PERIODS)]
    sweep += ["--sweep", "max-kl=0.005,0.02"]
    sweep_dir, whole = tmp_path / "sweep", tmp_path / "whole"
    settings = ("max_kl=0.005", "max_kl=0.02")
    kills = kill_chain(
        [*sweep, *EVERY_PERIOD, "--sweep-dir", sweep_dir],
        [*sweep, *EVERY_PERIOD, "--sweep-dir", sweep_dir],
        lambda: periods_logged([sweep_dir / "runs" / settings[0] / "evals.csv"]),
        # Drawn: SIGTERM 2 (a fresh call), SIGTERM 4 (after a SIGTERM), SIGTERM 5 (after a
        # SIGTERM: the second's transition again, left out), SIGKILL 14 (after a SIGTERM).
        [point for i, point in enumerate(kill_points(3, 4, PERIODS - 4)) if i != 2],
        environment,
    )
    assert len(kills) == 3, kills
    run([*sweep, *AT_THE_END, "--sweep-dir", whole], environment)
    for setting in settings:
        assert_same_run(sweep_dir / "runs" / setting, whole / "runs" / setting)
        assert_logged_once(sweep_dir / "runs" / setting, PERIODS)
    ranking = (sweep_dir / "sweep.md").read_text()
    assert ranking == (whole / "sweep.md").read_text()


@pytest.mark.slow
def test_a_tune_killed_at_four_points_finishes_its_trials_each_as_a_plain_run(
    environment: dict[str, str], tmp_path: Path
):
    """No trial is lost or trained twice to the end: the study ends with the trials asked
    for complete (a trial killed before its first checkpoint is failed and asked again,
    marked so), and each complete trial's numbers are a plain run's with its values."""
    import optuna

    periods, trials = 12, 3
    tune = ["tune", "trpo", *TINY, "--total-steps", str(128 * periods)]
    tune += ["--search", "max-kl=0.01,0.02", "--trials", str(trials), "--batch", "1"]
    tune_dir = tmp_path / "tune"
    kills = kill_chain(
        [*tune, *EVERY_PERIOD, "--tune-dir", tune_dir],
        [*tune, *EVERY_PERIOD, "--tune-dir", tune_dir],
        lambda: periods_logged(list((tune_dir / "trials").glob("*/evals.csv"))),
        kill_points(4, 4, trials * periods - 4),
        environment,
    )
    assert len(kills) == 4, kills
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tune_dir / "study.log"))
    )
    study = optuna.load_study(study_name="tune", storage=storage)
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") == trials, states
    for trial in study.trials:
        assert trial.state.name == "COMPLETE" or trial.user_attrs.get("orphaned"), trial
    plains: dict[float, Path] = {}
    for trial in study.trials:
        if trial.state.name != "COMPLETE":
            continue
        max_kl = float(trial.params["max_kl"])
        if max_kl not in plains:
            plains[max_kl] = tmp_path / f"plain-{max_kl}"
            options = ["--max-kl", max_kl, "--seed", "1000", *AT_THE_END]
            options += ["--run-dir", plains[max_kl]]
            run(["train", "trpo", *TINY, "--total-steps", 128 * periods, *options], environment)
        trial_dir = tune_dir / "trials" / f"trial-{trial.number}"
        assert_same_run(trial_dir, plains[max_kl])
        assert_logged_once(trial_dir, periods)


@pytest.mark.slow
def test_the_mujoco_table_killed_at_two_points_records_every_group_once(
    environment: dict[str, str], tmp_path: Path
):
    """The table command (``--quick``: TRPO on InvertedPendulum, DDPG on Hopper, host
    driver) killed twice: every group's rows recorded once, each with every evaluation."""
    pytest.importorskip("mujoco")
    # 3 periods: the kill points are the last period of the first group (TRPO) and the first
    # of the second (DDPG), as with any budget; a 4th period only trained more DDPG updates.
    periods = 3
    command = [str(ROOT / "benchmarks" / "mujoco_table.py"), "--quick", "--no-tianshou"]
    command += ["--out", str(tmp_path), "--total-steps", str(1024 * periods)]
    results = tmp_path / "mujoco_table.jsonl"

    def progress() -> int:  # periods of the groups under way, and of the recorded ones
        runs = list((tmp_path / "mujoco_table_runs").glob("*/evals.csv"))
        recorded = results.read_text().count("\n") if results.is_file() else 0
        return periods_logged(runs) + recorded // 2 * periods

    kills = kill_chain(
        [],
        [],
        progress,
        kill_points(5, 2, 2 * periods - 2),
        {**environment, **optimized_programs()},
        script=command,
    )
    assert len(kills) == 2, kills
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted((r["algo"], r["seed"]) for r in rows) == [
        ("ddpg", 0), ("ddpg", 1), ("trpo", 0), ("trpo", 1)
    ]  # fmt: skip
    for row in rows:
        assert row["eval_env_steps"] == [1024 * p for p in range(1, periods + 1)], row


@pytest.mark.slow
def test_the_mujoco_table_interrupted_ends_in_one_line(environment: dict[str, str], tmp_path):
    """A Ctrl-C in the table command's training: exit 130 and one line that continues it."""
    pytest.importorskip("mujoco")
    command = [str(ROOT / "benchmarks" / "mujoco_table.py"), "--quick", "--no-tianshou"]
    # The budget of the kill test above: its programs, compiled optimized, are in the cache.
    command += ["--out", str(tmp_path), "--total-steps", str(1024 * 3)]
    process = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env={**environment, **optimized_programs()},
        preexec_fn=ctrl_c_as_in_a_terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while process.poll() is None and not periods_logged(
        list((tmp_path / "mujoco_table_runs").glob("*/evals.csv"))
    ):
        assert time.monotonic() < deadline, "no period logged"
        time.sleep(0.01)
    assert process.poll() is None, "the table ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "Continue with:" in stderr.splitlines()[-1], stderr[-2000:]

"""``jaxrl sweep``: a grid of settings x seeds, each setting trained as ``jaxrl train`` would
train it (one compiled program per group), ranked, and resumable."""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxrl import load
from jaxrl.runs import RunDirError

from .helpers import TINY, Result, saved_by_an_earlier_version, single_error_line

BUDGET = ["--total-steps", "256"]  # 2 collections of 4 x 32, 2 evaluation periods
GRID = ["--sweep", "max-kl=0.005,0.02", "--sweep", "gae-lambda=0.9,0.97"]
# Exact on a CPU, where the seed axis of on-policy runs is mapped (each seed's computation
# the same in a sweep and a plain run). A backend that vmaps it batches G x S seeds in a
# sweep and S in a plain run, so float reductions may round differently there.
EXACT = jax.default_backend() == "cpu"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def _assert_close(a: np.ndarray, b: np.ndarray) -> None:
    if EXACT:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-4)


def _per_seed_evals(run_dir: Path) -> np.ndarray:
    rows = _rows(run_dir / "evals.csv")
    return np.asarray([[float(r["env_steps"]), float(r["eval_return"])] for r in rows])


def test_a_sweep_trains_every_setting_as_train_does(jaxrl: Callable[..., Result], tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = jaxrl("sweep", "trpo", *TINY, *BUDGET, *GRID, "--sweep-dir", sweep_dir).check()
    assert "group 1: 4 setting(s) x 2 seeds" in result.stderr  # one group, one program
    progress = "group 1/1 TRPO Pendulum-v1 4 settings x2 | env steps "  # train's, per period
    lines = [line for line in result.stderr.splitlines() if line.startswith(progress)]
    assert [line.split(" | ")[1] for line in lines] == [
        "env steps 128/256 per seed", "env steps 256/256 per seed"]  # fmt: skip
    assert "| best eval return " in lines[0] and "| eta " in lines[0], lines
    assert "| rank | max_kl | gae_lambda | seeds | mean +- std | 95% CI | IQM [95% CI] |" in (
        result.stdout
    )
    rows = _rows(sweep_dir / "sweep.csv")
    assert len(rows) == 8
    combinations = {(r["max_kl"], r["gae_lambda"], r["seed"]) for r in rows}
    assert combinations == set(itertools.product(["0.005", "0.02"], ["0.9", "0.97"], ["0", "1"]))
    assert all(int(r["env_steps"]) == 256 for r in rows)
    grid = json.loads((sweep_dir / "sweep.json").read_text())["grid"]
    assert grid == {"max_kl": [0.005, 0.02], "gae_lambda": [0.9, 0.97]}
    ranking = (sweep_dir / "sweep.md").read_text().splitlines()
    means = [float(line.split("|")[5].split("+-")[0]) for line in ranking if line[:3] == "| 1"]
    assert means and (sweep_dir / "sweep.png").stat().st_size > 0
    # Each setting's numbers are a plain run's, seed by seed (two corners of the grid).
    for max_kl, lam in (("0.005", "0.9"), ("0.02", "0.97")):
        plain = tmp_path / f"plain-{max_kl}-{lam}"
        options = ["--max-kl", max_kl, "--gae-lambda", lam, "--run-dir", plain]
        jaxrl("train", "trpo", *TINY, *BUDGET, *options).check()
        setting = sweep_dir / "runs" / f"max_kl={max_kl},gae_lambda={lam}"
        _assert_close(_per_seed_evals(setting), _per_seed_evals(plain))
        final = json.loads((plain / "final_eval.json").read_text())["deterministic"]
        swept = [float(r["final_return"]) for r in rows if (r["max_kl"], r["gae_lambda"]) == (
            max_kl, lam)]  # fmt: skip
        _assert_close(np.asarray(swept), np.asarray(final))
    # A setting's directory is a run directory: the other commands read it, and jaxrl.load.
    runs = sorted((sweep_dir / "runs").iterdir())
    jaxrl("compare", runs[0], runs[1], "-o", tmp_path / "c.png").check()
    policy = load(runs[0], seed=1)
    assert policy.config.hyperparameters["max_kl"] == float(runs[0].name.split(",")[0][7:])
    assert policy(np.zeros(3, np.float32)).shape == (1,)
    with pytest.raises(RunDirError, match=r"holds 4 runs \(a sweep or a tune\): load one"):
        load(sweep_dir)
    # The commands that read runs name the sweep's, as jaxrl.load does.
    named = f"holds 4 runs (a sweep or a tune): name them, {runs[0]} {runs[1]} {runs[2]} ..."
    for command in ("plot", "compare"):
        assert named in single_error_line(jaxrl(command, sweep_dir))


def _without_wall_time(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]


def test_an_interrupted_sweep_resumes_without_retraining(jaxrl: Callable[..., Result], tmp_path):
    """Two groups (hidden sizes change the program); stopped after the first, the same
    command continues with the second and ends with the rows of an uninterrupted sweep."""
    grid = ["--sweep", "hidden-sizes=[8],[4,4]", "--sweep", "max-kl=0.005,0.02"]
    command = ["sweep", "trpo", *TINY, *BUDGET, *grid]
    whole = tmp_path / "whole"
    jaxrl(*command, "--sweep-dir", whole).check()
    resumed = tmp_path / "resumed"
    first = jaxrl(*command, "--sweep-dir", resumed, "--stop-after-groups", "1").check()
    assert "Stopped with 2 of 4 settings" in first.stdout
    assert first.stdout.count("--sweep-dir") == 1  # the command to continue names it once
    assert len(_rows(resumed / "sweep.csv")) == 4
    done = resumed / "runs" / "hidden_sizes=8,max_kl=0.005"
    before = (done / "evals.csv").read_text()
    saved_by_an_earlier_version(resumed / "sweep.json")  # a sweep resumes after an upgrade
    second = jaxrl(*command, "--sweep-dir", resumed).check()
    assert "group 1: 2 setting(s)" in second.stderr and "hidden_sizes=4x4" in second.stderr
    assert "hidden_sizes=8," not in second.stderr  # the finished group is not trained again
    assert (done / "evals.csv").read_text() == before
    assert _without_wall_time(_rows(resumed / "sweep.csv")) == _without_wall_time(
        _rows(whole / "sweep.csv")
    )
    # Another grid or run in the same directory: the line names the first difference.
    for change, differs in (
        (["--sweep", "max-kl=0.005,0.05"], "grid.max_kl: [0.005, 0.02] saved, [0.005, 0.05] now"),
        (["--sweep", "max-kl=0.005,0.02", "--num-envs", "8"], "num_envs: 4 saved, 8 now"),
    ):
        changed = jaxrl(*command[:-2], *change, "--sweep-dir", resumed)
        assert f"holds another sweep (its sweep.json differs: {differs}); resume" in (
            single_error_line(changed)
        )


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        (["--sweep", "max-k=0.1"], "--sweep max_k: trpo has no such hyperparameter or run"),
        (["--sweep", "max-kl=abc"], "--sweep max_kl=abc: expected float"),
        (["--sweep", "max-kl=0.01,-1"], "setting max_kl=-1.0: --max-kl must be in"),
        (["--sweep", "seed=1,2"], "--sweep seed: cannot be swept (the seeds are the sweep's"),
        (["--sweep", "max-kl"], "--sweep 'max-kl': write FIELD=VALUE,VALUE,..."),
        ([], "missing --sweep FIELD=VALUE,...: the grid to train"),
        # Two settings that would train into one directory.
        (["--sweep", "max-kl=0.01,0.01"], "--sweep max_kl=0.01,0.01: 0.01 is listed twice"),
        (
            ["--sweep", "hidden-sizes=8,8"],
            "8 is listed twice; each value is one list: [64,64],[32,32] (or 64x64,32x32)",
        ),
        (
            ["--sweep", "hidden-sizes=[8,8],[8,8]"],
            "hidden_sizes=[8,8],[8,8]: [8,8] is listed twice",
        ),
        (["--sweep", "hidden-sizes=8x8,[8,8]"], "8x8 and [8,8] are one value (hidden_sizes=8x8)"),
        (["--sweep", "max-kl=0.1,1e-1"], "0.1 and 1e-1 are one value (max_kl=0.1); list it once"),
        (["--sweep", "max-kl=0.01", "--sweep", "max_kl=0.02"], "--sweep max_kl is given twice"),
        # One field under its Tianshou 1.x name and its own.
        (
            ["--sweep", "discount-factor=0.9", "--sweep", "gamma=0.95"],
            "--sweep gamma is given twice (as discount-factor and gamma)",
        ),
        (["--sweep", "max-kl="], "--sweep max-kl=: list at least one value"),
    ],
)
def test_a_bad_grid_is_one_line_naming_the_field(jaxrl, tmp_path, grid, expected):
    result = jaxrl("sweep", "trpo", *TINY, *grid, "--sweep-dir", tmp_path / "s")
    assert expected in single_error_line(result)
    assert not (tmp_path / "s" / "runs").exists()  # nothing trained, nothing compiled


def test_a_field_is_swept_and_searched_under_its_tianshou_1x_name_too():
    from jaxrl.studies import parse_grid, parse_search

    assert parse_grid("trpo", "pendulum", ["discount-factor=0.9,0.99"]) == {"gamma": [0.9, 0.99]}
    (dimension,) = parse_search("trpo", "pendulum", ["discount_factor=0.9:0.99"])
    assert (dimension.name, dimension.low, dimension.high) == ("gamma", 0.9, 0.99)


def test_a_host_sweep_trains_its_settings_as_train_does(jaxrl: Callable[..., Result], tmp_path):
    """On the host driver (gymnasium's Pendulum-v1) a group's settings train one after
    another in one process; each equals a plain run of the same setting and seeds."""
    host = ["--backend", "gymnasium", *TINY, *BUDGET]
    sweep_dir = tmp_path / "sweep"
    result = jaxrl("sweep", "trpo", *host, "--sweep", "max-kl=0.005,0.02", "--sweep-dir", sweep_dir)
    assert "host driver, one setting after another" in result.check().stderr
    assert len(_rows(sweep_dir / "sweep.csv")) == 4
    plain = tmp_path / "plain"
    jaxrl("train", "trpo", *host, "--max-kl", "0.02", "--run-dir", plain).check()
    _assert_close(_per_seed_evals(sweep_dir / "runs" / "max_kl=0.02"), _per_seed_evals(plain))


def test_a_host_sweep_with_jobs_trains_its_settings_side_by_side(jaxrl, tmp_path):
    """``--jobs 2`` on the host driver: the settings train at once, each in a process of its
    own on its share of the CPUs, and the sweep is complete and ranked as without it."""
    import os

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity (Linux) and 2 CPUs")
    host = ["--backend", "gymnasium", *TINY, *BUDGET]
    sweep_dir = tmp_path / "sweep"
    result = jaxrl(
        "sweep", "trpo", *host, "--sweep", "max-kl=0.005,0.02", "--jobs", "2",
        "--sweep-dir", sweep_dir,
    ).check()  # fmt: skip
    done = [line for line in result.stderr.splitlines() if ": done in " in line]
    assert len(done) == 2, result.stderr
    shares = {line.rsplit("on CPUs ", 1)[1] for line in done}
    assert len(shares) == 2, done  # each setting on its own share
    rows = _rows(sweep_dir / "sweep.csv")
    assert sorted({r["setting"] for r in rows}) == ["max_kl=0.005", "max_kl=0.02"]
    assert len(rows) == 4 and all(np.isfinite(float(r["final_return"])) for r in rows)
    for name in ("max_kl=0.005", "max_kl=0.02"):
        assert (sweep_dir / "runs" / name / "final_eval.json").is_file()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--jobs", "2"], "--jobs 2: a sweep on a JAX environment trains its settings in one"),
        (["--jobs", "0"], "--jobs must be from 1 to this process's"),
    ],
)
def test_jobs_a_sweep_cannot_use_are_refused_in_one_line(jaxrl, tmp_path, extra, expected):
    result = jaxrl("sweep", "trpo", *TINY, *GRID, *extra, "--sweep-dir", tmp_path / "s")
    assert expected in single_error_line(result)
    assert not (tmp_path / "s" / "runs").exists()


def test_a_lone_setting_of_a_host_sweep_with_jobs_trains_here(monkeypatch, tmp_path):
    """More ``jobs`` than settings to train: the CPUs are dealt into as many shares as there
    are settings, and a lone setting trains in this process, on every CPU."""
    import os

    from jaxrl.config.run_config import RunConfig
    from jaxrl.studies import sweeps as studies

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity (Linux) and 2 CPUs")
    here, apart = [], []
    monkeypatch.setattr(studies, "_train_host_group", lambda g, d, **_: here.append(len(g)) or "x")
    monkeypatch.setattr(studies, "_train_side_by_side", lambda *a: apart.append(a[2]))
    base = RunConfig.from_preset("trpo", "Pendulum-v1", backend="gymnasium", num_seeds=2)
    studies.sweep(base, {"max_kl": [0.01]}, tmp_path / "one", jobs=2)
    assert here == [1] and apart == []
    studies.sweep(base, {"max_kl": [0.01, 0.02]}, tmp_path / "two", jobs=2)
    assert here == [1] and apart == [2]  # two settings: side by side, a share each


def test_a_ranking_over_one_seed_has_no_interval():
    """One seed gives a mean but no spread and no confidence interval: the table says n/a,
    not [nan, nan], and no +- 0.0 (as the run's own report)."""
    from jaxrl.studies.sweep_report import ranking, ranking_markdown

    rows = [{"setting": "max_kl=0.01", "max_kl": 0.01, "final_return": -200.0}]
    text = ranking_markdown(ranking(rows, ["max_kl"]), ["max_kl"], 1)
    assert "| 1 | 0.01 | 1 | -200.0 | n/a (one seed) | -200.0 |" in text
    assert "nan" not in text


def _spawned_children(pid: int) -> list[int]:
    """The pids of ``pid``'s processes started by multiprocessing's spawn (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def _writes_under(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` holds a file under ``directory`` open (its TensorBoard
    event files stay open while it trains)."""
    import os

    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        held = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds]
    except OSError:
        return False
    return any(path.startswith(str(directory)) for path in held)


@pytest.mark.slow
def test_a_killed_setting_process_of_jobs_ends_in_one_line_and_the_sweep_continues_it(
    jaxrl: Callable[..., Result], tmp_path
):
    """``--jobs 2`` on a host environment: a setting's process killed (SIGKILL) while it
    trains leaves the other to finish; the sweep ends in one line (exit status 1) with the
    command that continues it, which trains the killed setting from its checkpoint and not
    the finished one again."""
    import os
    import signal
    import subprocess
    import sys
    import time

    periods = 16
    command = ["sweep", "trpo", "--backend", "gymnasium", *TINY, "--checkpoint-every", "1"]
    command += ["--total-steps", str(128 * periods), "--sweep", "max-kl=0.005,0.02", "--jobs", "2"]
    sweep_dir = tmp_path / "sweep"
    process = subprocess.Popen(
        [sys.executable, "-m", "jaxrl", *command, "--sweep-dir", str(sweep_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    killed = sweep_dir / "runs" / "max_kl=0.005"
    deadline = time.monotonic() + 600
    while not (
        (killed / "checkpoints" / "1").is_dir()
        and any(_writes_under(pid, killed) for pid in _spawned_children(process.pid))
    ):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.05)
    victim = next(pid for pid in _spawned_children(process.pid) if _writes_under(pid, killed))
    os.kill(victim, signal.SIGKILL)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    # (multiprocessing's resource tracker may warn after it of the killed process's semaphore)
    (line,) = [line for line in stderr.splitlines() if line.startswith("jaxrl: error:")]
    assert line.startswith("jaxrl: error: the process of setting(s) max_kl=0.005 (exit status -9)")
    assert f"continue with: jaxrl {' '.join(command)} --sweep-dir {sweep_dir}" in line
    finished = sweep_dir / "runs" / "max_kl=0.02"
    before = (finished / "evals.csv").read_text()
    again = jaxrl(*command, "--sweep-dir", sweep_dir).check()
    # The one setting left trains in this process, from its checkpoint.
    assert "group 1: 1 setting(s) x 2 seeds: max_kl=0.005\n" in again.stderr
    assert "resuming at period" in again.stderr
    assert "max_kl=0.02" not in again.stderr  # finished: not trained again
    assert (finished / "evals.csv").read_text() == before
    evals = _rows(killed / "evals.csv")
    for seed in ("0", "1"):  # every period once, across the kill
        periods_logged = [int(r["period"]) for r in evals if r["seed"] == seed]
        assert periods_logged == list(range(periods + 1))


# Cost: under a second (nothing trains).
def test_a_python_grid_is_checked_as_the_command_line_s(tmp_path):
    """``jaxrl.studies.sweep`` called with a grid written by hand refuses what ``--sweep``
    refuses, naming the field (and the closest names), before its directory is made: an
    unknown field, one no sweep varies, a value that is no list, a base that is no run."""
    from jaxrl.config.run_config import RunConfig
    from jaxrl.studies import SweepError, sweep

    base = RunConfig.from_preset("trpo", "Pendulum-v1", backend="jax", num_seeds=1)
    cases = {
        "max_kll": ([0.01], r"^grid max_kll: trpo has no such .*; did you mean max_kl\?$"),
        "seed": ([1, 2], r"^grid seed: cannot be swept \(the seeds are the sweep's other axis"),
        "max_kl": (0.01, r"^grid max_kl: give a list of values, got 0.01$"),
    }
    for name, (values, message) in cases.items():
        with pytest.raises(SweepError, match=message):
            sweep(base, {name: values}, tmp_path / name)
        assert not (tmp_path / name).exists()
    # An empty list made an empty sweep, a value listed twice two settings in one directory
    # (a RunDirError naming this very process), a list of pairs an AttributeError.
    for grid, message in (
        ({"max_kl": []}, r"^grid max_kl: list at least one value$"),
        ({"max_kl": [0.01, 0.01]}, r"^grid max_kl=0.01,0.01: 0.01 is listed twice$"),
        ([("max_kl", [0.01])], r"^grid must be a dict of field -> list of values .*got list"),
    ):
        with pytest.raises(SweepError, match=message):
            sweep(base, grid, tmp_path / "bad")
        assert not (tmp_path / "bad").exists()
    with pytest.raises(TypeError, match=r"^base must be a RunConfig .*got \{'algo': 'trpo'\}$"):
        sweep({"algo": "trpo"}, {"max_kl": [0.01]}, tmp_path / "dict")

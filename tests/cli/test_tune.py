"""``jaxrl tune``: an Optuna study whose trials are plain runs (the values Optuna asked for,
the search seeds), trained in batches, pruned at evaluation periods, shared by workers,
resumable; its best trial as a preset file that ``jaxrl train`` takes."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest

from .helpers import TINY, Result, saved_by_an_earlier_version, single_error_line

BUDGET = ["--total-steps", "256"]  # 2 evaluation periods of 128 env steps
SPACE = ["--search", "max-kl=0.002:0.05:log", "--search", "gae-lambda=0.9:0.97"]
EXACT = jax.default_backend() == "cpu"  # as in test_sweep.py: the seed axis is mapped there


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def _evals(run_dir: Path) -> np.ndarray:
    rows = _rows(run_dir / "evals.csv")
    return np.asarray([[float(r["env_steps"]), float(r["eval_return"])] for r in rows])


def _study(tune_dir: Path, name: str | None = None, storage: Path | None = None):
    import optuna
    from optuna.storages.journal import JournalFileBackend

    backend = JournalFileBackend(str(storage or tune_dir / "study.log"))
    return optuna.load_study(
        study_name=name or tune_dir.name, storage=optuna.storages.JournalStorage(backend)
    )


def test_trials_are_the_values_optuna_asked_for_trained_as_plain_runs(
    jaxrl: Callable[..., Result], tmp_path
):
    tune_dir = tmp_path / "study"
    args = ["tune", "trpo", *TINY, *BUDGET, *SPACE, "--trials", "4", "--batch", "2"]
    result = jaxrl(*args, "--pruner", "none", "--tune-dir", tune_dir).check()
    assert "4 complete, 0 pruned, 0 failed, 0 running" in result.stdout
    assert "batch 1: trials 0, 1" in result.stderr and "batch 2: trials 2, 3" in result.stderr
    # train's progress line, per group of trials (here a batch's two trials are one group).
    progress = "trials 2, 3 TRPO Pendulum-v1 2 settings x2 | env steps 256/256 per seed | "
    (line,) = [line for line in result.stderr.splitlines() if line.startswith(progress)]
    assert "| best eval return " in line and line.endswith("| eta 0:00:00"), line
    # The table: trial 0 named as the preset's values, floats rounded, importances caveated.
    table = (tune_dir / "tune.md").read_text()
    assert "| 0 (base) |" in table and "(the pendulum preset's), tried first" in table
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in table.splitlines() if line.startswith("| ")][1:]  # fmt: skip
    digits = [value.lstrip("0.").replace(".", "") for row in rows for value in row[3:]]
    assert len(rows) == 4 and all(len(d) <= 4 for d in digits), rows  # significant digits
    assert "importances.png rests on 4 complete trials: with fewer than 20" in table
    study = _study(tune_dir)
    trials = {t.number: t for t in study.trials}
    assert sorted(trials) == [0, 1, 2, 3]
    assert trials[0].params == {"max_kl": 0.01, "gae_lambda": 0.95}  # the preset, enqueued
    rows = {int(r["trial"]): r for r in _rows(tune_dir / "tune.csv")}
    for number, trial in trials.items():
        config = json.loads((tune_dir / "trials" / f"trial-{number}" / "config.json").read_text())
        assert config["hyperparameters"]["max_kl"] == trial.params["max_kl"]
        assert config["hyperparameters"]["gae_lambda"] == trial.params["gae_lambda"]
        assert config["run"]["seed"] == 1000  # search seeds 1000-1001, apart from train's
        assert float(rows[number]["objective"]) == pytest.approx(trial.value, rel=1e-12)
    # A trial is a plain run with its values and seeds; its objective is the mean over seeds
    # of the last (here: both) evaluations.
    for number in (1, 3):
        params, plain = trials[number].params, tmp_path / f"plain-{number}"
        options = ["--max-kl", repr(params["max_kl"]), "--gae-lambda", repr(params["gae_lambda"])]
        jaxrl("train", "trpo", *TINY, *BUDGET, *options, "--seed", "1000", "--run-dir", plain)
        trained = _evals(tune_dir / "trials" / f"trial-{number}")
        if EXACT:
            np.testing.assert_array_equal(trained, _evals(plain))
        else:
            np.testing.assert_allclose(trained, _evals(plain), rtol=1e-4)
        returns = _evals(plain)[:, 1].reshape(-1, 2)[1:]  # periods 1-2 x 2 seeds
        assert trials[number].value == pytest.approx(returns.mean(), rel=1e-4)
    # The best trial as a preset file: jaxrl train takes it, and refuses the search seeds.
    best = json.loads((tune_dir / "best.json").read_text())
    winner = max(trials.values(), key=lambda t: t.value)
    assert best["hyperparameters"]["max_kl"] == winner.params["max_kl"]
    assert best["search_seeds"] == [1000, 1001] and best["run"]["total_steps"] == 256
    refused = jaxrl("train", "trpo", "--preset-file", tune_dir / "best.json", "--seed", "1001")
    assert "seed 1001 of this run was among this preset's search seeds" in single_error_line(
        refused
    )
    held_out = tmp_path / "held-out"
    preset_file = ["--preset-file", tune_dir / "best.json"]
    jaxrl("train", "trpo", *preset_file, "--total-steps", "128", "--run-dir", held_out).check()
    config = json.loads((held_out / "config.json").read_text())
    assert config["hyperparameters"]["max_kl"] == winner.params["max_kl"]
    assert config["run"]["seed"] == 0 and config["run"]["total_steps"] == 128  # flags win
    assert config["run"]["num_envs"] == 4  # from the file: the base run's own departures
    assert (tune_dir / "history.png").stat().st_size > 0
    assert (tune_dir / "importances.png").stat().st_size > 0


def test_pruning_stops_trials_and_is_recorded(jaxrl: Callable[..., Result], tmp_path):
    """The median pruner (after 5 trials and a warm-up of a quarter of the periods) stops
    trials below the median; a pruned trial trained fewer env steps, and the table says so."""
    tune_dir = tmp_path / "pruned"
    budget = ["--total-steps", "1024"]  # 8 evaluation periods
    space = ["--search", "max-kl=0.00001:0.5:log", "--search", "lr=0.00001:0.1:log"]
    args = ["tune", "trpo", *TINY, *budget, *space, "--trials", "10", "--batch", "1"]
    result = jaxrl(*args, "--tune-dir", tune_dir).check()
    rows = _rows(tune_dir / "tune.csv")
    pruned = [r for r in rows if r["state"] == "pruned"]
    assert pruned, result.stdout
    for row in pruned:
        assert int(row["env_steps"]) < 1024
        periods = {int(r["period"]) for r in _rows(tune_dir / "trials" / f"trial-{row['trial']}"
                                                   / "evals.csv")}  # fmt: skip
        assert 2 <= max(periods) < 8  # stopped after the warm-up, before the end
    assert f"Pruning: {len(pruned)} trials pruned" in result.stdout
    assert sum(r["state"] in ("complete", "pruned") for r in rows) == 10


def _worker(tune_dir: Path, storage: Path, trials: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "jaxrl", "tune", "trpo", *TINY, *BUDGET, *SPACE]
    command += ["--trials", str(trials), "--batch", "1", "--tune-dir", str(tune_dir)]
    command += ["--storage", str(storage), "--study-name", "shared", "--pruner", "none"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_workers_share_one_study_and_train_no_trial_twice(tmp_path):
    storage = tmp_path / "shared.log"
    workers = [_worker(tmp_path / f"worker-{i}", storage, 5) for i in range(2)]
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
    study = _study(tmp_path, "shared", storage)
    assert sorted(t.number for t in study.trials) == [0, 1, 2, 3, 4]
    assert all(t.state.name == "COMPLETE" for t in study.trials)
    trained = [p.name for i in range(2) for p in (tmp_path / f"worker-{i}" / "trials").iterdir()]
    assert sorted(trained) == [f"trial-{n}" for n in range(5)]  # each trial once, somewhere
    owners = {t.user_attrs["worker"]["pid"] for t in study.trials}
    assert owners <= {w.pid for w in workers}
    for i in range(2):  # each worker's preset file names the study, not its own directory
        best = json.loads((tmp_path / f"worker-{i}" / "best.json").read_text())
        assert best["provenance"]["study"] == "shared"


def test_a_killed_study_resumes_asking_the_dead_workers_trial_again(jaxrl, tmp_path):
    tune_dir, storage = tmp_path / "killed", tmp_path / "killed" / "study.log"
    worker = _worker(tune_dir, storage, 3)
    evals = tune_dir / "trials" / "trial-0" / "evals.csv"
    deadline = time.monotonic() + 300
    while not (evals.is_file() and evals.read_text().count("\n") >= 2):  # trial 0 under way
        assert worker.poll() is None and time.monotonic() < deadline, worker.stderr.read()
        time.sleep(0.2)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    args = ["tune", "trpo", *TINY, *BUDGET, *SPACE, "--trials", "3", "--batch", "1"]
    options = ["--tune-dir", tune_dir, "--storage", storage, "--study-name", "shared"]
    result = jaxrl(*args, *options, "--pruner", "none").check()
    assert "trials 0 of a stopped worker: asked again" in result.stderr
    study = _study(tune_dir, "shared", storage)
    states = {t.number: t.state.name for t in study.trials}
    assert states == {0: "FAIL", 1: "COMPLETE", 2: "COMPLETE", 3: "COMPLETE"}
    assert study.trials[1].params == study.trials[0].params  # asked again
    assert study.trials[1].user_attrs["retry_of"] == 0


def test_an_interrupted_study_resumes_where_it_stopped(jaxrl: Callable[..., Result], tmp_path):
    tune_dir = tmp_path / "resumed"
    args = ["tune", "trpo", *TINY, *BUDGET, *SPACE, "--trials", "3", "--batch", "1"]
    first = jaxrl(*args, "--tune-dir", tune_dir, "--stop-after-batches", "2").check()
    assert "Stopped with 2 of 3 trials; continue with:" in first.stdout
    assert first.stdout.count("--tune-dir") == 1  # the command to continue names it once
    saved_by_an_earlier_version(tune_dir / "tune.json")  # a study resumes after an upgrade
    jaxrl(*args, "--tune-dir", tune_dir).check()
    study = _study(tune_dir)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    # The resumed worker's sampler does not start its seeded stream over: trial 2 is not
    # trial 1 (the first sampled one) asked again.
    assert study.trials[2].params != study.trials[1].params
    changed = jaxrl("tune", "trpo", *TINY, *BUDGET, "--search", "max-kl=0.001:0.01", "--tune-dir",
                    tune_dir)  # fmt: skip
    search = '["max_kl=0.002:0.05:log", "gae_lambda=0.9:0.97"] saved, ["max_kl=0.001:0.01"] now'
    assert f"holds another study (its tune.json differs: search: {search})" in (
        single_error_line(changed)
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("max-kl=0.05:0.001", "--search max_kl=0.05:0.001: LOW must be below HIGH"),
        ("max-kl=0:0.1:log", "a log range needs LOW > 0"),
        ("max-kll=0.01:0.1", "--search max_kll: trpo has no such hyperparameter"),
        ("hidden-sizes=1:3", "a range needs an int or float field"),
        ("gamma=0.9,0.9", "--search gamma=0.9,0.9: 0.9 is listed twice"),
        ("hidden-sizes=8,8", "8 is listed twice; each value is one list: [64,64],[32,32]"),
        ("gamma=0.9", "one value is not a search; set it with --gamma 0.9"),
        ("gamma=", "--search gamma=: give a range LOW:HIGH or at least two values"),
        ("gae-lambda=0.9,0.90", "0.9 and 0.90 are one value (gae_lambda=0.9); list it once"),
        ("seed=0:10", "--search seed: cannot be searched"),
        ("max-kl=a:b", "--search max_kl=a: expected float"),
    ],
)
def test_bad_search_specs_are_one_line_errors(jaxrl, tmp_path, spec, message):
    result = jaxrl("tune", "trpo", "--search", spec, "--tune-dir", tmp_path / "t")
    assert message in single_error_line(result)
    assert not (tmp_path / "t").exists()  # nothing written, nothing compiled


def test_bad_study_options_are_one_line_errors(jaxrl, tmp_path):
    space = ["--search", "max-kl=0.01:0.02", "--tune-dir", tmp_path / "t"]
    twice = jaxrl("tune", "trpo", "--search", "max-kl=0.01:0.02", "--search", "max_kl=0.1:0.2")
    assert "--search max_kl is given twice" in single_error_line(twice)
    alias = jaxrl("tune", "trpo", "--search", "discount-factor=0.9:0.99", "--search", "gamma=0.9:1")
    line = single_error_line(alias)
    assert "--search gamma is given twice (as discount-factor and gamma)" in line
    assert "--sampler foo: not an Optuna sampler" in single_error_line(
        jaxrl("tune", "trpo", *space, "--sampler", "foo")
    )
    assert "--pruner bar: not an Optuna pruner" in single_error_line(
        jaxrl("tune", "trpo", *space, "--pruner", "bar")
    )
    assert "--trials must be a positive integer" in single_error_line(
        jaxrl("tune", "trpo", *space, "--trials", "0")
    )
    empty = jaxrl("tune", "trpo", "--tune-dir", tmp_path / "t")
    assert "the search space is empty: give at least one --search" in single_error_line(empty)
    missing = jaxrl("train", "trpo", "--preset-file", tmp_path / "nope.json")
    assert "--preset-file: cannot read" in single_error_line(missing)
    assert not (tmp_path / "t").exists()


def test_the_python_entry_point_returns_the_study(tmp_path):
    from jaxrl.config import RunConfig
    from jaxrl.studies import parse_search, tune

    base = RunConfig.from_preset(
        "trpo", "Pendulum-v1", backend="jax", total_steps=256, eval_every=128, num_envs=4,
        num_steps=32, eval_episodes=2, num_seeds=2, seed=1000,
        hyperparameters={"hidden_sizes": [8]},
    )  # fmt: skip
    space = parse_search("trpo", "pendulum", ["max_kl=0.002:0.05:log"])
    result = tune(base, space, tmp_path / "api", trials=2, batch=2, pruner="none")
    assert (result.complete, result.pruned, result.failed, result.running) == (2, 0, 0, 0)
    assert result.best is not None and result.best["objective"] == max(
        t.value for t in result.study.trials
    )


def test_a_dimension_built_by_hand_is_checked_as_search_checks_one():
    """Built without ``parse_search``, a range with ``low`` above ``high`` reached Optuna (its
    own message, after the study's directory was made); each is refused naming it."""
    from jaxrl.studies import TuneError
    from jaxrl.studies.search_space import Dimension

    cases = [
        (("max_kl", "float", 0.05, 0.001), "low must be below high, got 0.05 and 0.001"),
        (("max_kl", "float", 0.0, 0.05, True), "a log range needs low > 0, got 0.0"),
        (("max_kl", "real", 0.001, 0.05), "kind must be 'float', 'int' or 'categorical'"),
    ]
    for args, message in cases:
        with pytest.raises(TuneError, match=f"^Dimension max_kl: {re.escape(message)}"):
            Dimension(*args)
    with pytest.raises(TuneError, match=r"^Dimension repeat: give at least two choices"):
        Dimension("repeat", "categorical", choices=(1,))
    assert Dimension("max_kl", "float", 0.001, 0.05, True).describe() == "max_kl=0.001:0.05:log"


def test_a_trial_of_a_worker_before_a_reboot_is_asked_again(tmp_path):
    """A process id names a process within one boot: a trial whose worker ran on this
    machine before a reboot is orphaned even if a process of that id runs now (pid 1);
    another machine's, or a live worker's, is left to it."""
    import socket

    import optuna
    from optuna.storages.journal import JournalFileBackend

    from jaxrl.studies.tuning_study import boot_id, retry_orphans

    storage = optuna.storages.JournalStorage(JournalFileBackend(str(tmp_path / "s.log")))
    study = optuna.create_study(storage=storage, direction="maximize")
    host = socket.gethostname()
    workers = [
        {"host": host, "boot": "an earlier boot", "pid": 1},
        {"host": host, "boot": boot_id(), "pid": 1},  # alive: init
        {"host": "another-machine", "boot": "?", "pid": 1},
    ]
    for worker in workers:
        trial = study.ask({"max_kl": optuna.distributions.FloatDistribution(0.001, 0.1)})
        trial.set_user_attr("worker", worker)
    assert retry_orphans(study) == ([], [0])
    states = [t.state.name for t in study.get_trials()]
    assert states == ["FAIL", "RUNNING", "RUNNING", "WAITING"]
    assert study.get_trials()[3].system_attrs["fixed_params"] == study.get_trials()[0].params


def test_another_machines_trial_without_a_heartbeat_for_a_lease_is_asked_again(tmp_path):
    """A worker on another machine renews its heartbeat each period: a trial whose worker's
    heartbeat is older than the lease is a dead worker's; a fresh one is left to it; and a
    worker whose trial was taken over stops reporting (and would tell nothing)."""
    import time

    import numpy as np
    import optuna
    from optuna.storages.journal import JournalFileBackend

    from jaxrl.studies.tuning import _Reporter
    from jaxrl.studies.tuning_study import LEASE_SECONDS, retry_orphans, this_worker

    storage = optuna.storages.JournalStorage(JournalFileBackend(str(tmp_path / "s.log")))
    study = optuna.create_study(storage=storage, direction="maximize")
    now = time.time()
    workers = [
        {"host": "another-machine", "boot": "?", "pid": 1, "at": now - LEASE_SECONDS - 1},
        {"host": "another-machine", "boot": "?", "pid": 1, "at": now - 60},
    ]
    for worker in workers:
        trial = study.ask({"max_kl": optuna.distributions.FloatDistribution(0.001, 0.1)})
        trial.set_user_attr("worker", worker)
    assert retry_orphans(study) == ([], [0])
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "RUNNING", "WAITING"]

    mine = study.ask({"max_kl": optuna.distributions.FloatDistribution(0.001, 0.1)})
    mine.set_user_attr("worker", this_worker())
    reporter = _Reporter(mine, objective_evals=1)
    reporter.report(1, np.array([1.0, 2.0]))
    assert not reporter.ended and study.get_trials()[mine.number].intermediate_values == {1: 1.5}
    before = study.get_trials()[mine.number].user_attrs["worker"]["at"]
    reporter.report(2, np.array([1.0, 2.0]))
    assert study.get_trials()[mine.number].user_attrs["worker"]["at"] >= before  # the heartbeat
    mine.set_user_attr("worker", {**this_worker(), "pid": -1})  # another worker took it over
    reporter.report(3, np.array([5.0, 5.0]))
    assert reporter.lost and reporter.ended
    assert 3 not in study.get_trials()[mine.number].intermediate_values


def test_a_dead_workers_host_trial_is_resumed_from_its_checkpoint(jaxrl, tmp_path):
    """A host trial (gymnasium) whose worker was killed after a checkpoint is taken over by
    the next worker and continued from it, not trained again: it completes as trial 0, with
    one evaluation per seed and period."""
    from jaxrl.runs import CheckpointStore, read_csv

    tune_dir = tmp_path / "host"
    host = ["--backend", "gymnasium", "--total-steps", "512", "--checkpoint-every", "1"]
    command = [sys.executable, "-m", "jaxrl", "tune", "trpo", *TINY, *host, *SPACE]
    command += ["--trials", "2", "--batch", "1", "--tune-dir", str(tune_dir)]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints, deadline = tune_dir / "trials" / "trial-0" / "checkpoints", time.monotonic() + 300
    while not (checkpoints.is_dir() and CheckpointStore(checkpoints).steps()):
        assert worker.poll() is None and time.monotonic() < deadline, worker.stderr.read()
        time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    resumed = jaxrl(*command[3:]).check()
    assert "trials 0 of a stopped worker: resumed from their checkpoints" in resumed.stderr
    study = _study(tune_dir)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    evals = read_csv(tune_dir / "trials" / "trial-0" / "evals.csv")
    for seed in (0, 1):
        np.testing.assert_array_equal(evals["period"][evals["seed"] == seed], np.arange(5))
    assert sorted(study.trials[0].intermediate_values) == [1, 2, 3, 4]


# Cost: under a second (nothing trains).
def test_a_python_call_names_its_arguments(tmp_path):
    """``jaxrl.studies.tune`` refuses a count that is no whole number (it compared a float),
    a base that is no run and a space that is not ``parse_search`` 's, naming them."""
    import jaxrl
    from jaxrl.studies import TuneError, parse_search, tune

    base = jaxrl.make_config("trpo", "Pendulum-v1")
    space = parse_search("trpo", "default", ["max-kl=0.001:0.1:log"])
    with pytest.raises(TuneError, match=r"^--batch must be a positive integer, got 2\.5$"):
        tune(base, space, tmp_path / "t", batch=2.5)
    with pytest.raises(TypeError, match=r"^base must be a RunConfig .*got \{'algo': 'trpo'\}$"):
        tune({"algo": "trpo"}, space, tmp_path / "t")
    with pytest.raises(TypeError, match=r"^space must be parse_search\(algo, preset, specs\)'s"):
        tune(base, ["max-kl=0.001:0.1"], tmp_path / "t")
    assert not (tmp_path / "t").exists()

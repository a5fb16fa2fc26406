"""Every error the suite knows of, through the command: bad command lines, bad grids and
search spaces, and damaged files a command reads back each end in exactly one line on stderr,
``jaxrl: error: ...``, no traceback, exit status 2 (:func:`.helpers.single_error_line`).

The cases run in this process (:func:`jaxrl.cli.main`, as the other command tests do); those
of ``PROCESS`` run as the installed command in a process of its own too. None trains: the
usage errors stop before JAX is imported, the grids before anything compiles, and the
damaged files are made here (``test_damaged_files.py`` damages real runs, sweeps and
studies). A fault of the environment during training ends in one line too, with exit status 1
and the command that resumes the run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest

from .helpers import TINY, single_error_line

SMALL = [*TINY, "--total-steps", "256"]  # were a case to train after all: seconds, not hours

# (argv, what the line says); "{tmp}" is the test's directory.
USAGE = {
    "algorithm": (["train", "sac"], "unknown algorithm 'sac'"),
    "env": (["train", "trpo", "--env", "NoSuchEnv-v0"], "unknown environment id 'NoSuchEnv-v0'"),
    "option": (["train", "trpo", "--max-kll", "0.01"], "did you mean --max-kl?"),
    "sibling": (["sweep", "trpo", "--plan"], "--plan is an option of jaxrl train trpo, not of"),
    "value": (["train", "trpo", "--max-kl", "abc"], "invalid value for --max-kl: 'abc'"),
    "list": (
        ["train", "trpo", "--hidden-sizes", "64,64"],
        "separated by spaces: --hidden-sizes 64 64",
    ),
    "steps": (["train", "trpo", "--total-steps", "-5"], "--total-steps must be a positive"),
    "plan-steps": (
        ["train", "trpo", "--num-seeds", "0", "--plan"],
        "--num-seeds must be a positive integer, got 0",
    ),
    "plan-spaces": (
        ["train", "ddpg", "--env", "CartPole-v1", "--plan"],
        "DDPG needs a continuous Box action_space, got Discrete(2)",
    ),
    "plugin": (["train", "trpo", "--plugin"], "--plugin needs a plug-in file or module name"),
    "resume-missing": (["train", "trpo", "--resume", "{tmp}/nope"], "does not exist"),
    "evaluate-missing": (["evaluate"], "missing RUN_DIR for jaxrl evaluate"),
    "evaluate-episodes": (["evaluate", "{tmp}", "--episodes", "0"], "--episodes must be"),
    "plot-none": (["plot"], "jaxrl plot needs at least one RUN_DIR"),
    "compare-none": (["compare"], "jaxrl compare needs at least 2 RUN_DIRs"),
    "compare-twice": (["compare", "a", "./a/"], "run directory './a/' is given twice (as 'a'"),
    "preset-file": (["train", "trpo", "--preset-file", "{tmp}/nope.json"], "cannot read"),
}
SWEEP = ["sweep", "trpo", *SMALL, "--sweep-dir", "{tmp}/s"]
TUNE = ["tune", "trpo", *SMALL, "--tune-dir", "{tmp}/t"]
GRIDS = {
    "sweep-repeated": ([*SWEEP, "--sweep", "max-kl=0.01,0.01"], "0.01 is listed twice"),
    "sweep-one-dir": ([*SWEEP, "--sweep", "max-kl=0.1,1e-1"], "0.1 and 1e-1 are one value"),
    "sweep-empty": ([*SWEEP, "--sweep", "max-kl="], "--sweep max-kl=: list at least one"),
    "sweep-twice": (
        [*SWEEP, "--sweep", "max-kl=0.01", "--sweep", "max_kl=0.02"],
        "--sweep max_kl is given twice (as max-kl and max_kl)",
    ),
    "sweep-alias": (
        [*SWEEP, "--sweep", "discount-factor=0.9", "--sweep", "gamma=0.99"],
        "--sweep gamma is given twice (as discount-factor and gamma)",
    ),
    "sweep-unknown": ([*SWEEP, "--sweep", "foo=1,2"], "--sweep foo: trpo has no such"),
    "sweep-seed": ([*SWEEP, "--sweep", "seed=1,2"], "--sweep seed: cannot be swept"),
    "sweep-none": (SWEEP, "missing --sweep FIELD=VALUE,...: the grid to train"),
    "search-repeated": ([*TUNE, "--search", "max-kl=0.1,0.1"], "0.1 is listed twice"),
    "search-empty": ([*TUNE, "--search", "gae-lambda="], "--search gae-lambda=: give a range"),
    "search-low-high": ([*TUNE, "--search", "max-kl=0.1:0.01"], "LOW must be below HIGH"),
    "search-log": ([*TUNE, "--search", "max-kl=0:0.1:log"], "a log range needs LOW > 0"),
    "search-alias": (
        [*TUNE, "--search", "discount-factor=0.9:0.99", "--search", "gamma=0.9:0.95"],
        "--search gamma is given twice (as discount-factor and gamma)",
    ),
    "search-unknown": ([*TUNE, "--search", "foo=1:2"], "--search foo: trpo has no such"),
    "search-none": (TUNE, "the search space is empty"),
}

# A preset file's values: (its "run", its "hyperparameters", what the line says after
# "--preset-file FILE: "). Each names the file's field, not an option no one wrote.
PRESET_FILES = {
    "switch": ({}, {"action_scaling": "yes"}, "hyperparameters.action_scaling must be true or"),
    "number": ({}, {"max_kl": "big"}, "invalid value for hyperparameters.max_kl: 'big' is not"),
    "integer": (
        {"total_steps": 1e6},
        {},
        "invalid value for run.total_steps: '1000000.0' is not an integer; write it out: 1000000",
    ),
    "choice": ({}, {"activation": "tanhh"}, "invalid value 'tanhh' for hyperparameters.activ"),
    "unknown": (
        {},
        {"max_kll": 0.1},
        "hyperparameters.max_kll: jaxrl train trpo has no hyperparameter or option max_kll; "
        "did you mean max_kl?",
    ),
    "list": (
        {},
        {"hidden_sizes": "64,64"},
        "invalid value for hyperparameters.hidden_sizes: '64,64' is not an integer; "
        "write a list: [64, 64]",
    ),
    "scalar": ({}, {"max_kl": [0.1]}, "hyperparameters.max_kl must be a single value, got"),
    # A Tianshou 1.x name is its field's, as on the command line: its value is checked.
    "alias": ({}, {"discount_factor": "x"}, "invalid value for hyperparameters.discount_factor"),
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _run_dir(tmp: Path, config: str, evals: str) -> None:
    """A run directory ``tmp/run`` with this ``config.json`` and ``evals.csv``."""
    _write(tmp / "run" / "config.json", config)
    _write(tmp / "run" / "evals.csv", evals)


EVALS = "seed,period,env_steps,eval_return,wall_time\n0,0,0,-1200.5,0.1\n"
# (argv, how to damage "{tmp}", the file named, what is wrong)
DAMAGED = {
    "config-evaluate": (
        ["evaluate", "{tmp}/run"],
        lambda tmp: _run_dir(tmp, '{"algo": "trpo", "env"', EVALS),
        "run/config.json",
        "line 1: Expecting ':' delimiter",
    ),
    "config-resume": (
        ["train", "trpo", "--resume", "{tmp}/run"],
        lambda tmp: _run_dir(tmp, "[1]", EVALS),
        "run/config.json",
        "a JSON list, not an object",
    ),
    "evals-plot": (
        ["plot", "{tmp}/run"],
        lambda tmp: _run_dir(tmp, "{}", EVALS + "0,1\n"),
        "run/evals.csv",
        "line 3: expected 5 columns, got 2",
    ),
    "evals-compare": (
        ["compare", "{tmp}/run", "{tmp}/copy"],
        lambda tmp: (
            _run_dir(tmp, "{}", EVALS.replace("-1200.5", "x1"))
            or shutil.copytree(tmp / "run", tmp / "copy")
        ),
        "run/evals.csv",
        "line 2: 'x1' is not a number",
    ),
    "sweep-json": (
        [*SWEEP, "--sweep", "max-kl=0.01,0.02"],
        lambda tmp: _write(tmp / "s" / "sweep.json", '{"base": {}, "grid": '),
        "s/sweep.json",
        "line 1: Expecting value",
    ),
    "tune-json": (
        [*TUNE, "--search", "max-kl=0.01:0.02"],
        lambda tmp: _write(tmp / "t" / "tune.json", "\xff"),
        "t/tune.json",
        "line 1: Expecting value",
    ),
}
PROCESS = ["option", "plot-none", "sweep-alias", "config-evaluate", "evals-plot"]


def _argv(argv: list[str], tmp: Path) -> list[str]:
    return [arg.replace("{tmp}", str(tmp)) for arg in argv]


@pytest.mark.parametrize("case", [*USAGE, *GRIDS])
def test_a_bad_command_line_is_one_line(jaxrl, tmp_path, case):
    argv, expected = {**USAGE, **GRIDS}[case]
    line = single_error_line(jaxrl(*_argv(argv, tmp_path), cwd=tmp_path))
    assert expected in line, line
    assert not (tmp_path / "s").exists() and not (tmp_path / "t").exists()  # nothing written


@pytest.mark.parametrize("case", PRESET_FILES)
def test_a_bad_value_in_a_preset_file_is_one_line_naming_its_field(jaxrl, tmp_path, case):
    run, hyperparameters, expected = PRESET_FILES[case]
    file = tmp_path / "best.json"
    preset = {"algo": "trpo", "env": "Pendulum-v1", "preset": "pendulum"}
    file.write_text(json.dumps({**preset, "run": run, "hyperparameters": hyperparameters}))
    line = single_error_line(jaxrl("train", "trpo", "--preset-file", file, cwd=tmp_path))
    assert f"--preset-file {file}: {expected}" in line, line


@pytest.mark.parametrize("case", DAMAGED)
def test_a_damaged_file_is_one_line_naming_it(jaxrl, tmp_path, case):
    argv, damage, name, why = DAMAGED[case]
    damage(tmp_path)
    line = single_error_line(jaxrl(*_argv(argv, tmp_path), cwd=tmp_path))
    assert f"{tmp_path / name} is damaged ({why}" in line, line
    assert "; restore it from a copy, or " in line


@pytest.mark.parametrize("case", PROCESS)
def test_the_command_in_a_process_of_its_own_says_the_same(
    jaxrl_process: Callable, tmp_path: Path, case: str
):
    if case in DAMAGED:
        argv, damage, name, _ = DAMAGED[case]
        damage(tmp_path)
        expected = f"{tmp_path / name} is damaged"
    else:
        argv, expected = {**USAGE, **GRIDS}[case]
    line = single_error_line(jaxrl_process(*_argv(argv, tmp_path), cwd=tmp_path))
    assert expected in line, line


class _FaultyPendulum(gym.Wrapper):
    """Pendulum whose 430th step over all instances raises: in period 2 of the run below,
    after period 1's checkpoint (the first evaluation and period 1 take 416 steps)."""

    calls = 0

    def __init__(self) -> None:
        super().__init__(gym.make("Pendulum-v1"))

    def step(self, action):
        type(self).calls += 1
        if type(self).calls == 430:
            raise RuntimeError("simulator exploded")
        return self.env.step(action)


def test_a_fault_during_training_is_one_line_saying_how_to_resume(jaxrl, tmp_path):
    """Exit status 1; the checkpoints written before the fault stand."""
    gym.register("FaultyPendulum-v0", entry_point=lambda: _FaultyPendulum())
    run = ["--env", "FaultyPendulum-v0", "--backend", "gymnasium", "--num-envs", "2"]
    run += ["--num-steps", "4", "--total-steps", "64", "--eval-every", "16"]
    run += ["--eval-episodes", "1", "--num-seeds", "1", "--hidden-sizes", "8"]
    result = jaxrl("train", "trpo", *run, "--run-dir", tmp_path / "run")
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    # The run's set-up and progress lines, then the error: one line, the last.
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("jaxrl: error: ")]
    assert result.stderr.strip().endswith(line) and "simulator exploded" in line, line
    assert line.endswith(f"continue with: jaxrl train trpo --resume {tmp_path / 'run'}")

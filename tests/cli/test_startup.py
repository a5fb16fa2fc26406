"""What starts fast: the commands that neither train nor evaluate (``jaxrl --help``, ``plot``,
``compare``, their help and their usage errors) run without importing JAX, flax or distrax
(importing those took 6-8 s of every such command), and ``import jaxrl`` imports each exported
name on first use; the training commands' help and usage errors import JAX but not distrax
(TensorFlow Probability's JAX substrate), which only a traced distribution needs. The help
they print is the help the full command line prints."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tyro

from jaxrl.cli import parsing as cli_parse

HEAVY = ("jax", "jaxlib", "flax", "optax", "distrax", "chex", "orbax", "tensorflow_probability")

# One fresh interpreter runs the commands one after another and reports, after each, the
# heavy modules imported so far; then a last step (code that must import what the check looks
# for, so the check is seen to see an import).
_SCRIPT = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from jaxrl.cli import main

    HEAVY = {heavy!r}
    report = []
    for argv in json.loads(sys.argv[1]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = main(argv)
            except SystemExit as exit_:
                status = exit_.code
        report.append([argv, status, sorted(m for m in HEAVY if m in sys.modules)])
    {control}
    report.append(["control", 0, sorted(m for m in HEAVY if m in sys.modules)])
    print(json.dumps(report))
    """
)


def _imports_after(commands: list[list[str]], control: str) -> list:
    """``[argv, exit status, heavy modules imported so far]`` after each command and after
    ``control``, all in one fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "JAXRL_PLUGINS"}
    script = _SCRIPT.format(heavy=HEAVY, control=control)
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(commands)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_help_plot_compare_and_usage_errors_start_without_jax(trpo_run, tmp_path):
    run_dir, _ = trpo_run
    other = shutil.copytree(run_dir, tmp_path / "other")
    commands = [
        ["--help"],
        ["-h"],
        ["plot", "--help"],
        ["compare", "--help"],
        ["evaluate", "--help"],
        ["trian"],  # an unknown command: a usage error
        ["compare", str(run_dir)],  # one run: a usage error
        ["plot", "--spread", "wide", str(run_dir)],  # a bad choice: a usage error
        ["plot", str(run_dir), "-o", str(tmp_path / "curve.png")],
        ["compare", str(run_dir), str(other), "-o", str(tmp_path / "comparison.png")],
    ]
    report = _imports_after(commands, "import jaxrl; jaxrl.TRPO")
    statuses = [status for _, status, _ in report]
    assert statuses == [0, 0, 0, 0, 0, 2, 2, 2, 0, 0, 0], report
    for argv, _, heavy in report[:-1]:
        assert heavy == [], f"jaxrl {' '.join(argv)} imported {heavy}"
    assert {"jax", "flax"} <= set(report[-1][2])  # what the check would have seen
    assert (tmp_path / "curve.png").stat().st_size > 0
    assert (tmp_path / "comparison.png").stat().st_size > 0


def test_training_help_and_usage_errors_import_no_distrax():
    commands = [
        ["train", "trpo", "--help"],
        ["sweep", "npg", "--help"],
        ["train", "ddpg", "--tau", "2"],  # out of range: a usage error
        ["train", "trop"],  # an unknown algorithm: a usage error
    ]
    zeros = "numpy.zeros(1)"
    control = f"import numpy, jaxrl.core as c; c.entropy(c.GaussianParams({zeros}, {zeros}))"
    report = _imports_after(commands, control)
    assert [status for _, status, _ in report] == [0, 0, 2, 2, 0], report
    for argv, _, heavy in report[:-1]:
        assert "jax" in heavy  # the algorithms' classes
        assert "distrax" not in heavy and "tensorflow_probability" not in heavy, argv
    assert {"distrax", "tensorflow_probability"} <= set(report[-1][2])


def _help(training: bool, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        tyro.cli(cli_parse._command_type("pendulum", training=training), prog="jaxrl", args=argv)
    return out.getvalue()


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["plot", "--help"], ["compare", "-h"], ["evaluate", "--help"]],
    ids=" ".join,
)
def test_help_without_the_algorithms_is_the_full_help(argv, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert not cli_parse._needs_training(argv)
    light = _help(False, argv)
    assert light == _help(True, argv)
    assert "usage: jaxrl" in light


def test_training_commands_are_read_with_the_algorithms():
    for argv in (["train", "trpo", "--help"], ["sweep", "ddpg"], ["train", "--help"], []):
        assert cli_parse._needs_training(argv)
    assert cli_parse._needs_training(["-h", "train"])


@pytest.mark.parametrize(
    "package", ["jaxrl", "jaxrl.algorithms", "jaxrl.config", "jaxrl.runs", "jaxrl.studies"]
)
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    stub = Path(module.__file__).with_suffix(".pyi").read_text()
    declared = set(re.findall(r"^from \S+ import (\w+) as \1$", stub, re.MULTILINE))
    assert len(module.__all__) == len(set(module.__all__))
    assert declared and declared <= set(module.__all__)
    namespace: dict = {}
    exec(f"from {package} import *", namespace)  # the names a star import gives
    for name in module.__all__:
        assert namespace[name] is getattr(module, name)
    assert set(dir(module)) >= set(module.__all__)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_output_into_a_closed_pipe_stops_quietly():
    """``jaxrl --help | head -1``: the reader goes away before the help is written."""
    process = subprocess.Popen(
        [sys.executable, "-m", "jaxrl", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.close()  # before the interpreter has started: every write meets a closed pipe
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert stderr == ""

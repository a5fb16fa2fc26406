"""The command's help and edges: the ``--preset`` help lists the preset registry, an unknown
environment id gets distinct suggestions, and errors the library raises with Python field
names (``TRPO.max_kl``, ``TrainConfig.total_steps``) reach the user naming the flag to change."""

from __future__ import annotations

import json
import re

import pytest

from jaxrl.cli import main
from jaxrl.cli import parsing as cli
from jaxrl.cli.usage import name_flags
from jaxrl.config.presets import PRESETS
from jaxrl.envs import resolve_backend
from jaxrl.runs import CheckpointError, load

from .helpers import error_line


def test_preset_help_lists_every_registered_preset(jaxrl):
    """The --preset help is generated from the registry: every preset with its own
    description, tianshou-pendulum included; the rendered --help names each of them."""
    (help_text,) = [h for name, *_, h in cli._run_fields("trpo", "pendulum") if name == "preset"]
    for preset in PRESETS.values():
        assert f"{preset.name}: {preset.description}" in help_text, preset.name
    assert "Tianshou's Pendulum tests" not in help_text  # the old text, wrong for pendulum
    rendered = jaxrl("train", "trpo", "--help").check().stdout
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", rendered).split())  # rich's box, unwrapped
    for name in PRESETS:
        assert f"{name}: " in words, name


def test_unknown_env_id_suggestions_are_distinct():
    """gymnax and gymnasium both register Pendulum-v1: it is suggested once."""
    with pytest.raises(ValueError, match="did you mean") as raised:
        resolve_backend("Pendulm-v1")
    suggested = str(raised.value).split("did you mean ")[1].rstrip("?").split(", ")
    assert suggested[0] == "Pendulum-v1"
    assert len(suggested) == len(set(suggested)), suggested


def test_name_flags_rewrites_field_names_only():
    flags = {"--max-kl", "--total-steps", "--run-dir", "--env", "--brax-backend"}
    assert name_flags("TRPO.max_kl must be in (0.0, inf), got -1.0", flags) == (
        "--max-kl must be in (0.0, inf), got -1.0"
    )
    assert name_flags("TrainConfig.total_steps=100 is less than", flags) == (
        "--total-steps 100 is less than"
    )
    assert name_flags("brax_backend is for Brax ids; env is 'x'", flags) == (
        "--brax-backend is for Brax ids; env is 'x'"
    )
    for untouched in (
        "32768 env steps",  # a plain word, not a field
        "run directory '/tmp/run_dir/x' does not exist",  # inside a path
        "no finalized checkpoint in /tmp/runs/run_dir",  # a path that ends in a field's name
        "ReplayBuffer.sample batch_size must be",  # not an option of the command
    ):
        assert name_flags(untouched, flags) == untouched


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "trpo", "--max-kl", "-1"], "--max-kl must be in (0.0, inf), got -1.0"),
        (
            ["train", "ddpg", "--batch-size", "0"],
            "--batch-size must be a positive integer, got 0",
        ),
        (
            ["train", "trpo", "--total-steps", "100"],
            "--total-steps must be at least one collection (--num-envs x --num-steps = ",
        ),
        (["train", "trpo", "--env", "Pendulm-v1"], "--env: unknown environment id 'Pendulm-v1'"),
        (["train", "trpo", "--resume", "no/such/run"], "--resume: run directory 'no/such/run'"),
    ],
)
def test_cli_errors_name_the_flag(capsys, tmp_path, argv, expected):
    line = error_line(capsys, [*argv, "--run-dir", str(tmp_path / "run")])
    assert line.startswith(f"jaxrl: error: {expected}"), line
    assert not re.search(r"\b[A-Z]\w*\.[a-z_]+", line), line  # no Class.field left
    assert not (tmp_path / "run").exists()


def test_evaluate_names_the_checkpoint_flag(trpo_run, capsys):
    run_dir, _ = trpo_run
    for flag in ("--step", "--checkpoint"):
        line = error_line(capsys, ["evaluate", str(run_dir), flag, "3"])
        assert line == (
            f"jaxrl: error: {flag} 3: run {str(run_dir)!r} has no finished checkpoint at "
            "period 3 (its checkpoints: 2, 4)"
        )
    evaluated = {}
    for flags in (["--step", "2"], ["--checkpoint", "2"], ["--checkpoint", "best"]):
        status = main(["evaluate", str(run_dir), "--episodes", "1", "--json", *flags])
        out, err = capsys.readouterr()
        evaluated[" ".join(flags)] = json.loads(out) if status == 0 else err
    assert evaluated["--step 2"] == evaluated["--checkpoint 2"]  # --step: its earlier spelling
    try:  # the best evaluation's checkpoint, as jaxrl.load finds it
        best = load(run_dir, checkpoint="best").step
        assert evaluated["--checkpoint best"]["checkpoint"] == best
    except CheckpointError as error:
        assert evaluated["--checkpoint best"] == f"jaxrl: error: --checkpoint best: {error}\n"
    line = error_line(capsys, ["evaluate", str(run_dir), "--step", "2", "--checkpoint", "4"])
    assert line == "jaxrl: error: --step 2 and --checkpoint 4: give one of them"
    line = error_line(capsys, ["evaluate", str(run_dir), "--checkpoint", "newest"])
    assert "--checkpoint must be last, best or an evaluation period, got 'newest'" in line


# Cost: about 1 s (three --help pages; nothing imports JAX).
@pytest.mark.parametrize(
    ("command", "flag", "continues"),
    [
        ("train", "--stop-after-periods", "--resume RUN_DIR continues the run"),
        ("sweep", "--stop-after-groups", "the same --sweep-dir again continues the sweep"),
        ("tune", "--stop-after-batches", "the same --tune-dir again continues the study"),
    ],
)
def test_the_stop_after_options_say_how_to_continue_not_that_they_are_for_testing(
    jaxrl, command, flag, continues
):
    rendered = jaxrl(command, "trpo", "--help").check().stdout
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", rendered).split())  # rich's box, unwrapped
    assert "for testing" not in words
    assert flag in words and continues in words, words[words.index(flag) :][:300]


# Cost: under 0.1 s (a configuration, no run).
def test_a_budget_note_names_a_default_as_the_default():
    """The note on an evaluation interval that does not divide the run names the flag with
    its value only when the command line wrote it (else: the default)."""
    from jaxrl.cli.train import _budget_notes
    from jaxrl.config.run_config import RunConfig

    config = RunConfig(algo="trpo", env="Pendulum-v1", backend="jax", total_steps=3072,
                       eval_every=2048, num_envs=16, num_steps=64)  # fmt: skip
    (passed,) = _budget_notes(config, {"total_steps", "eval_every"})
    assert passed.startswith("Note: --eval-every 2,048 does not divide the run: evaluations")
    (default,) = _budget_notes(config, {"total_steps"})
    assert default.startswith("Note: the default --eval-every (2,048) does not divide the run")


# Cost: under 0.1 s (a configuration, no run).
def test_a_preset_file_tuned_on_another_environment_is_noted(tmp_path):
    """Values a study tuned on one task, applied to another, are said to be so; on their own
    task nothing is said."""
    import json

    from jaxrl.cli.train import _budget_notes
    from jaxrl.config.run_config import RunConfig

    file = tmp_path / "best.json"
    file.write_text(json.dumps({"algo": "trpo", "env": "Pendulum-v1", "preset": "default",
                                "hyperparameters": {"max_kl": 0.02}, "run": {}}))  # fmt: skip
    shape = {"algo": "trpo", "backend": "jax", "total_steps": 2048, "eval_every": 1024}
    config = RunConfig(env="MountainCarContinuous-v0", **shape)
    (note,) = _budget_notes(config, set(), str(file))
    assert note == (
        f"Note: --preset-file {file} holds values tuned on Pendulum-v1; this run is on "
        "MountainCarContinuous-v0."
    )
    own = RunConfig(env="Pendulum-v1", **shape)
    assert _budget_notes(own, set(), str(file)) == []


def test_version_names_jaxrl_and_jax_and_the_help_says_how_to_ask(capsys):
    from importlib import metadata

    import jaxrl

    for flag in ("--version", "-V"):
        assert main([flag]) == 0
        line = capsys.readouterr().out.strip()
        assert line == f"jaxrl {jaxrl.__version__} (jax {metadata.version('jax')}, jaxlib " + (
            f"{metadata.version('jaxlib')})"
        )
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "jaxrl --version prints the versions" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "--version" not in capsys.readouterr().out  # a command's help is its own

"""One-line explanations of rejected command lines (:mod:`jaxrl.cli.usage`), from the
command's own table of options: no parser internals."""

from __future__ import annotations

from typing import Literal

import pytest

from jaxrl.cli import parsing as cli
from jaxrl.cli.usage import CommandSpec, explain

SPEC = CommandSpec(
    "jaxrl train tiny",
    {
        "--gamma": float,
        "--repeat": int,
        "--hidden-sizes": tuple[int, ...],
        "--activation": Literal["tanh", "relu"],
        "--batch-size": int | None,
        "--return-scaling": bool,
        "--env": str,
    },
    hyperparameters=True,
)
EVALUATE = CommandSpec(
    "jaxrl evaluate", {"--episodes": int}, positional="RUN_DIR", positional_required=True
)


@pytest.mark.parametrize(
    ("spec", "tokens", "expected"),
    [
        (
            SPEC,
            ["--gama", "0.9"],
            "unknown hyperparameter or option --gama for jaxrl train tiny; "
            "did you mean --gamma? (see jaxrl train tiny --help)",
        ),
        (SPEC, ["--repeat", "1.5"], "invalid value for --repeat: '1.5' is not an integer"),
        (
            SPEC,
            ["--repeat", "1e6"],
            "invalid value for --repeat: '1e6' is not an integer; write it out: --repeat 1000000",
        ),
        (SPEC, ["--repeat", "inf"], "invalid value for --repeat: 'inf' is not an integer"),
        (SPEC, ["--gamma=high"], "invalid value for --gamma: 'high' is not a number"),
        (
            SPEC,
            ["--activation", "swish"],
            "invalid value 'swish' for --activation (choose from relu, tanh)",
        ),
        (
            SPEC,
            ["--hidden-sizes", "32", "x", "--gamma", "0.9"],
            "invalid value for --hidden-sizes: 'x' is not an integer",
        ),
        (
            SPEC,
            ["--hidden-sizes", "64,64"],
            "invalid value for --hidden-sizes: '64,64' is not an integer; give the values "
            "separated by spaces: --hidden-sizes 64 64",
        ),
        (
            SPEC,
            ["--hidden-sizes=[64, 64]"],
            "invalid value for --hidden-sizes: '[64, 64]' is not an integer; give the values "
            "separated by spaces: --hidden-sizes 64 64",
        ),
        (SPEC, ["--no-return-scaling", "--gamma"], "--gamma expects a value"),
        (
            SPEC,
            ["--return-scaling", "False"],
            "--return-scaling is a switch: write --return-scaling or --no-return-scaling, "
            "not --return-scaling False",
        ),
        (
            SPEC,
            ["--no-return-scaling=1"],
            "--return-scaling is a switch: write --return-scaling or --no-return-scaling, "
            "not --no-return-scaling=1",
        ),
        (SPEC, ["--hidden-sizes", "--gamma", "0.9"], "--hidden-sizes expects a value"),
        (
            SPEC,
            ["--batch-size", "None", "extra"],
            "unexpected argument 'extra' for jaxrl train tiny",
        ),
        (
            EVALUATE,
            ["--episodes", "3"],
            "missing RUN_DIR for jaxrl evaluate (see jaxrl evaluate --help)",
        ),
        (EVALUATE, ["a", "b"], "unexpected argument 'b' for jaxrl evaluate"),
        (
            EVALUATE,
            ["--seed", "1"],
            "unknown option --seed for jaxrl evaluate (see jaxrl evaluate --help)",
        ),
    ],
)
def test_the_first_problem_is_named(spec, tokens, expected):
    assert explain(spec, tokens) == expected


def test_a_line_it_cannot_explain_points_to_help():
    assert explain(SPEC, ["--gamma", "0.9"]) == (
        "invalid arguments for jaxrl train tiny (see jaxrl train tiny --help)"
    )


def test_the_command_tables_are_the_commands_options():
    train = cli.command_spec(["train", "ddpg"], "pendulum")
    assert {"--tau", "--env", "--num-seeds", "--exploration-noise"} <= set(train.options)
    assert "--max-kl" not in train.options and train.hyperparameters
    plot = cli.command_spec(["plot"], "pendulum")
    assert plot.positional == "RUN_DIR..." and plot.many_positional
    assert plot.options["-o"] == plot.options["--output"]
    evaluate = cli.command_spec(["evaluate"], "pendulum")
    assert evaluate.positional_required and "--episodes" in evaluate.options

"""The pieces behind the ``jaxrl`` command, in process: argument parsing and its one-line
errors, the run configuration, checkpoints that survive interrupted saves."""

from __future__ import annotations

import dataclasses
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl import cli
from jaxrl.algorithms import registry
from jaxrl.config import RunConfig, hyperparameters
from jaxrl.config.spellings import PYTHON_ONLY, parse_noise, spelling
from jaxrl.runs import CheckpointError, CheckpointStore

from .helpers import error_line, leaves_equal, make_config

# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ["npg", "trpo", "ddpg"])
def test_every_hyperparameter_is_an_option(algo):
    cls = registry.get(algo).cls
    names = {spec.name for spec in hyperparameters(algo)}
    # Every field but the Python-only ones (custom networks: Flax modules).
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    fields -= {name for name in fields if spelling(name, hints[name]) is PYTHON_ONLY}
    assert {"actor_network", "critic_network"}.isdisjoint(fields)
    ignored = {"trust_region_size", "normalize_step"} if algo == "trpo" else set()
    assert names == fields - ignored
    args = cli.parse(["train", algo])
    assert args.algo == algo
    # Each option's default builds the algorithm with Tianshou's tuned settings.
    config_values = dict(args.hyperparameters)
    agent = make_config(algo=algo, hyperparameters=config_values).make_agent()
    assert isinstance(agent, cls)


def test_options_parse_to_typed_values_and_accept_tianshou_1x_names():
    args = cli.parse(
        [
            *("train", "trpo", "--max-kl", "0.02", "--discount-factor", "0.9"),
            *("--hidden-sizes", "32", "16", "--batch-size", "64", "--no-return-scaling"),
            *("--action-bound-method", "None", "--lr-schedule", "linear", "--num-seeds", "3"),
        ]
    )
    hyper = args.hyperparameters
    assert (hyper["max_kl"], hyper["gamma"], hyper["hidden_sizes"], hyper["batch_size"]) == (
        0.02,
        0.9,
        (32, 16),
        64,
    )
    assert hyper["return_scaling"] is False and hyper["action_bound_method"] is None
    assert hyper["lr_schedule"] == "linear" and args.run["num_seeds"] == 3
    ddpg = cli.parse(["train", "ddpg", "--estimation-step", "5", "--tau", "0.01"])
    assert ddpg.hyperparameters["n_step_return_horizon"] == 5
    assert ddpg.hyperparameters["tau"] == 0.01


def test_help_lists_the_hyperparameters(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "trpo", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--max-kl", "--gamma", "--total-steps", "--resume", "--checkpoint-every"):
        assert option in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], "missing command"),
        (["trian"], "unknown command 'trian'"),
        (["train"], "missing algorithm"),
        (["train", "ppo"], "unknown algorithm 'ppo': choose from ddpg, npg, trpo"),
        (["train", "trpo", "--max-kll", "1"], "did you mean --max-kl?"),
        (["train", "ddpg", "--max-kl", "1"], "unknown hyperparameter or option --max-kl"),
        (["train", "trpo", "--activation", "swish"], "invalid value 'swish' for --activation"),
        (["train", "trpo", "--repeat", "1.5"], "invalid value for --repeat"),
        (["train", "trpo", "--num-envs", "0"], "--num-envs must be a positive integer, got 0"),
        (["train", "trpo", "--checkpoint-every", "-1"], "--checkpoint-every must be"),
        (["train", "trpo", "--gamma", "1.5"], "--gamma must be in [0.0, 1.0]"),
        (["train", "ddpg", "--exploration-noise", "pink"], "--exploration-noise must be"),
        (
            ["train", "trpo", "--total-steps", "100"],
            "--total-steps must be at least one collection (--num-envs x --num-steps = ",
        ),
        (["train", "ddpg", "--env", "CartPole-v1"], "DDPG needs a continuous Box action_space"),
        (["evaluate"], "missing RUN_DIR for jaxrl evaluate (see jaxrl evaluate --help)"),
        (["evaluate", "no/such/run"], "run directory 'no/such/run' does not exist"),
        (["train", "trpo", "--max-kl", "-1"], "--max-kl must be in (0.0, inf), got -1.0"),
        (["plot"], "jaxrl plot needs at least one RUN_DIR"),
    ],
)
def test_bad_arguments_are_one_line(capsys, tmp_path, monkeypatch, argv, expected):
    """One error line naming the problem, and nothing written: the working directory stays
    empty (no run directory, no compilation cache: nothing was compiled)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "cache"))
    assert expected in error_line(capsys, argv)
    assert list(tmp_path.iterdir()) == []


def test_a_resumed_run_keeps_its_configuration(capsys, tmp_path, monkeypatch, trpo_run):
    run_dir, _ = trpo_run
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "cache"))
    line = error_line(capsys, ["train", "trpo", "--resume", str(run_dir), "--max-kl", "0.02"])
    assert "--max-kl 0.02 differs from the resumed run's 0.01" in line
    line = error_line(capsys, ["train", "npg", "--resume", str(run_dir)])
    assert "is a trpo run" in line
    line = error_line(capsys, ["train", "--resume", str(tmp_path / "nowhere")])
    assert "--resume: run directory" in line and "does not exist" in line
    existing = error_line(capsys, ["train", "trpo", "--run-dir", str(run_dir)])
    assert "already exists; continue it with --resume" in existing
    # A run's file named for its run, and another file.
    line = error_line(capsys, ["train", "--resume", str(run_dir / "config.json")])
    config = run_dir / "config.json"
    assert f"--resume: '{config}' is a file; name its run directory, {run_dir}" in line
    line = error_line(capsys, ["evaluate", __file__])
    assert f"'{__file__}' is a file, not a run directory" in line
    # A run directory that cannot be one: a file, a path through a file, another folder.
    (tmp_path / "a-file").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("")
    for where, expected in (
        ("a-file", "a-file' is no empty folder; choose another --run-dir"),
        ("a-file/run", "cannot create run directory '%s/a-file/run': Not a directory"),
        ("other", "other' is no empty folder; choose another --run-dir"),
    ):
        line = error_line(capsys, ["train", "trpo", "--run-dir", str(tmp_path / where)])
        assert expected.replace("%s", str(tmp_path)) in line


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def test_run_config_round_trips_through_json(tmp_path):
    config = make_config(
        algo="ddpg",
        num_envs=8,
        num_steps=1,
        seed=7,
        num_seeds=2,
        checkpoint_every=0,
        hyperparameters={"hidden_sizes": (16, 16), "exploration_noise": "ou", "tau": 0.01},
    )
    config.save(tmp_path / "config.json")
    assert RunConfig.load(tmp_path / "config.json") == config
    agent = config.make_agent()
    assert agent.hidden_sizes == (16, 16) and isinstance(agent.exploration_noise, jaxrl.OUNoise)


def test_noise_specs_and_linear_schedule():
    assert parse_noise("none") is None
    assert parse_noise("gaussian:0.3") == jaxrl.GaussianNoise(sigma=0.3)
    assert parse_noise("OU") == jaxrl.OUNoise()
    with pytest.raises(ValueError, match=r"must be gaussian\[:SIGMA\], ou\[:SIGMA\] or none"):
        parse_noise("gaussian:x")
    bad = make_config(algo="ddpg", hyperparameters={"exploration_noise": "gaussian:x"})
    with pytest.raises(ValueError, match=r"^DDPG\.exploration_noise must be gaussian"):
        bad.make_agent()
    config = make_config(hyperparameters={"lr_schedule": "linear"})
    schedule = config.make_agent().lr_schedule
    assert config.num_agent_updates() == 10
    np.testing.assert_allclose([schedule(0), schedule(5), schedule(20)], [1.0, 0.5, 0.0])


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


def test_checkpoints_ignore_interrupted_saves_and_restore_exactly(tmp_path):
    tree = {
        "params": {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3, jnp.float32)},
        "key": jax.random.split(jax.random.key(3), 2),
        "count": jnp.int32(7),
        "flags": jnp.array([True, False]),
        "nothing": None,
    }
    store = CheckpointStore(tmp_path / "ckpt")
    for step in (1, 2, 3):
        store.save(step, jax.tree_util.tree_map(lambda x: x, tree), {"period": step})
    store.close()
    assert store.steps() == [2, 3]  # max_to_keep=2
    # An interrupted save: orbax's temporary directory, and an unmarked step directory.
    (tmp_path / "ckpt" / "4.orbax-checkpoint-tmp-99" / "tree").mkdir(parents=True)
    (tmp_path / "ckpt" / "5" / "tree").mkdir(parents=True)
    assert store.latest_step() == 3
    restored, meta = store.restore(jax.eval_shape(lambda: tree))
    assert meta["period"] == 3 and leaves_equal(restored, tree)
    assert restored["key"].dtype == tree["key"].dtype
    removed = store.prune_after(2)
    assert sorted(p.name for p in removed) == ["3", "4.orbax-checkpoint-tmp-99", "5"]
    assert store.steps() == [2]
    with pytest.raises(CheckpointError, match="different configuration"):
        store.restore({"w": jnp.zeros(2)})
    with pytest.raises(CheckpointError, match="no finalized checkpoint"):
        CheckpointStore(tmp_path / "empty").restore(tree)

"""Presets: which one an environment gets, what it resolves to, where it is shown, and the
one-line errors of the MuJoCo options (nothing written to the run directory)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from jaxrl.algorithms import registry
from jaxrl.cli import main, parse, preset_in_force
from jaxrl.config.presets import PRESETS, get_preset, is_mujoco_id, preset_for_env
from jaxrl.config.run_config import RunConfig, run_defaults
from jaxrl.config.spellings import hyperparameters, parse_noise

from .helpers import make_config


def test_environments_get_their_presets():
    for env in ("Hopper-v5", "HalfCheetah-v4", "Walker2d-v5", "Ant-v5", "Humanoid-v5"):
        assert is_mujoco_id(env) and preset_for_env(env) == "mujoco", env
    assert preset_for_env("Pendulum-v1") == "pendulum"
    assert preset_for_env("CartPole-v1") == "default"
    # Brax's versions of MuJoCo tasks (a brax: id only: not a bare name).
    for env in ("brax:hopper", "brax:halfcheetah", "brax:inverted_pendulum"):
        assert preset_for_env(env) == "mujoco" and not is_mujoco_id(env), env
    assert preset_for_env("brax:fast") == preset_for_env("hopper") == "default"
    assert preset_in_force(["train", "trpo", "--env", "Hopper-v5"]) == "mujoco"
    assert preset_in_force(["train", "trpo", "--env=Hopper-v5", "--preset", "pendulum"]) == (
        "pendulum"
    )
    assert preset_in_force(["train", "trpo"]) == "pendulum"  # the default env, Pendulum-v1


def test_the_mujoco_preset_is_tianshous_mujoco_settings():
    trpo = {spec.name: spec.default for spec in hyperparameters("trpo", "mujoco")}
    assert trpo["hidden_sizes"] == (64, 64) and trpo["activation"] == "tanh"
    assert trpo["gamma"] == 0.99 and trpo["gae_lambda"] == 0.95 and trpo["max_kl"] == 0.01
    assert trpo["optim_critic_iters"] == 20 and trpo["lr"] == 1e-3
    assert trpo["lr_schedule"] == "linear" and trpo["return_scaling"] is True
    assert trpo["log_std_init"] == -0.5 and trpo["actor_output_scale"] == 0.01
    assert math.isclose(trpo["init_gain"], math.sqrt(2))
    npg = {spec.name: spec.default for spec in hyperparameters("npg", "mujoco")}
    assert npg["trust_region_size"] == 0.1
    run = run_defaults("trpo", "mujoco")
    assert (run["num_envs"], run["num_steps"], run["normalize_obs"]) == (16, 64, True)
    assert run["total_steps"] == 1_000_000
    ddpg = {spec.name: spec.default for spec in hyperparameters("ddpg", "mujoco")}
    assert ddpg["hidden_sizes"] == (256, 256) and ddpg["warmup_steps"] == 25_000
    assert ddpg["batch_size"] == 256 and ddpg["update_per_step"] == 1.0
    assert ddpg["buffer_size"] == 1_000_000 and ddpg["actor_lr"] == 1e-3
    assert run_defaults("ddpg", "mujoco")["num_envs"] == 1


def test_tianshous_pendulum_test_settings_stay_a_preset():
    trpo = {spec.name: spec.default for spec in hyperparameters("trpo", "tianshou-pendulum")}
    assert (trpo["gamma"], trpo["max_kl"], trpo["repeat"]) == (0.95, 0.005, 2)
    run = run_defaults("trpo", "tianshou-pendulum")
    assert (run["num_envs"], run["num_steps"], run["normalize_obs"]) == (16, 128, False)
    # The main job's preset: Tianshou's MuJoCo networks, larger collections, deterministic
    # evaluation (docs/benchmarks/learning.md, how the preset was chosen).
    trpo = {spec.name: spec.default for spec in hyperparameters("trpo", "pendulum")}
    assert (trpo["gamma"], trpo["max_kl"], trpo["optim_critic_iters"]) == (0.95, 0.01, 20)
    assert trpo["deterministic_eval"] and trpo["log_std_init"] == -0.5
    run = run_defaults("trpo", "pendulum")
    assert (run["num_envs"], run["num_steps"], run["normalize_obs"]) == (16, 512, True)
    assert run["total_steps"] == 327_680
    default = {spec.name: spec.default for spec in hyperparameters("trpo", "default")}
    assert (default["gamma"], default["max_kl"], default["repeat"]) == (0.99, 0.01, 1)


def test_every_preset_builds_every_algorithm():
    """Each preset's defaults build each algorithm, with every plain hyperparameter (not a
    schedule or noise spec, which the config turns into objects) set to the preset's value."""
    special = {"lr_schedule", "actor_lr_schedule", "critic_lr_schedule", "exploration_noise"}
    for name, preset in PRESETS.items():
        for algo in [a for a in ("npg", "trpo", "ddpg") if preset.covers(a, a)]:
            hyper = {spec.name: spec.default for spec in hyperparameters(algo, name)}
            run = preset.for_algo(algo)[1]
            config = make_config(
                algo=algo,
                num_seeds=1,
                hyperparameters=hyper,
                preset=name,
                **{k: run[k] for k in ("num_envs", "num_steps", "total_steps", "eval_every")},
                eval_episodes=run["eval_episodes"],
                normalize_obs=run["normalize_obs"],
            )
            agent = config.make_agent()
            assert type(agent) is registry.get(algo).cls, (name, algo)
            for field, value in hyper.items():
                if field in special:
                    continue
                got = getattr(agent, field)
                expected = tuple(value) if isinstance(value, list) else value
                assert got == expected, (name, algo, field, got, expected)
            for field in special & set(hyper) - {"exploration_noise"}:  # the lr schedules
                assert (getattr(agent, field) is None) == (hyper[field] == "constant"), field
            if "exploration_noise" in hyper:
                assert agent.exploration_noise == parse_noise(hyper["exploration_noise"])


def test_help_shows_the_preset_in_force(capsys):
    with pytest.raises(SystemExit):
        parse(["train", "trpo", "--env", "Hopper-v5", "--help"])
    text = capsys.readouterr().out
    assert "preset mujoco" in text and "(default: 0.01)" in text  # max_kl
    with pytest.raises(ValueError, match=r"unknown preset 'mujocoo'.*did you mean mujoco"):
        get_preset("mujocoo")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--env", "Hopper-v5", "--preset", "mujocoo"], "unknown preset 'mujocoo'"),
        (["--env", "Hopper-v2", "--env-backend", "envpool"], "EnvPool has no environment"),
        (["--env", "Hopper-v5", "--num-seeds", "0"], "--num-seeds must be a positive integer"),
        (["--env", "Pendulum-v1", "--env-backend", "envpool", "--backend", "jax"], "cannot be"),
    ],
)
def test_mujoco_options_fail_in_one_line_without_writing(
    capsys, tmp_path, monkeypatch, argv, expected
):
    if "envpool" in argv:
        pytest.importorskip("envpool", reason="needs the envpool extra")
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    assert main(["train", "trpo", *argv, "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not run_dir.exists()


def test_config_json_shows_the_preset_and_every_resolved_value(tmp_path):
    pytest.importorskip("mujoco", reason="needs the mujoco extra")
    from jaxrl.runs.run_dir import RunDir
    from jaxrl.runs.runner import train_run

    config = RunConfig.from_preset(
        "trpo",
        "Hopper-v5",
        hyperparameters={"hidden_sizes": (8,)},
        num_envs=2,
        num_steps=32,
        total_steps=128,
        eval_every=128,
        eval_episodes=1,
        num_seeds=2,
        env_backend="gymnasium",
    )
    assert config.preset == "mujoco" and config.normalize_obs  # chosen from the env id
    run_dir = RunDir.create(tmp_path / "run")
    result = train_run(config, run_dir, progress=False)
    saved = json.loads(run_dir.config.read_text())
    assert saved["preset"] == "mujoco" and saved["run"]["normalize_obs"] is True
    assert saved["hyperparameters"]["max_kl"] == 0.01 and saved["run"]["num_seeds"] == 2
    assert RunConfig.load(run_dir.config) == config
    assert result.finished and result.eval_returns.shape == (2,)


HELD_OUT = Path(__file__).parents[2] / "benchmarks" / "results"


@pytest.mark.parametrize(
    ("algo", "task"),
    [
        ("trpo", "Ant-v5"),
        ("trpo", "HalfCheetah-v5"),
        ("trpo", "Hopper-v5"),
        ("trpo", "Swimmer-v5"),
        ("trpo", "Walker2d-v5"),
        ("npg", "HalfCheetah-v5"),
        ("npg", "Hopper-v5"),
        ("npg", "Swimmer-v5"),
    ],
)
def test_the_tuned_preset_is_what_the_held_out_seeds_trained(algo, task):
    """``mujoco-tuned`` on a task is exactly the preset file its held-out runs trained with
    (rl-zoo's settings and the study's best values), through the API and the command line."""
    trained = json.loads(
        (HELD_OUT / f"tuned_heldout_{algo}_{task.split('-')[0].lower()}.json").read_text()
    )
    assert trained["task"] == task and trained["preset"]["preset"] == "rl-zoo"
    assert trained["algo"] == algo
    held_out = RunConfig.from_preset(
        algo,
        task,
        "rl-zoo",
        hyperparameters=trained["preset"]["hyperparameters"],
        **trained["preset"]["run"],
    )
    tuned = RunConfig.from_preset(algo, task, "mujoco-tuned")
    assert dataclasses.replace(tuned, preset="rl-zoo") == held_out
    args = parse(["train", algo, "--env", task, "--preset", "mujoco-tuned"])
    same = json.loads(json.dumps(args.hyperparameters))  # tuples as the config's lists
    assert same == json.loads(json.dumps(held_out.hyperparameters))
    assert run_defaults(algo, "mujoco-tuned", task)["num_steps"] == held_out.num_steps


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["trpo", "--env", "Humanoid-v5"],
            "--preset mujoco-tuned has values for trpo on Ant, HalfCheetah, Hopper, Swimmer, "
            "Walker2d only, not Humanoid-v5",
        ),
        (
            ["npg", "--env", "Walker2d-v5"],
            "--preset mujoco-tuned has values for npg on HalfCheetah, Hopper, Swimmer only, not "
            "Walker2d-v5",
        ),
        (["ddpg", "--env", "Hopper-v5"], "--preset mujoco-tuned has no settings for ddpg"),
    ],
)
def test_the_tuned_preset_refuses_what_was_not_tuned(capsys, tmp_path, argv, expected):
    run_dir = tmp_path / "run"
    assert main(["train", *argv, "--preset", "mujoco-tuned", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not run_dir.exists()
    with pytest.raises(ValueError, match=r"for trpo on Ant, HalfCheetah, .* only, not Reacher"):
        RunConfig.from_preset("trpo", "Reacher-v5", "mujoco-tuned")
    with pytest.raises(
        ValueError, match=r"for npg on HalfCheetah, Hopper, Swimmer only, not Ant-v5"
    ):
        RunConfig.from_preset("npg", "Ant-v5", "mujoco-tuned")

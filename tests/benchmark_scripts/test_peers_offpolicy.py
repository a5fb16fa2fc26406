"""benchmarks/peers/offpolicy.py and its sides without the peers (no rejax or sbx environment
needed): jaxrl's child with a tiny budget, the command lines it runs, its tables."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "peers"))

import offpolicy
import offpolicy_sides


def test_jaxrl_api_child_trains_every_seed_to_a_finite_return():
    got = offpolicy_sides.jaxrl_api_child("ddpg", seeds=2, steps=300, episodes=2, warmup_steps=100)
    assert len(got["returns"]) == 2 and all(math.isfinite(r) for r in got["returns"])
    assert got["env_steps"] == 300 and got["inner_s"] > 0


@pytest.mark.parametrize(("algo", "host"), [("ddpg", False), ("td3", False), ("ddpg", True)])
def test_command_lines_set_the_matched_settings(tmp_path, algo, host):
    """The ``jaxrl train`` command lines parse, with the API agent's hyperparameters."""
    from jaxrl.cli import load_plugins, parse

    argv = offpolicy.command_args(algo, 2, 2000, host, tmp_path / "run", seed=3)[3:]
    command = parse(load_plugins(argv))
    run = command.run
    assert command.algo == algo and run["backend"] == ("gymnasium" if host else "jax")
    assert run["seed"] == 3  # the host runs' seed is their repetition
    assert (run["num_envs"], run["num_steps"], run["total_steps"]) == (1, 1, 2000)
    assert run["eval_every"] == 2000
    agent = offpolicy_sides.jaxrl_agent(algo)
    parsed = dict(command.hyperparameters)
    for name in ("tau", "gamma", "actor_lr", "critic_lr", "batch_size", "buffer_size"):
        assert parsed[name] == getattr(agent, name), name
    assert parsed["warmup_steps"] == agent.warmup_steps == offpolicy_sides.WARMUP_STEPS
    assert tuple(parsed["hidden_sizes"]) == tuple(agent.hidden_sizes)
    assert parsed["exploration_noise"] == f"gaussian:{agent.exploration_noise.sigma}"
    if algo == "td3":
        assert (parsed["policy_noise"], parsed["policy_delay"]) == (0.2, 2)


def test_tables_name_every_side_and_the_td3_ratio():
    sides = {
        "jaxrl API": {"wall_s": [10.0, 12.0], "return_mean": -150.0, "return_std": 20.0},
        "rejax": {"wall_s": [30.0, 20.0], "return_mean": -170.0, "return_std": 30.0},
        "sbx": {"wall_s": [11.0], "return_mean": -120.0, "return_std": 0.0},
    }
    for side in sides.values():
        side["return_seeds"] = len(side["wall_s"])
        side["runs"] = [{"returns": [side["return_mean"]] * 2}]
        side["wall_summary"] = offpolicy.summarize(side["wall_s"])
        side["ratio_to_fastest"] = side["wall_summary"]["median"] / 11.0
    table = offpolicy.comparison_table("ddpg", {"sides": sides})
    assert "| jaxrl API | 11.0 | 10.0, 12.0 | -150.0 ± 20.0 (2 seeds) | 1.00 |" in table
    assert "| rejax | 25.0 |" in table and "| -120.0 ± 0.0 (1 seed) |" in table
    rows = [
        offpolicy_sides._update_row("jaxrl", algo, "uniform (jaxrl's)", [t, t], 1.0)
        for algo, t in (("ddpg", 0.002), ("td3", 0.0023))
    ]
    table = offpolicy.update_table(
        {"rows": rows, "td3_over_ddpg": {"jaxrl (uniform (jaxrl's))": 1.15}}
    )
    assert "| jaxrl | td3 | uniform (jaxrl's) | 2.300 |" in table and "| 1.15 |" in table


def test_td3_learning_script_runs_the_batched_form_and_puts_the_function_back(monkeypatch):
    """``td3_ensemble_learning.py``: the batched form calls ``apply_copies`` with
    ``batched=True`` whatever the ensemble asks, the in-turn form as asked, and each leaves
    ``jaxrl.networks.apply_copies`` as it found it."""
    import td3_ensemble_learning as script

    import jaxrl.networks as networks

    calls = []

    def recorder(apply, stacked, *inputs, batched):
        calls.append(batched)

    def child(algo, seeds, steps, seed):
        networks.apply_copies(None, None, batched=False)  # as the ensemble on a CPU
        return {"returns": [float(seed)] * seeds}

    monkeypatch.setattr(networks, "apply_copies", recorder)
    monkeypatch.setattr(script.offpolicy_sides, "jaxrl_api_child", child)
    assert script.final_returns("batched", 2, 10, 7) == [7.0, 7.0]
    assert script.final_returns("in turn", 1, 10, 3) == [3.0]
    assert calls == [True, False] and networks.apply_copies is recorder


def test_skip_leaves_a_side_out_and_refuses_an_unknown_one(capsys):
    args = offpolicy.parse_args(["--only", "td3", "--skip", "rejax", "--skip", "jaxrl API"])
    assert args.skip == ["rejax", "jaxrl API"]
    for comparison in ("ddpg", "td3", "host"):  # every side is one that --skip knows
        assert set(offpolicy.side_runners(comparison, args, {}, Path("."))) <= set(offpolicy.SIDES)
    with pytest.raises(SystemExit):
        offpolicy.parse_args(["--skip", "rejax-uniform"])
    assert "invalid choice: 'rejax-uniform'" in capsys.readouterr().err

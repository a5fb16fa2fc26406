"""The run plan (:mod:`jaxrl.training.plan`, ``jaxrl train ... --plan``): counts checked
against a run's layout by hand. No program is compiled (about 10 s, most of it Brax's
import)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jaxrl
from jaxrl.config.settings import RunSettings
from jaxrl.training.plan import run_plan


def test_a_gymnax_run_counts_its_sequential_steps_updates_and_programs():
    from jaxrl.envs import make_env

    env, params = make_env("Pendulum-v1")
    settings = RunSettings(num_envs=16, num_steps=512, total_steps=327_680, eval_every=32_768)
    plan = run_plan(settings, jaxrl.TRPO(), env, int(params.max_steps_in_episode), 40)
    scale = 1_000_000 / 327_680  # 40 collections of 8,192 env steps, 10 periods of 4
    assert plan.train_steps == 1_000_000 / 16
    assert plan.evaluations == pytest.approx((1 + 10 + 2) * scale)  # initial, periods, finals
    assert plan.horizon == 200 and plan.eval_steps == pytest.approx(plan.evaluations * 200)
    assert plan.eval_share == pytest.approx(plan.eval_steps / (62_500 + plan.eval_steps))
    assert plan.updates == pytest.approx(40 * scale)
    assert plan.frames is None and plan.passes is None and plan.solver_in_force == {}
    assert plan.programs == ("init", "period of 4 collections", "evaluation")
    assert plan.update_loops == {
        "actor steps": 1,
        "conjugate-gradient iterations per actor step": 10,
        "critic steps per actor step": 5,
        "line-search candidates per actor step": 10,
    }
    text = "\n".join(plan.lines())
    assert "62,500 sequential vector steps" in text and "line-search candidates" in text


def test_evaluating_alongside_counts_only_the_final_evaluation_and_short_periods_steps():
    from jaxrl.envs import make_env

    env, params = make_env("Pendulum-v1")
    # 40 collections of 16 x 16 env steps, periods of 16, 16 and 8 collections: the last
    # period's 128 vector steps leave 72 of a 200-step episode to evaluate on their own.
    settings = RunSettings(
        num_envs=16, num_steps=16, total_steps=10_240, eval_every=4_096, eval_alongside=True
    )
    plan = run_plan(settings, jaxrl.TRPO(), env, int(params.max_steps_in_episode), 40)
    scale = 1_000_000 / 10_240
    assert plan.alongside == pytest.approx(3 * scale)
    assert plan.evaluations == pytest.approx(scale)  # the final policy's, deterministic
    assert plan.eval_steps == pytest.approx((200 + 72) * scale)
    text = "\n".join(plan.lines())
    assert "+ 7,031 left by periods shorter than an episode" in text
    assert "293.0 evaluations stepped with training's steps" in text


def test_update_loops_follow_the_minibatches_and_the_algorithm():
    from jaxrl.algorithms.protocol import update_loops

    npg = jaxrl.NPG(batch_size=100, repeat=2, optim_critic_iters=3, critic_batch_size=40)
    # 250 transitions: minibatches of 100 and 150 (the remainder merged, as Tianshou's split);
    # the critic's passes over a 150-sample minibatch: 3 x (40, 40, 70).
    assert update_loops(npg, 250) == {
        "actor steps": 4,
        "conjugate-gradient iterations per actor step": 10,
        "critic steps per actor step": 9,
    }
    assert update_loops(jaxrl.DDPG(), 1_000) == {}


def test_a_brax_run_counts_its_physics_passes_and_a_changed_schedule_shows():
    pytest.importorskip("brax")
    from jaxrl.envs import make_env

    env, params = make_env("brax:inverted_pendulum", brax_backend="positional")
    settings = RunSettings(num_envs=8, num_steps=64, total_steps=5_120, eval_every=2_048)
    plan = run_plan(settings, jaxrl.NPG(), env, int(params.max_steps_in_episode), 10)
    assert plan.frames == env.frames and plan.passes == env.frames + 1 / env.starts_every
    assert plan.solver_in_force == {}  # Brax's own pipelines: no MuJoCo solver
    # 10 collections, periods of 4, 4 and 2: two period programs
    assert plan.programs == (
        "init",
        "period of 4 collections",
        "period of 2 collections",
        "evaluation",
    )


def test_the_command_prints_the_plan_and_writes_no_run_directory(tmp_path):
    pytest.importorskip("brax")
    command = [
        sys.executable,
        "-m",
        "jaxrl",
        "train",
        "npg",
        "--env",
        "brax:inverted_pendulum",
        "--brax-backend",
        "positional",
        "--num-envs",
        "8",
        "--plan",
    ]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "125,000 sequential vector steps" in done.stdout  # 1M / 8 envs
    assert "physics" in done.stdout and "compiled" in done.stdout
    assert not (tmp_path / "runs").exists()

"""Evaluation alongside training (``RunSettings.eval_alongside``): each period evaluates the
policy it started with while it trains, with the numbers a separate evaluation of that
policy gives, and the training itself unchanged. (About 40 s on a 2-core CPU, compiles
included.)"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.config.run_config import RunConfig
from jaxrl.config.settings import SettingError
from jaxrl.runs import make_loop
from jaxrl.training import TrainConfig, make_train_loop
from jaxrl.training.evaluation import evaluate
from jaxrl.training.gymnasium_driver import HostLoop
from jaxrl.training.run import run_periods
from tests.training.test_jax_driver import assert_trees_close
from tests.training.test_run import ListRecorder

# Pendulum's episodes are 200 steps: a period of 4 collections x 50 vector steps holds one.
ALONGSIDE = TrainConfig(
    num_envs=2, num_steps=50, total_steps=800, eval_every=400, eval_episodes=2,
    eval_alongside=True,
)  # fmt: skip
AGENT = jaxrl.TRPO(hidden_sizes=(8,), damping=1.0)
SHAPE = ("num_envs", "num_steps", "total_steps", "eval_every", "eval_episodes", "eval_alongside")


@pytest.mark.default_emitters
@pytest.mark.parametrize("eval_every", [400, 200], ids=["period of an episode", "shorter"])
def test_a_period_evaluates_the_policy_it_started_with_and_trains_as_without(eval_every):
    """A period of 200 vector steps holds one of Pendulum's episodes; one of 100 leaves the
    episodes 100 steps to take on their own. (The two periods' programs agree bit for bit as
    XLA's default CPU emitters compile them; with its legacy ones, on a 2-core AMD EPYC
    without AVX-512, a parameter differed by 1.4e-5 relative after the period's updates, the
    programs' rounding; a period trained on another key, as one whose evaluation took the
    training's key would be, differs by more than 10^4 times the tolerance.)"""
    config = dataclasses.replace(ALONGSIDE, eval_every=eval_every)
    loop = make_train_loop(AGENT, "Pendulum-v1", config)
    start = jax.jit(loop.init)(jax.random.key(0))
    carry, metrics = jax.jit(loop.run_period)(start)

    # The evaluation is that of the policy the period started with, on the period's key.
    eval_key = jax.random.split(start.key, 3)[2]
    expected = evaluate(AGENT, start.state, loop.env, loop.env_params, eval_key, 2)
    np.testing.assert_allclose(metrics["eval/return"], expected, rtol=1e-5)
    assert int(metrics["eval/env_steps"]) == 0

    # The training is the same as without evaluating alongside it.
    plain = make_train_loop(AGENT, "Pendulum-v1", dataclasses.replace(config, eval_alongside=False))
    plain_carry, plain_metrics = jax.jit(plain.run_period)(start)
    np.testing.assert_array_equal(metrics["env_steps"], plain_metrics["env_steps"])
    assert_trees_close(carry.state, plain_carry.state, rtol=1e-5, atol=1e-6)
    assert int(plain_metrics["eval/env_steps"]) == eval_every


def test_the_command_reports_the_initial_policy_from_the_first_period_and_a_final_evaluation():
    config = RunConfig(
        algo="trpo", env="Pendulum-v1", backend="jax", seed=0, num_seeds=2,
        hyperparameters={"hidden_sizes": (8,), "damping": 1.0},
        **{f: getattr(ALONGSIDE, f) for f in SHAPE},
    )  # fmt: skip
    loop = make_loop(config, config.make_agent())
    recorder = ListRecorder(num_periods=2)
    run_periods(loop, [recorder], loop.init(), 0, 0, eval_episodes=1)
    # No evaluation of its own before the first period; each period's evaluation is of the
    # policy at its start; the final policy deterministically only (no stochastic pass).
    assert recorder.calls == [
        ("period", 1, 0, 1), ("updates", (2, 4)),
        ("period", 2, 400, 5), ("updates", (2, 4)), ("save", 2),
        ("finish", 1, (2,), ()),
    ]  # fmt: skip


def test_host_environments_refuse_it():
    settings = dataclasses.replace(ALONGSIDE, num_seeds=1)
    with pytest.raises(SettingError, match="eval_alongside must be False on host"):
        HostLoop(AGENT, "Pendulum-v1", settings)

"""NPG and TRPO learn: Tianshou's Pendulum-v1 bar (>= -250) and CartPole-v1 (>= 475).

Eight seeds train at once (``jax.vmap`` over ``make_train``); at least seven must reach the
threshold at some evaluation within the budget (Tianshou's criterion: the best test mean
return). Evaluations (10 episodes each) run every 10 updates, 20,480 env steps. As Tianshou's
trainers do with ``stop_fn``, a run ends once the criterion holds (``train_until``).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.training import TrainConfig, make_train_loop, train_until

NUM_SEEDS = 8
# Tianshou's test_{npg,trpo}.py on Pendulum-v1: 16 envs, 2048 steps per collect, repeat 2,
# full batch, lr 1e-3, gamma 0.95, lambda 0.95, return scaling, advantage normalization,
# 5 critic iterations, hidden [64, 64] tanh; budget 5 epochs x 50,000 env steps.
PENDULUM_COMMON = dict(
    gamma=0.95,
    gae_lambda=0.95,
    lr=1e-3,
    return_scaling=True,
    advantage_normalization=True,
    optim_critic_iters=5,
    repeat=2,
    batch_size=None,
    hidden_sizes=(64, 64),
    activation="tanh",
)
PENDULUM_RUN = TrainConfig(num_envs=16, num_steps=128, total_steps=250_000, eval_every=20_480)
CARTPOLE_COMMON = dict(
    gamma=0.99,
    gae_lambda=0.95,
    lr=1e-3,
    optim_critic_iters=5,
    repeat=1,
    deterministic_eval=True,
)
CARTPOLE_RUN = TrainConfig(num_envs=16, num_steps=128, total_steps=300_000, eval_every=20_480)


def best_returns(agent, env_id: str, config: TrainConfig, threshold: float) -> np.ndarray:
    """Best evaluation return per seed, training until 7 of the 8 seeds reached `threshold`
    (or the budget is spent)."""
    _, metrics = train_until(
        make_train_loop(agent, env_id, config),
        jax.random.split(jax.random.key(0), NUM_SEEDS),
        lambda eval_returns: np.sum(eval_returns.max(axis=1) >= threshold) >= 7,
    )
    assert int(metrics["eval/env_steps"][0, -1]) <= config.total_steps
    assert np.all(np.isfinite(np.asarray(metrics["eval/return"])))
    best = np.asarray(metrics["eval/return"]).max(axis=1)
    steps = int(metrics["eval/env_steps"][0, -1])
    print(f"\n{type(agent).__name__} {env_id} after {steps} env steps: best return per seed {best}")
    return best


@pytest.mark.learning
@pytest.mark.slow
@pytest.mark.parametrize(
    "agent",
    [
        jaxrl.NPG(trust_region_size=0.5, deterministic_eval=True, **PENDULUM_COMMON),
        jaxrl.TRPO(max_kl=0.005, backtrack_coeff=0.8, max_backtracks=10, **PENDULUM_COMMON),
    ],
    ids=["npg", "trpo"],
)
def test_solves_pendulum(agent):
    best = best_returns(agent, "Pendulum-v1", PENDULUM_RUN, -250)
    assert np.sum(best >= -250) >= 7, f"best evaluation return per seed: {best}"


@pytest.mark.learning
@pytest.mark.slow
@pytest.mark.parametrize(
    "agent",
    [
        jaxrl.NPG(trust_region_size=0.5, **CARTPOLE_COMMON),
        # Stable-Baselines3 zoo's TRPO CartPole settings for the critic: 20 critic steps and
        # lambda 0.98 (with 5 steps and lambda 0.95, 6-7 of 8 seeds reached 475).
        jaxrl.TRPO(
            max_kl=0.01, **{**CARTPOLE_COMMON, "optim_critic_iters": 20, "gae_lambda": 0.98}
        ),
    ],
    ids=["npg", "trpo"],
)
def test_solves_cartpole(agent):
    best = best_returns(agent, "CartPole-v1", CARTPOLE_RUN, 475)
    assert np.sum(best >= 475) >= 7, f"best evaluation return per seed: {best}"

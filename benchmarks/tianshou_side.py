"""Tianshou 2.0.1 objects built as Tianshou's own tests and MuJoCo examples build them.

Imported only when torch and tianshou are installed (``pip install -e ".[bench]"``); jaxrl never
imports this. Sources followed: ``test/continuous/test_{npg,trpo,ddpg}.py`` and
``examples/mujoco/mujoco_{npg,trpo,ddpg}.py`` of Tianshou's v2.0.1 release.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import DDPG, NPG, TRPO
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.exploration import GaussianNoise
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.torch_utils import policy_within_training_step
from torch import nn
from torch.distributions import Distribution, Independent, Normal


def _dist(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def make_on_policy(
    algo: str,
    observation_space: gym.spaces.Box,
    action_space: gym.spaces.Box,
    *,
    hidden_sizes: Sequence[int] = (64, 64),
    lr: float = 1e-3,
    gamma: float = 0.95,
    gae_lambda: float = 0.95,
    return_scaling: bool = True,
    optim_critic_iters: int = 5,
    trust_region_size: float = 0.5,
    max_kl: float = 0.005,
    deterministic_eval: bool = False,
    mujoco_init: bool = False,
) -> NPG | TRPO:
    """NPG/TRPO as in test_{npg,trpo}.py (``mujoco_init``: the MuJoCo examples' init)."""
    state_shape, action_shape = observation_space.shape, action_space.shape
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=state_shape, hidden_sizes=hidden_sizes, activation=nn.Tanh),
        action_shape=action_shape,
        unbounded=True,
    )
    critic = ContinuousCritic(
        preprocess_net=Net(state_shape=state_shape, hidden_sizes=hidden_sizes, activation=nn.Tanh)
    )
    if mujoco_init:
        torch.nn.init.constant_(actor.sigma_param, -0.5)
    gain = float(np.sqrt(2)) if mujoco_init else 1.0
    for m in list(actor.modules()) + list(critic.modules()):
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.orthogonal_(m.weight, gain=gain)
            torch.nn.init.zeros_(m.bias)
    if mujoco_init:
        for m in actor.mu.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.data.copy_(0.01 * m.weight.data)
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=_dist,
        action_space=action_space,
        deterministic_eval=deterministic_eval,
    )
    common = dict(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=lr),
        gamma=gamma,
        return_scaling=return_scaling,
        advantage_normalization=True,
        gae_lambda=gae_lambda,
        optim_critic_iters=optim_critic_iters,
    )
    if algo == "npg":
        return NPG(trust_region_size=trust_region_size, **common)
    return TRPO(max_kl=max_kl, backtrack_coeff=0.8, max_backtracks=10, **common)


def make_ddpg(
    observation_space: gym.spaces.Box,
    action_space: gym.spaces.Box,
    *,
    hidden_sizes: Sequence[int] = (128, 128),
    actor_lr: float = 1e-4,
    critic_lr: float = 1e-3,
    gamma: float = 0.99,
    tau: float = 0.005,
    sigma: float = 0.1,
    n_step: int = 3,
) -> DDPG:
    """DDPG as in test_ddpg.py / mujoco_ddpg.py."""
    state_shape, action_shape = observation_space.shape, action_space.shape
    max_action = float(action_space.high[0])
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=state_shape, hidden_sizes=hidden_sizes),
        action_shape=action_shape,
        max_action=max_action,
    )
    critic = ContinuousCritic(
        preprocess_net=Net(
            state_shape=state_shape,
            action_shape=action_shape,
            hidden_sizes=hidden_sizes,
            concat=True,
        )
    )
    policy = ContinuousDeterministicPolicy(
        actor=actor, exploration_noise=GaussianNoise(sigma=sigma), action_space=action_space
    )
    return DDPG(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=actor_lr),
        critic=critic,
        critic_optim=AdamOptimizerFactory(lr=critic_lr),
        tau=tau,
        gamma=gamma,
        n_step_return_horizon=n_step,
    )


def filled_buffer(data: dict[str, np.ndarray], capacity: int) -> VectorReplayBuffer:
    """A VectorReplayBuffer holding time-major data ``[T, N, ...]`` (obs, act, rew,
    terminated, truncated, obs_next), added step by step as a collector would."""
    num_steps, num_envs = data["rew"].shape
    buffer = VectorReplayBuffer(capacity, num_envs)
    ids = np.arange(num_envs)
    for t in range(num_steps):
        buffer.add(
            Batch(
                obs=data["obs"][t],
                act=data["act"][t],
                rew=data["rew"][t],
                terminated=data["terminated"][t],
                truncated=data["truncated"][t],
                obs_next=data["obs_next"][t],
                info=[{}] * num_envs,
            ),
            buffer_ids=ids,
        )
    return buffer


def on_policy_update(algorithm: NPG | TRPO, buffer: Any, batch_size: int | None, repeat: int):
    """One on-policy learning step exactly as OnPolicyTrainer makes it: GAE and the other
    pre-processing of the whole buffer, then ``repeat`` passes of actor and critic steps."""
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer=buffer, batch_size=batch_size, repeat=repeat)


def off_policy_update(algorithm: DDPG, buffer: Any, batch_size: int):
    """One DDPG learning step as OffPolicyTrainer makes it: sample, n-step targets, update."""
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer=buffer, sample_size=batch_size)


# ------------------------------------------------------------------------------ training runs
def _seed_everything(seed: int, *envs: Any) -> None:
    np.random.seed(seed)  # noqa: NPY002  (Tianshou's tests seed the global generator)
    torch.manual_seed(seed)
    for env in envs:
        env.seed(seed)


def train_pendulum(
    algo: str,
    seed: int,
    *,
    epochs: int,
    epoch_num_steps: int,
) -> dict[str, Any]:
    """One Tianshou training run on Pendulum-v1 with its test hyperparameters and a fixed
    budget (no early stop, no logger, no checkpoint); returns wall time and test returns."""
    task = "Pendulum-v1"
    env = gym.make(task)
    if algo in ("npg", "trpo"):
        num_train, num_test, collect = 16, 10, 2048
    else:
        num_train, num_test, collect = 8, 100, 8
    start = time.perf_counter()
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num_train)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num_test)])
    _seed_everything(seed, training_envs, test_envs)
    if algo in ("npg", "trpo"):
        algorithm = make_on_policy(
            algo,
            env.observation_space,
            env.action_space,
            deterministic_eval=algo == "npg",
        )
        buffer = VectorReplayBuffer(50_000, num_train)
        exploration = False
    else:
        algorithm = make_ddpg(env.observation_space, env.action_space)
        buffer = VectorReplayBuffer(20_000, num_train)
        exploration = True
    training_collector = Collector[CollectStats](
        algorithm, training_envs, buffer, exploration_noise=exploration
    )
    test_collector = Collector[CollectStats](algorithm, test_envs)
    test_returns: list[float] = []

    def score(stats: CollectStats) -> float:
        test_returns.append(float(stats.returns_stat.mean))
        return float(stats.returns_stat.mean)

    common = dict(
        training_collector=training_collector,
        test_collector=test_collector,
        max_epochs=epochs,
        epoch_num_steps=epoch_num_steps,
        test_step_num_episodes=num_test,
        collection_step_num_env_steps=collect,
        compute_score_fn=score,
        test_in_training=False,
        verbose=False,
        show_progress=False,
    )
    if algo in ("npg", "trpo"):
        params = OnPolicyTrainerParams(batch_size=99999, update_step_num_repetitions=2, **common)
    else:
        params = OffPolicyTrainerParams(
            batch_size=128, update_step_num_gradient_steps_per_sample=0.125, **common
        )
    result = algorithm.run_training(params)
    seconds = time.perf_counter() - start
    training_envs.close()
    test_envs.close()
    return {
        "seed": seed,
        "seconds": seconds,
        "env_steps": int(result.train_step),
        "gradient_steps": int(result.update_step),
        "test_returns": test_returns,
        "final_return": test_returns[-1],
        "best_return": max(test_returns),
    }

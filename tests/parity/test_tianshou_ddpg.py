"""One DDPG update of jaxrl against Tianshou 2.0.1's own, on the same replay data and weights.

Both start from jaxrl's initial actor and critic (copied into Tianshou's online and target
modules), hold the same 8 steps of 4 environments (terminations and truncations, one step
with both), and learn from the same 16 sampled transitions (Tianshou's sampler is given the
(row, env) pairs jaxrl's ``ReplayBuffer.sample`` drew, mapped to its env-major buffer) with
3-step returns. Compared after one update: actor and critic parameters, both target networks
after the soft update, and the logged actor and critic losses, at float32 rounding.
"""

from __future__ import annotations

import gymnasium as gym
import jax
import numpy as np
import pytest

import jaxrl
from jaxrl.replay import ReplayBuffer, Transition
from tests.parity.conftest import Lazy

from .test_tianshou_on_policy import N, T, _mlp_pairs, _torch, rollout_data

tianshou_side = Lazy("tianshou_side")
torch = Lazy("torch")

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
# [-1, 1]: jaxrl's actor is tanh-bounded; Tianshou's is max_action * tanh (max_action 1 here,
# as in its MuJoCo examples).
ACTION_SPACE = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
HIDDEN = (16, 16)
BATCH, HORIZON = 16, 3
RTOL, ATOL = 2e-4, 2e-6


def _copy_network(params: dict, module: torch.nn.Module) -> None:
    linears = [m for m in module.preprocess.model.model if isinstance(m, torch.nn.Linear)]
    for linear, (kernel, bias) in zip(linears, _mlp_pairs(params["MLP_0"]), strict=True):
        linear.weight.copy_(_torch(kernel).T)
        linear.bias.copy_(_torch(bias))
    module.last.model[0].weight.copy_(_torch(params["Dense_0"]["kernel"]).T)
    module.last.model[0].bias.copy_(_torch(params["Dense_0"]["bias"]))


def _as_torch_layout(params: dict) -> dict[str, np.ndarray]:
    out = {}
    for i, (kernel, bias) in enumerate(_mlp_pairs(params["MLP_0"])):
        out[f"preprocess.model.model.{2 * i}.weight"] = np.asarray(kernel).T
        out[f"preprocess.model.model.{2 * i}.bias"] = np.asarray(bias)
    out["last.model.0.weight"] = np.asarray(params["Dense_0"]["kernel"]).T
    out["last.model.0.bias"] = np.asarray(params["Dense_0"]["bias"])
    return out


def _sampled_indices(key: jax.Array, size: int) -> np.ndarray:
    """The (row, env) pairs ``ReplayBuffer.sample(key, ...)`` draws (environment, then age;
    rows are ages in a buffer filled once from row 0), as Tianshou's index ``env * T + row``."""
    env_key, age_key = jax.random.split(key)
    envs = np.asarray(jax.random.randint(env_key, (BATCH,), 0, N))
    rows = np.asarray(jax.random.randint(age_key, (BATCH,), 0, size))
    return envs * T + rows


@pytest.fixture(scope="module")
def updated() -> dict:
    data = rollout_data(seed=1)
    agent = jaxrl.DDPG(
        hidden_sizes=HIDDEN,
        activation="relu",
        actor_lr=1e-3,
        critic_lr=1e-3,
        gamma=0.99,
        tau=0.005,
        n_step_return_horizon=HORIZON,
        batch_size=BATCH,
    )
    state = agent.init(jax.random.key(5), OBS_SPACE, ACTION_SPACE)
    segment = Transition(
        obs=data["obs"],
        action=np.tanh(data["act"]),
        reward=data["rew"],
        terminated=data["terminated"],
        truncated=data["truncated"],
        next_obs=data["obs_next"],
    )
    step = jax.tree_util.tree_map(lambda x: x[0], segment)
    buffer = ReplayBuffer.create(T, step).extend(segment)
    sample_key, update_key = jax.random.key(11), jax.random.key(12)
    batch = agent.sample_batch(buffer, sample_key)
    new_state, stats = jax.jit(agent.update)(state, batch, update_key)

    algorithm = tianshou_side.make_ddpg(
        OBS_SPACE,
        ACTION_SPACE,
        hidden_sizes=HIDDEN,
        actor_lr=1e-3,
        critic_lr=1e-3,
        gamma=0.99,
        tau=0.005,
        n_step=HORIZON,
    )
    with torch.no_grad():
        for params, online, target in (
            (state.actor.params["params"], algorithm.policy.actor, algorithm.actor_old),
            (state.critic.params["params"], algorithm.critic, algorithm.critic_old),
        ):
            _copy_network(params, online)
            _copy_network(params, getattr(target, "module", target))  # an eval-mode wrapper
    ts_buffer = tianshou_side.filled_buffer({**data, "act": np.tanh(data["act"])}, T * N)
    indices = _sampled_indices(sample_key, T)
    ts_buffer.sample_indices = lambda size: indices
    ts_stats = tianshou_side.off_policy_update(algorithm, ts_buffer, BATCH)
    return {"state": new_state, "stats": stats, "algorithm": algorithm, "ts_stats": ts_stats}


def _close(name: str, got: object, expected: object) -> None:
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(expected, np.float64), RTOL, ATOL, err_msg=name
    )


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("actor", "policy.actor"),
        ("critic", "critic"),
        ("actor_target", "actor_old"),
        ("critic_target", "critic_old"),
    ],
)
def test_networks_after_one_update_equal_tianshous(updated, ours, theirs):
    params = getattr(updated["state"], ours)
    params = params if isinstance(params, dict) else params.params
    module = updated["algorithm"].get_submodule(theirs)
    expected = getattr(module, "module", module).state_dict()
    got = _as_torch_layout(params["params"])
    assert set(got) == set(expected)
    for name, value in expected.items():
        _close(f"{ours} {name}", got[name], value.numpy())


def test_losses_equal_tianshous(updated):
    stats, ts_stats = updated["stats"], updated["ts_stats"]
    _close("critic_loss", stats["critic_loss"], ts_stats.critic_loss)
    _close("actor_loss", stats["actor_loss"], ts_stats.actor_loss)

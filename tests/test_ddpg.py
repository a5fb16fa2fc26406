"""Tests for jaxrl.algorithms.ddpg: targets, update semantics, noise, acting, API contracts, and
learning Pendulum-v1 (gymnax) with Tianshou's DDPG test settings.

Run the learning experiment on its own, with per-seed results printed::

    python tests/test_ddpg.py            # stops once every seed has succeeded
    python tests/test_ddpg.py --full     # all 100,000 steps, best return per seed
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxrl.algorithms.ddpg import DDPG, DDPGState, GaussianNoise, OUNoise
from jaxrl.core import nstep_targets
from jaxrl.replay import NStepBatch, ReplayBuffer, Transition
from jaxrl.rollout import Rollout

OBS_DIM, ACTION_DIM = 3, 2
OBS_SPACE = gymnasium.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
ACTION_SPACE = gymnasium.spaces.Box(
    np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32), dtype=np.float32
)


def tree_allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def make_history(rng: np.random.Generator, num_steps: int, num_envs: int) -> dict:
    """Random transitions ``[T, N]``; ``obs[..., :2] = [env, step]`` identifies each one."""
    steps = np.arange(num_steps, dtype=np.float32)[:, None].repeat(num_envs, 1)
    envs = np.arange(num_envs, dtype=np.float32)[None, :].repeat(num_steps, 0)
    obs = np.stack([envs, steps, rng.normal(size=(num_steps, num_envs))], -1).astype(np.float32)
    next_obs = obs + rng.normal(size=obs.shape).astype(np.float32) * np.array([0, 0, 1], np.float32)
    return dict(
        obs=obs,
        action=rng.uniform(-1.5, 1.5, size=(num_steps, num_envs, ACTION_DIM)).astype(np.float32),
        reward=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        terminated=rng.random((num_steps, num_envs)) < 0.15,
        truncated=rng.random((num_steps, num_envs)) < 0.15,
        next_obs=next_obs.astype(np.float32),
    )


def fill(buffer: ReplayBuffer, history: dict) -> ReplayBuffer:
    segment = Transition(*(jnp.asarray(history[f]) for f in Transition._fields))
    return jax.jit(ReplayBuffer.extend)(buffer, segment)


@pytest.fixture(scope="module")
def agent() -> DDPG:
    return DDPG(n_step_return_horizon=3, batch_size=64, buffer_size=40, gamma=0.9, tau=0.1)


@pytest.fixture(scope="module")
def setup(agent):
    """A state, a wrapped buffer (4 envs x 10 rows after 23 steps) and its history."""
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE, num_envs=4)
    history = make_history(np.random.default_rng(0), 23, 4)
    buffer = fill(agent.init_buffer(state, 4), history)
    return state, buffer, history


def target_q(state: DDPGState, next_obs: Any) -> jax.Array:
    """``Q'(s', mu'(s'))`` for a batch of observations ``[..., obs_dim]``."""
    next_obs = jnp.asarray(next_obs, jnp.float32)
    action = state.actor.apply_fn(state.actor_target, next_obs)
    return state.critic.apply_fn(state.critic_target, next_obs, action)


# ---------------------------------------------------------------------------------------------
# Critic targets and the update
# ---------------------------------------------------------------------------------------------


def test_nstep_targets_from_buffer_match_loop_reference(agent, setup):
    state, buffer, history = setup
    batch = agent.sample_batch(buffer, jax.random.key(1))
    targets = np.asarray(jax.jit(agent.critic_targets)(state, batch))
    newest = len(history["reward"]) - 1
    envs = np.asarray(batch.obs[:, 0]).astype(int)
    steps = np.asarray(batch.obs[:, 1]).astype(int)
    flags = history["terminated"] | history["truncated"]
    # The sample exercises terminations and truncations inside the horizon and the data end.
    windows = [flags[s : s + 3, e] for s, e in zip(steps, envs, strict=True)]
    assert sum(w[:2].any() for w in windows) > 10 and np.any(steps >= newest - 1)
    expected = []
    for env, step in zip(envs, steps, strict=True):
        target, discount = 0.0, 1.0
        for i in range(agent.n_step_return_horizon):
            t = step + i
            target += discount * float(history["reward"][t, env])
            discount *= float(agent.gamma)
            if history["terminated"][t, env]:
                break
            if history["truncated"][t, env] or t == newest or i == 2:
                target += discount * float(target_q(state, history["next_obs"][t, env][None])[0])
                break
        expected.append(target)
    np.testing.assert_allclose(targets, expected, rtol=1e-5, atol=1e-5)


def manual_update(agent: DDPG, state: DDPGState, batch: NStepBatch):
    """DDPG's update written out: full-window targets, optax Adam, Polyak averaging."""
    next_values = target_q(state, batch.next_obs)  # Q' at every step of the window
    y = nstep_targets(batch.reward, next_values, batch.terminated, batch.truncated, agent.gamma)
    critic_apply, actor_apply = state.critic.apply_fn, state.actor.apply_fn

    def critic_loss(p):
        return jnp.mean((critic_apply(p, batch.obs, batch.action) - y) ** 2)

    critic_adam = optax.adam(agent.critic_lr)
    loss_q, grads = jax.value_and_grad(critic_loss)(state.critic.params)
    updates, _ = critic_adam.update(grads, critic_adam.init(state.critic.params))
    critic_params = optax.apply_updates(state.critic.params, updates)

    def actor_loss(p):
        return -jnp.mean(critic_apply(critic_params, batch.obs, actor_apply(p, batch.obs)))

    actor_adam = optax.adam(agent.actor_lr)
    loss_mu, grads = jax.value_and_grad(actor_loss)(state.actor.params)
    updates, _ = actor_adam.update(grads, actor_adam.init(state.actor.params))
    actor_params = optax.apply_updates(state.actor.params, updates)
    return critic_params, actor_params, loss_q, loss_mu


def test_update_matches_manual_ddpg_step(agent, setup):
    state, buffer, _ = setup
    batch = agent.sample_batch(buffer, jax.random.key(2))
    new_state, stats = jax.jit(agent.update)(state, batch, jax.random.key(3))
    critic_params, actor_params, loss_q, loss_mu = jax.jit(manual_update, static_argnums=0)(
        agent, state, batch
    )
    assert set(stats) == {"actor_loss", "critic_loss", "rejected_steps"}
    assert int(stats["rejected_steps"]) == 0
    np.testing.assert_allclose(stats["critic_loss"], loss_q, rtol=1e-5)
    np.testing.assert_allclose(stats["actor_loss"], loss_mu, rtol=1e-5, atol=1e-6)
    tree_allclose(new_state.critic.params, critic_params, rtol=1e-4, atol=1e-6)
    tree_allclose(new_state.actor.params, actor_params, rtol=1e-4, atol=1e-6)
    assert int(new_state.num_updates) == 1 and int(new_state.actor.step) == 1


def test_soft_update_of_both_targets(agent, setup):
    state, buffer, _ = setup
    update = jax.jit(agent.update)
    # Two updates first, so that targets and online networks differ.
    for i in range(2):
        state, _ = update(state, agent.sample_batch(buffer, jax.random.key(10 + i)), None)
    assert not np.allclose(
        jax.tree_util.tree_leaves(state.actor_target)[0],
        jax.tree_util.tree_leaves(state.actor.params)[0],
    )
    new_state, _ = update(state, agent.sample_batch(buffer, jax.random.key(20)), None)
    tau = float(agent.tau)
    for online, old_target, new_target in (
        (new_state.actor.params, state.actor_target, new_state.actor_target),
        (new_state.critic.params, state.critic_target, new_state.critic_target),
    ):
        expected = jax.tree_util.tree_map(
            lambda o, t: tau * o + (1.0 - tau) * t, online, old_target
        )
        tree_allclose(new_target, expected, rtol=1e-6, atol=1e-7)


def test_init_copies_targets(agent, setup):
    state, _, _ = setup
    tree_allclose(state.actor_target, state.actor.params, rtol=0, atol=0)
    tree_allclose(state.critic_target, state.critic.params, rtol=0, atol=0)


def test_jitted_update_compiles_once(agent, setup):
    state, buffer, _ = setup
    update = jax.jit(agent.update)
    for i in range(5):
        batch = agent.sample_batch(buffer, jax.random.key(i))
        state, stats = update(state, batch, jax.random.key(100 + i))
    assert np.isfinite(stats["critic_loss"]) and np.isfinite(stats["actor_loss"])
    # A second `init` gives a state of the same type: same structure, no recompile.
    fresh = agent.init(jax.random.key(1), OBS_SPACE, ACTION_SPACE, num_envs=4)
    assert jax.tree_util.tree_structure(fresh) == jax.tree_util.tree_structure(state)
    update(fresh, agent.sample_batch(buffer, jax.random.key(9)), jax.random.key(10))
    assert update._cache_size() == 1


def test_learning_rate_schedules(setup):
    agent = DDPG(
        n_step_return_horizon=3,
        actor_lr=1e-3,
        critic_lr=2e-3,
        actor_lr_schedule=lambda n: 1.0 / (n + 1.0),
        critic_lr_schedule=lambda n: 0.5**n,
    )
    _, buffer, _ = setup
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE)
    update = jax.jit(agent.update)
    for n in range(3):
        state, _ = update(state, agent.sample_batch(buffer, jax.random.key(n)), None)
        # The learning rate of update n (stored in the optimizer state) is lr * schedule(n).
        lr_actor = state.actor.opt_state.hyperparams["learning_rate"]
        lr_critic = state.critic.opt_state.hyperparams["learning_rate"]
        np.testing.assert_allclose(lr_actor, 1e-3 / (n + 1), rtol=1e-6)
        np.testing.assert_allclose(lr_critic, 2e-3 * 0.5**n, rtol=1e-6)
    assert update._cache_size() == 1


def test_hyperparameter_sweep_under_vmap(setup):
    """Numeric hyperparameters are leaves: one vmapped init+update equals separate runs."""
    _, buffer, _ = setup
    batch = DDPG(n_step_return_horizon=3, batch_size=32).sample_batch(buffer, jax.random.key(5))
    taus, gammas = np.array([0.005, 0.5], np.float32), np.array([0.99, 0.5], np.float32)
    critic_lrs = np.array([1e-3, 1e-2], np.float32)
    sigmas = np.array([0.1, 0.5], np.float32)

    def make(tau, gamma, critic_lr, sigma):
        return DDPG(
            tau=tau,
            gamma=gamma,
            critic_lr=critic_lr,
            actor_lr=jnp.full_like(tau, 1e-4),
            exploration_noise=GaussianNoise(sigma=sigma, mu=jnp.zeros_like(sigma)),
            n_step_return_horizon=3,
        )

    def run(agent):
        state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE, num_envs=5)
        state, sample = agent.explore(state, batch.obs[:5], jax.random.key(1))
        state, stats = agent.update(state, batch, None)
        return state.critic_target, sample.action, stats["critic_loss"]

    swept = jax.jit(jax.vmap(run))(make(taus, gammas, critic_lrs, sigmas))
    run_single = jax.jit(run)
    for i in range(2):
        single = run_single(make(taus[i], gammas[i], critic_lrs[i], sigmas[i]))
        tree_allclose(jax.tree_util.tree_map(lambda x, i=i: x[i], swept), single, 1e-4, 1e-6)


def test_batch_with_wrong_horizon_is_refused(agent, setup):
    state, buffer, _ = setup
    batch = buffer.sample(jax.random.key(0), 8, 2)
    with pytest.raises(ValueError, match="n_step_return_horizon=3"):
        agent.update(state, batch, None)
    # NPG's and TRPO's input has the same field names: the message says which batch to pass.
    obs, action, steps = np.zeros((4, 2, *batch.obs.shape[1:])), batch.action[:2][None], (4, 2)
    rollout = Rollout(obs, np.repeat(action, 4, 0), np.zeros(steps), np.zeros(steps, bool),
                      np.zeros(steps, bool), obs)  # fmt: skip
    with pytest.raises(ValueError, match=r"DDPG.sample_batch draws, not a rollout \(\[T, N\]\)"):
        agent.update(state, rollout, None)


# ---------------------------------------------------------------------------------------------
# Exploration noise and acting
# ---------------------------------------------------------------------------------------------


def test_default_noise_is_gaussian_sigma_0_1():
    assert DDPG().exploration_noise == GaussianNoise(sigma=0.1)
    assert DDPG(exploration_noise=None).exploration_noise is None


def test_gaussian_noise_statistics():
    agent = DDPG(exploration_noise=GaussianNoise(sigma=0.3, mu=0.05))
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE)
    obs = jax.random.normal(jax.random.key(1), (50_000, OBS_DIM))
    new_state, noisy = jax.jit(agent.explore)(state, obs, jax.random.key(2))
    clean = state.actor.apply_fn(state.actor.params, obs)  # mu(s)
    noise = np.asarray(noisy.action - clean)
    np.testing.assert_allclose(noise.mean(0), 0.05, atol=4 * 0.3 / math.sqrt(50_000))
    np.testing.assert_allclose(noise.std(0), 0.3, rtol=0.02)
    assert abs(np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]) < 0.02
    # Gaussian noise is stateless.
    np.testing.assert_array_equal(new_state.noise_state, state.noise_state)


@pytest.mark.optimized  # 100,000 noise steps: 13.5 s unoptimized, 2 s optimized
def test_ou_noise_stationary_variance_and_autocorrelation():
    noise = OUNoise()  # Tianshou's defaults: sigma 0.3, theta 0.15, dt 0.01, mu 0
    a = 1.0 - noise.theta * noise.dt
    stationary_var = noise.sigma**2 * noise.dt / (1.0 - a**2)
    num_chains, burn_in, lag = 20_000, 6_000, 200

    @jax.jit
    def chain(key):
        def step(x, k):
            x, _ = noise.sample(k, x, x.shape)
            return x, None

        keys = jax.random.split(key, burn_in + lag)
        x_burned, _ = jax.lax.scan(step, jnp.zeros((num_chains,)), keys[:burn_in])
        x_lagged, _ = jax.lax.scan(step, x_burned, keys[burn_in:])
        return x_burned, x_lagged

    x0, xk = (np.asarray(x, np.float64) for x in chain(jax.random.key(0)))
    # After 6000 steps the chains are stationary up to a factor 1 - a^12000 ~ 1 - 2e-8.
    std_error = math.sqrt(stationary_var / num_chains)
    assert abs(x0.mean()) < 4 * std_error
    np.testing.assert_allclose(x0.var(), stationary_var, rtol=0.03)
    np.testing.assert_allclose(np.mean(x0 * xk) / x0.var(), a**lag, atol=0.03)


def test_ou_noise_through_explore_carries_state():
    noise = OUNoise(sigma=0.5, theta=2.0, dt=0.1, mu=0.2)
    agent = DDPG(exploration_noise=noise)
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE, num_envs=4)
    obs = jax.random.normal(jax.random.key(1), (4, OBS_DIM))
    clean = state.actor.apply_fn(state.actor.params, obs)  # mu(s)
    explore = jax.jit(agent.explore)
    x = np.zeros((4, ACTION_DIM), np.float32)
    for i in range(4):
        key = jax.random.key(10 + i)
        state, sample = explore(state, obs, key)
        noise_key = jax.random.split(key)[0]  # explore's: (acting, warm-up)
        eps = np.asarray(jax.random.normal(noise_key, (4, ACTION_DIM)))
        x = x + 2.0 * 0.1 * (0.2 - x) + 0.5 * math.sqrt(0.1) * eps
        np.testing.assert_allclose(state.noise_state, x, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sample.action - clean, x, rtol=1e-5, atol=1e-5)
    assert explore._cache_size() == 1
    # The deterministic policy adds no noise (traced flag too): mu(s), clipped and scaled.
    low, high = ACTION_SPACE.low, ACTION_SPACE.high
    expected = low + (high - low) * (np.clip(np.asarray(clean), -1, 1) + 1) / 2
    for flag in (True, jnp.bool_(True)):
        det = jax.jit(agent.policy)(state, obs, jax.random.key(0), flag)
        np.testing.assert_allclose(det, expected, rtol=1e-5, atol=1e-6)
    # explore returns the advanced state with the environment action.
    acted_state, acted = agent.explore(state, obs, jax.random.key(99))
    assert acted.env_action.shape == (4, ACTION_DIM)
    assert not np.allclose(acted_state.noise_state, state.noise_state)
    # A batch of another size needs reset_noise (or num_envs at init); deterministic never does.
    with pytest.raises(ValueError, match="reset_noise"):
        agent.explore(state, obs[:3], jax.random.key(0))
    agent.policy(state, obs[:3], jax.random.key(0), True)
    # A traced flag builds the noisy branch too; the error says to pass a Python bool.
    with pytest.raises(ValueError, match="Python bool"):
        jax.jit(agent.policy)(state, obs[:3], jax.random.key(0), jnp.bool_(True))
    reset = agent.reset_noise(state, (3,))
    assert reset.noise_state.shape == (3, ACTION_DIM) and not np.any(reset.noise_state)
    agent.explore(reset, obs[:3], jax.random.key(0))


def test_stored_action_is_unclipped_env_action_is_clipped_and_scaled():
    agent = DDPG(exploration_noise=GaussianNoise(sigma=3.0))
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE)
    obs = jax.random.normal(jax.random.key(1), (1000, OBS_DIM))
    _, sample = agent.explore(state, obs, jax.random.key(2))
    action = np.asarray(sample.action)
    assert np.any(np.abs(action) > 1.0)
    low, high = ACTION_SPACE.low, ACTION_SPACE.high
    expected = low + (high - low) * (np.clip(action, -1, 1) + 1) / 2
    np.testing.assert_allclose(sample.env_action, expected, rtol=1e-6, atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(
    low=st.floats(-10.0, 5.0),
    width=st.floats(0.01, 20.0),
    action_dim=st.integers(1, 3),
    sigma=st.floats(0.0, 10.0),
    use_ou=st.booleans(),
    action_scaling=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_env_actions_always_inside_action_space(
    low, width, action_dim, sigma, use_ou, action_scaling, seed
):
    space = gymnasium.spaces.Box(low, low + width, (action_dim,), np.float32)
    noise = OUNoise(sigma=sigma, theta=0.15, dt=1.0) if use_ou else GaussianNoise(sigma=sigma)
    agent = DDPG(exploration_noise=noise, action_scaling=action_scaling, hidden_sizes=(8,))
    warm = dataclasses.replace(agent, warmup_steps=1)
    state = agent.init(jax.random.key(seed), OBS_SPACE, space, num_envs=64)
    obs = 10.0 * jax.random.normal(jax.random.key(seed + 1), (64, OBS_DIM))
    bound_low = space.low if action_scaling else -1.0
    bound_high = space.high if action_scaling else 1.0
    for i in range(3):
        state, sample = agent.explore(state, obs, jax.random.key(seed + 2 + i))
        _, random = warm.explore(state, obs, jax.random.key(i), jnp.int32(0))  # the warm-up's
        for env_action in (sample.env_action, random.env_action):
            env_action = np.asarray(env_action)
            assert env_action.shape == (64, action_dim)
            assert np.all(env_action >= bound_low - 1e-5 * (1 + abs(low)))
            assert np.all(env_action <= bound_high + 1e-5 * (1 + abs(low + width)))


# ---------------------------------------------------------------------------------------------
# Construction and validation
# ---------------------------------------------------------------------------------------------


def test_estimation_step_alias():
    assert DDPG(estimation_step=3).n_step_return_horizon == 3
    with pytest.raises(TypeError, match="estimation_step"):
        DDPG(estimation_step=3, n_step_return_horizon=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"tau": 1.5}, ValueError, r"DDPG\.tau must be in \[0.0, 1.0\]"),
        ({"tau": -0.1}, ValueError, r"DDPG\.tau"),
        ({"tau": "0.1"}, TypeError, r"DDPG\.tau"),
        ({"gamma": 1.01}, ValueError, r"DDPG\.gamma"),
        ({"gamma": float("nan")}, ValueError, r"DDPG\.gamma"),
        ({"actor_lr": -1e-3}, ValueError, r"DDPG\.actor_lr"),
        ({"critic_lr": -1e-3}, ValueError, r"DDPG\.critic_lr"),
        ({"n_step_return_horizon": 0}, ValueError, r"DDPG\.n_step_return_horizon"),
        ({"estimation_step": 0}, ValueError, r"DDPG\.n_step_return_horizon"),
        ({"n_step_return_horizon": 2.0}, TypeError, r"DDPG\.n_step_return_horizon"),
        ({"batch_size": 0}, ValueError, r"DDPG\.batch_size"),
        ({"buffer_size": 0}, ValueError, r"DDPG\.buffer_size"),
        ({"warmup_steps": -1}, ValueError, r"DDPG\.warmup_steps"),
        ({"update_per_step": 0.0}, ValueError, r"DDPG\.update_per_step"),
        ({"update_per_step": "1"}, TypeError, r"DDPG\.update_per_step"),
        ({"update_per_step": None}, TypeError, r"DDPG\.update_per_step must be a number"),
        ({"update_per_step": True}, TypeError, r"DDPG\.update_per_step must be a number"),
        ({"update_per_step": math.inf}, ValueError, r"DDPG\.update_per_step must be in \(0"),
        (
            {"action_bound_method": "tanh"},
            ValueError,
            r"^DDPG\.action_bound_method must be one of 'clip', None, got 'tanh'$",
        ),
        ({"action_scaling": 1}, TypeError, r"^DDPG\.action_scaling must be True or False, got 1$"),
        ({"action_scaling": "yes"}, TypeError, r"DDPG\.action_scaling"),
        ({"hidden_sizes": [128, 0]}, ValueError, r"DDPG\.hidden_sizes"),
        ({"hidden_sizes": 64}, TypeError, r"DDPG\.hidden_sizes must be a list .*got 64"),
        ({"activation": "sigmoid"}, ValueError, r"DDPG\.activation"),
        ({"exploration_noise": "ou"}, ValueError, r"DDPG\.exploration_noise"),
        ({"exploration_noise": 0.1}, TypeError, r"DDPG\.exploration_noise"),
        ({"actor_lr_schedule": 0.5}, TypeError, r"DDPG\.actor_lr_schedule"),
    ],
)
def test_invalid_hyperparameters_name_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        DDPG(**kwargs)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: GaussianNoise(sigma=-0.1), r"GaussianNoise\.sigma"),
        (lambda: OUNoise(sigma=-1.0), r"OUNoise\.sigma"),
        (lambda: OUNoise(theta=-1.0), r"OUNoise\.theta"),
        (lambda: OUNoise(dt=0.0), r"OUNoise\.dt"),
    ],
)
def test_invalid_noise_names_the_field(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_discrete_action_space_is_refused():
    env, params = gymnax.make("CartPole-v1")
    # The space as the user wrote it, whatever the library (not jaxrl's SpaceSpec).
    with pytest.raises(TypeError, match=r"Box action_space, got Discrete\(2\): it has no"):
        DDPG().init(jax.random.key(0), env.observation_space(params), env.action_space(params))
    with pytest.raises(TypeError, match=r"Box action_space, got Discrete\(3\)"):
        DDPG().init(jax.random.key(0), OBS_SPACE, gymnasium.spaces.Discrete(3))
    with pytest.raises(TypeError, match=r"observation_space must be a Box, got Discrete\(5\)"):
        DDPG().init(jax.random.key(0), gymnasium.spaces.Discrete(5), ACTION_SPACE)


def test_an_integer_key_is_refused_naming_the_argument():
    with pytest.raises(TypeError, match=r"^DDPG\.init: key must be a PRNG key .*got int 0$"):
        DDPG().init(0, OBS_SPACE, ACTION_SPACE)


def test_init_buffer_capacity_and_errors():
    agent = DDPG(buffer_size=20_000)
    state = agent.init(jax.random.key(0), OBS_SPACE, ACTION_SPACE)
    buffer = agent.init_buffer(state, 8)
    assert (buffer.capacity, buffer.num_envs) == (2_500, 8)
    assert buffer.data.next_obs.shape == (2_500, 8, OBS_DIM)
    with pytest.raises(ValueError, match="buffer_size"):
        DDPG(buffer_size=4).init_buffer(state, 8)
    with pytest.raises(ValueError, match="finite bounds"):
        agent.init(jax.random.key(0), OBS_SPACE, gymnasium.spaces.Box(-np.inf, np.inf, (1,)))

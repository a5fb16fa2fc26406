"""NPG and TRPO: construction, acting, and the properties of one jitted update."""

from __future__ import annotations

import collections

import gymnasium
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl

T, N = 16, 4
PENDULUM, PENDULUM_PARAMS = gymnax.make("Pendulum-v1")
OBS_SPACE = PENDULUM.observation_space(PENDULUM_PARAMS)
ACT_SPACE = PENDULUM.action_space(PENDULUM_PARAMS)


def random_rollout(key: jax.Array, reward_scale: float = 1.0) -> jaxrl.Rollout:
    keys = jax.random.split(key, 5)
    return jaxrl.Rollout(
        obs=jax.random.normal(keys[0], (T, N, 3)),
        action=jax.random.normal(keys[1], (T, N, 1)),
        reward=reward_scale * jax.random.normal(keys[2], (T, N)),
        terminated=jax.random.bernoulli(keys[3], 0.05, (T, N)),
        truncated=jax.random.bernoulli(keys[4], 0.05, (T, N)),
        next_obs=jax.random.normal(keys[0], (T, N, 3)) + 0.1,
    )


def zero_rollout() -> jaxrl.Rollout:
    return jaxrl.Rollout(
        obs=jnp.zeros((T, N, 3)),
        action=jnp.zeros((T, N, 1)),
        reward=jnp.zeros((T, N)),
        terminated=jnp.zeros((T, N), bool),
        truncated=jnp.zeros((T, N), bool),
        next_obs=jnp.zeros((T, N, 3)),
    )


SMALL = dict(gamma=0.95, return_scaling=True, repeat=2, batch_size=24, hidden_sizes=(16, 16))
AGENTS = {
    "npg": jaxrl.NPG(**SMALL),
    "trpo": jaxrl.TRPO(max_kl=0.005, **SMALL),
}


# The agent is an argument (a pytree): new values of its numeric fields reuse the compilation.
@jax.jit
def UPDATE(agent, state, rollout, key):
    return agent.update(state, rollout, key)


@pytest.fixture(scope="module", params=sorted(AGENTS))
def compiled(request):
    """(agent, initial state, jitted update), one compile per algorithm for the module."""
    agent = AGENTS[request.param]
    state = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)
    return agent, state, jax.jit(agent.update)


def params_equal(a, b) -> bool:
    return all(jax.tree_util.tree_leaves(jax.tree_util.tree_map(jnp.array_equal, a, b)))


def all_finite(tree) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(tree))


def test_update_compiles_once_and_is_reused(compiled):
    agent, state, update = compiled
    for i in range(3):
        state, stats = update(state, random_rollout(jax.random.key(i)), jax.random.key(10 + i))
    assert int(state.num_updates) == 3
    assert all_finite(stats)
    # A second `init` (another seed) must give a state of the same type: same tree structure,
    # so states pair up in tree maps and the compiled update is reused.
    fresh = agent.init(jax.random.key(1), OBS_SPACE, ACT_SPACE)
    assert jax.tree_util.tree_structure(fresh) == jax.tree_util.tree_structure(state)
    jax.tree_util.tree_map(jnp.subtract, fresh.actor.params, state.actor.params)
    update(fresh, random_rollout(jax.random.key(5)), jax.random.key(6))
    assert update._cache_size() == 1


def test_stats_have_tianshou_fields(compiled):
    agent, state, update = compiled
    _, stats = update(state, random_rollout(jax.random.key(1)), jax.random.key(2))
    names = {"actor_loss", "critic_loss", "kl", "cg_residual", "cg_iterations", "rejected_steps"}
    if isinstance(agent, jaxrl.TRPO):
        names |= {"step_size", "backtracks", "line_search_failures"}
    assert names <= set(stats)
    for name in ("actor_loss", "critic_loss", "kl"):
        summary = stats[name]
        assert float(summary.min) <= float(summary.mean) <= float(summary.max)
        assert float(summary.std) >= 0


@pytest.mark.parametrize(
    "rollout_fn", [zero_rollout, lambda: random_rollout(jax.random.key(3), 0.0)]
)
def test_update_with_zero_rewards_or_advantages_stays_finite(compiled, rollout_fn):
    _, state, update = compiled
    new_state, stats = update(state, rollout_fn(), jax.random.key(4))
    assert all_finite(new_state.actor.params)
    assert all_finite(new_state.critic.params)
    assert all_finite(stats)


def test_all_zero_advantages_leave_actor_unchanged(compiled):
    """Zero observations and rewards with gamma = 0 make every advantage equal (so zero after
    normalization): the natural gradient is zero and the actor must not move."""
    agent, state, _ = compiled
    agent = agent.replace(gamma=0.0)
    new_state, stats = UPDATE(agent, state, zero_rollout(), jax.random.key(5))
    assert params_equal(new_state.actor.params, state.actor.params)
    assert float(stats["kl"].max) == 0.0


def test_trpo_never_accepts_kl_above_bound():
    agent = AGENTS["trpo"].replace(max_kl=0.001)
    state = agent.init(jax.random.key(1), OBS_SPACE, ACT_SPACE)
    for i in range(5):
        rollout = random_rollout(jax.random.key(20 + i), 5.0)
        state, stats = UPDATE(agent, state, rollout, jax.random.key(i))
        assert float(stats["kl"].max) < 0.001
        steps = stats["step_size"]
        assert float(steps.min) >= 0.0


def test_trpo_restores_parameters_when_line_search_fails():
    # A KL bound below float32 resolution rejects every candidate step.
    agent = AGENTS["trpo"].replace(max_kl=1e-30)
    state = agent.init(jax.random.key(2), OBS_SPACE, ACT_SPACE)
    new_state, stats = UPDATE(agent, state, random_rollout(jax.random.key(6)), jax.random.key(7))
    num_steps = agent.repeat * (T * N // agent.batch_size)
    assert int(stats["line_search_failures"]) == num_steps
    assert float(stats["step_size"].max) == 0.0
    assert params_equal(new_state.actor.params, state.actor.params)
    # The critic still learns.
    assert not params_equal(new_state.critic.params, state.critic.params)


def test_act_returns_actions_inside_the_box(compiled):
    agent, state, _ = compiled
    obs = jax.random.normal(jax.random.key(8), (64, 3)) * 10
    act = jax.jit(agent.policy)
    for deterministic in (False, True):
        action = act(state, obs, jax.random.key(9), deterministic)
        assert action.shape == (64, 1)
        assert bool(jnp.all((action >= -2.0) & (action <= 2.0)))
    _, sample = agent.explore(state, obs, jax.random.key(9))
    np.testing.assert_allclose(
        sample.env_action, jnp.clip(sample.action, -1, 1) * 2.0, rtol=1e-6, atol=1e-6
    )


def test_deterministic_action_is_the_mean(compiled):
    agent, state, _ = compiled
    obs = jnp.ones((2, 3))
    dist = state.actor.apply_fn(state.actor.params, obs)
    assert bool(jnp.all(jnp.abs(dist.mean) < 1))  # inside the clip: the scaled mean
    env_action = agent.policy(state, obs, jax.random.key(0), True)
    np.testing.assert_allclose(env_action, dist.mean * 2.0, rtol=1e-6)


def test_discrete_actions_with_gymnasium_spaces():
    agent = jaxrl.TRPO(hidden_sizes=(8,))
    obs_space = gymnasium.spaces.Box(-1.0, 1.0, (4,))
    state = agent.init(jax.random.key(0), obs_space, gymnasium.spaces.Discrete(3))
    action = agent.policy(state, jnp.zeros((5, 4)), jax.random.key(1), False)
    assert action.shape == (5,) and action.dtype.kind == "i"
    rollout = jaxrl.Rollout(
        obs=jnp.zeros((4, 2, 4)),
        action=jnp.zeros((4, 2), jnp.int32),
        reward=jnp.ones((4, 2)),
        terminated=jnp.zeros((4, 2), bool),
        truncated=jnp.zeros((4, 2), bool),
        next_obs=jnp.zeros((4, 2, 4)),
    )
    new_state, stats = UPDATE(agent, state, rollout, jax.random.key(2))
    assert all_finite(new_state.actor.params) and all_finite(stats)


def test_tianshou_1x_aliases():
    agent = jaxrl.NPG(actor_step_size=0.3, discount_factor=0.9, reward_normalization=True)
    assert (agent.trust_region_size, agent.gamma, agent.return_scaling) == (0.3, 0.9, True)
    schedule = lambda n: 1.0 - n / 10  # noqa: E731
    assert jaxrl.TRPO(lr_scheduler=schedule).lr_schedule is schedule
    with pytest.raises(TypeError, match="discount_factor"):
        jaxrl.NPG(gamma=0.9, discount_factor=0.9)


@pytest.mark.parametrize(
    ("cls", "field", "value", "error"),
    [
        (jaxrl.NPG, "gamma", 1.5, ValueError),
        (jaxrl.NPG, "gae_lambda", -0.1, ValueError),
        (jaxrl.NPG, "trust_region_size", 0.0, ValueError),
        (jaxrl.NPG, "lr", -1e-3, ValueError),
        (jaxrl.NPG, "repeat", 0, ValueError),
        (jaxrl.NPG, "batch_size", 2.5, TypeError),
        (jaxrl.NPG, "optim_critic_iters", -1, ValueError),
        (jaxrl.NPG, "action_bound_method", "sigmoid", ValueError),
        (jaxrl.NPG, "activation", "swish2", ValueError),
        (jaxrl.TRPO, "action_scaling", "yes", TypeError),
        # A static bool's string or int is refused, not read as truthy ("false" was True).
        (jaxrl.TRPO, "return_scaling", "false", TypeError),
        (jaxrl.NPG, "advantage_normalization", 0, TypeError),
        (jaxrl.TRPO, "deterministic_eval", "yes", TypeError),
        (jaxrl.NPG, "normalize_step", 1, TypeError),
        (jaxrl.TRPO, "lr_schedule", 0.5, TypeError),
        (jaxrl.TRPO, "init_gain", "1", TypeError),
        (jaxrl.NPG, "log_std_init", None, TypeError),
        (jaxrl.TRPO, "actor_network", 3, TypeError),
        (jaxrl.TRPO, "max_kl", 0.0, ValueError),
        (jaxrl.TRPO, "backtrack_coeff", 1.5, ValueError),
        (jaxrl.TRPO, "max_backtracks", 0, ValueError),
        (jaxrl.TRPO, "gamma", float("nan"), ValueError),
        (jaxrl.TRPO, "hidden_sizes", 64, TypeError),
    ],
)
def test_invalid_hyperparameters_name_the_field(cls, field, value, error):
    with pytest.raises(error, match=field):
        cls(**{field: value})


def test_hyperparameters_are_vmappable_leaves():
    base = AGENTS["trpo"]
    agents = jax.tree_util.tree_map(
        lambda *x: jnp.stack(x), base.replace(max_kl=0.001), base.replace(max_kl=0.05)
    )
    state = base.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)
    rollout = random_rollout(jax.random.key(11), 5.0)

    def run(agent):
        return agent.update(state, rollout, jax.random.key(0))[1]["kl"].max

    kls = jax.jit(jax.vmap(run))(agents)
    assert float(kls[0]) < 0.001 <= float(kls[1]) < 0.05


def test_bad_rollouts_are_refused_with_the_field_name(compiled):
    agent, state, _ = compiled
    rollout = random_rollout(jax.random.key(12))
    # What is wrong, the layout every field has, and where the conventions are written.
    with pytest.raises(ValueError, match=r"rollout\.next_obs .*time-major \[T, N, \*obs_shape\]"):
        agent.update(
            state, rollout._replace(next_obs=rollout.next_obs[:, :, :2]), jax.random.key(0)
        )
    with pytest.raises(ValueError, match=r"rollout\.reward .*\[T, N\] \(time-major.*conventions"):
        agent.update(state, rollout._replace(reward=rollout.reward[0]), jax.random.key(0))
    with pytest.raises(TypeError, match=r"rollout\.action"):
        agent.update(
            state, rollout._replace(action=rollout.action.astype(jnp.int32)), jax.random.key(0)
        )
    with pytest.raises(TypeError, match=r"got a dict: jaxrl.Rollout\(\*\*rollout\)"):
        agent.update(state, rollout._asdict(), jax.random.key(0))
    partial = collections.namedtuple("Partial", ["obs", "action"])(rollout.obs, rollout.action)
    missing = r"missing field\(s\) \['reward', 'terminated', 'truncated', 'next_obs'\]"
    for incomplete in (partial, partial._asdict()):
        with pytest.raises(TypeError, match=missing):
            agent.update(state, incomplete, jax.random.key(0))


def test_a_rollout_error_names_the_field_that_differs_from_the_others(compiled):
    agent, state, _ = compiled
    rollout = random_rollout(jax.random.key(12))
    # rewards laid out [N, T] while every other field is [T, N]: the rewards are named.
    with pytest.raises(
        ValueError, match=r"^rollout\.reward must have shape \[16, 4\], got \[4, 16\]"
    ):
        agent.update(state, rollout._replace(reward=rollout.reward.T), jax.random.key(0))
    # Two fields against four: the two are wrong, the message names the four it followed.
    transposed = rollout._replace(
        obs=rollout.obs.swapaxes(0, 1), next_obs=rollout.obs.swapaxes(0, 1)
    )
    with pytest.raises(
        ValueError,
        match=r"^rollout\.obs .*as rollout\.reward, rollout\.action, rollout\.terminated, "
        r"rollout\.truncated;",
    ):
        agent.update(state, transposed, jax.random.key(0))
    # Only fields whose trailing shape is right take part: with the environment axis dropped
    # from every field but the rewards, the observations are named against the rewards.
    dropped = rollout._replace(
        **{name: getattr(rollout, name)[:, 0] for name in jaxrl.Rollout._fields if name != "reward"}
    )
    with pytest.raises(
        ValueError,
        match=r"^rollout\.obs must have shape \[16, 4, 3\], got \[16, 3\].* as rollout\.reward;",
    ):
        agent.update(state, dropped, jax.random.key(0))


@pytest.mark.parametrize("algo", sorted(AGENTS))
def test_an_integer_key_is_refused_naming_the_argument(algo):
    agent = AGENTS[algo]
    name = type(agent).__name__
    with pytest.raises(
        TypeError,
        match=rf"^{name}\.init: key must be a PRNG key \(jax\.random\.key\(seed\)\), got int 0$",
    ):
        agent.init(0, OBS_SPACE, ACT_SPACE)
    state = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)
    with pytest.raises(TypeError, match=rf"^{name}\.update: key .* got int 7$"):
        agent.update(state, random_rollout(jax.random.key(1)), 7)


def test_unsupported_spaces_are_refused():
    with pytest.raises(TypeError, match=r"MultiDiscrete.*supported"):
        jaxrl.NPG().init(jax.random.key(0), OBS_SPACE, gymnasium.spaces.MultiDiscrete([2, 3]))
    with pytest.raises(TypeError, match="observation_space"):
        jaxrl.NPG().init(jax.random.key(0), gymnasium.spaces.Discrete(3), ACT_SPACE)

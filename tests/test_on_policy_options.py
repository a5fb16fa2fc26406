"""NPG/TRPO options that users set and rely on take effect as documented: the network
initialization options (``init_gain``, ``actor_output_scale``, ``log_std_init``), the critic's
``lr_schedule``, NPG's ``normalize_step`` (a KL-bounded step), ``fvp_batch_size``
(Fisher-vector products on a subsample) and the critic's steps (``optim_critic_iters``,
``critic_batch_size``)."""

from __future__ import annotations

import functools
import math
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl

T, N = 8, 4
OBS_SPACE = gymnasium.spaces.Box(-8.0, 8.0, (3,), np.float32)
ACT_SPACE = gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
HIDDEN = (8, 8)


def rollout(key: jax.Array, same_obs: bool = False) -> jaxrl.Rollout:
    """A random ``[T, N]`` rollout; with ``same_obs`` every step observes the same state."""
    keys = jax.random.split(key, 4)
    obs = jax.random.normal(keys[0], (T, N, 3))
    if same_obs:
        obs = jnp.broadcast_to(obs[0, 0], obs.shape)
    return jaxrl.Rollout(
        obs=obs,
        action=jax.random.normal(keys[1], (T, N, 1)),
        reward=jax.random.normal(keys[2], (T, N)),
        terminated=jax.random.bernoulli(keys[3], 0.1, (T, N)),
        truncated=jnp.zeros((T, N), bool),
        next_obs=obs + 0.1,
    )


# The agent is an argument (its numeric fields are leaves): one compile per static setting.
@jax.jit
def _update(agent: Any, state: Any, batch: jaxrl.Rollout, key: jax.Array) -> tuple[Any, Any]:
    return agent.update(state, batch, key)


def leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def change(before: Any, after: Any) -> np.ndarray:
    """``after - before`` of two pytrees of parameters, flattened into one vector."""
    pairs = zip(leaves(before), leaves(after), strict=True)
    return np.concatenate([(b - a).ravel() for a, b in pairs])


# ---------------------------------------------------------------------------------------------
# Network initialization
# ---------------------------------------------------------------------------------------------


def _dense_kernels(params: Any) -> dict[str, np.ndarray]:
    """``{"Dense_0": kernel, ...}`` of an MLP-headed network's params, in layer order."""
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    kernels = {}
    for path, leaf in flat:
        names = [getattr(k, "key", str(k)) for k in path]
        if names[-1] == "kernel":
            kernels["/".join(names[1:-1])] = np.asarray(leaf)
    return kernels


def _init(**options: Any) -> Any:
    return jaxrl.TRPO(hidden_sizes=HIDDEN, **options).init(jax.random.key(3), OBS_SPACE, ACT_SPACE)


def test_init_options_scale_exactly_the_layers_they_name():
    """``init_gain`` multiplies every orthogonal kernel (actor and critic, hidden and output
    layers), ``actor_output_scale`` multiplies the actor's last layer only, and
    ``log_std_init`` is the initial log-std of every action dimension (the Gaussian the actor
    returns included). The same key gives the same orthogonal matrix, so each kernel is the
    default one times its scale (up to one float32 rounding); biases stay zero."""
    gain, scale, log_std = math.sqrt(2.0), 0.01, -0.5
    plain = _init()
    tuned = _init(init_gain=gain, actor_output_scale=scale, log_std_init=log_std)

    actor_plain = _dense_kernels(plain.actor.params)
    actor_tuned = _dense_kernels(tuned.actor.params)
    hidden, output = [f"MLP_0/Dense_{i}" for i in range(len(HIDDEN))], "Dense_0"
    assert sorted(actor_plain) == sorted([*hidden, output])
    for name in hidden:
        np.testing.assert_allclose(actor_tuned[name], gain * actor_plain[name], rtol=1e-6)
    np.testing.assert_allclose(actor_tuned[output], gain * scale * actor_plain[output], rtol=1e-6)
    # The default output layer is orthogonal with gain 1 (columns of unit norm).
    np.testing.assert_allclose(np.linalg.norm(actor_plain[output], axis=0), 1.0, rtol=1e-5)

    critic_plain = _dense_kernels(plain.critic.params)
    critic_tuned = _dense_kernels(tuned.critic.params)
    assert len(critic_plain) == len(HIDDEN) + 1
    for name in critic_plain:  # the critic takes the gain, not the actor's output scale
        np.testing.assert_allclose(critic_tuned[name], gain * critic_plain[name], rtol=1e-6)

    np.testing.assert_array_equal(np.asarray(plain.actor.params["params"]["log_std"]), [0.0])
    np.testing.assert_array_equal(np.asarray(tuned.actor.params["params"]["log_std"]), [log_std])
    dist = tuned.actor.apply_fn(tuned.actor.params, jnp.ones((5, 3)))
    np.testing.assert_array_equal(np.asarray(dist.log_std), np.full((5, 1), log_std, np.float32))
    for tree in (tuned.actor.params, tuned.critic.params):
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            if getattr(path[-1], "key", None) == "bias":
                np.testing.assert_array_equal(np.asarray(leaf), 0.0)


def test_the_mujoco_preset_initialization_reaches_the_networks():
    """What ``jaxrl train trpo --env Hopper-v5`` builds: the preset's values (gain sqrt(2),
    last actor layer x0.01, log-std -0.5) are in the initial parameters."""
    from jaxrl.config import RunConfig

    agent = RunConfig.from_preset("trpo", "Hopper-v5").make_agent()
    hyper = {k: getattr(agent, k) for k in ("init_gain", "actor_output_scale", "log_std_init")}
    assert hyper == pytest.approx(
        {"init_gain": math.sqrt(2), "actor_output_scale": 0.01, "log_std_init": -0.5}
    )
    obs = gymnasium.spaces.Box(-np.inf, np.inf, (11,), np.float32)
    act = gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
    state = agent.init(jax.random.key(0), obs, act)
    np.testing.assert_array_equal(np.asarray(state.actor.params["params"]["log_std"]), -0.5)
    output = _dense_kernels(state.actor.params)["Dense_0"]  # [64, 3], orthogonal columns
    np.testing.assert_allclose(np.linalg.norm(output, axis=0), math.sqrt(2) * 0.01, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# The critic's learning-rate schedule
# ---------------------------------------------------------------------------------------------


def _critic_change(agent: jaxrl.TRPO, updates: int) -> tuple[list[float], list[np.ndarray]]:
    """The critic's Adam learning rate in force during each of ``updates`` updates (read
    from its optimizer state) and its parameter change in each."""
    state = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE)
    rates, changes = [], []
    for i in range(updates):
        new, _ = _update(agent, state, rollout(jax.random.key(10 + i)), jax.random.key(i))
        rates.append(float(new.critic.opt_state.hyperparams["learning_rate"]))
        changes.append(change(state.critic.params, new.critic.params))
        state = new
    return rates, changes


def test_lr_schedule_sets_the_critics_learning_rate_of_each_update():
    """``lr_schedule(n)`` multiplies ``lr`` in update ``n + 1`` (Tianshou's LambdaLR stepped
    once per update): the rate in the critic's optimizer state follows a linear decay, and
    the critic's first Adam step (``-lr * g / (|g| + eps)``, linear in the rate) with a
    constant factor 0.5 is half the unscheduled one."""
    common = dict(hidden_sizes=HIDDEN, lr=1e-2, optim_critic_iters=1, max_kl=0.01)
    rates, unscheduled = _critic_change(jaxrl.TRPO(**common), 3)
    assert rates == pytest.approx([1e-2] * 3, rel=1e-6)

    linear, _ = _critic_change(jaxrl.TRPO(lr_schedule=lambda n: 1.0 - n / 4, **common), 3)
    assert linear == pytest.approx([1e-2, 0.75e-2, 0.5e-2], rel=1e-6)

    _, halved = _critic_change(jaxrl.TRPO(lr_schedule=lambda n: 0.5, **common), 1)
    assert np.abs(unscheduled[0]).max() > 1e-3  # the critic moved
    np.testing.assert_allclose(halved[0], 0.5 * unscheduled[0], rtol=1e-3, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# NPG's normalized step and subsampled Fisher-vector products
# ---------------------------------------------------------------------------------------------


@functools.cache
def _npg_step(trust_region_size: float, normalize_step: bool) -> tuple[float, np.ndarray]:
    """One full-batch NPG step (default damping 0.1; conjugate gradients converge on this
    small network): the mean KL between the policies before and after it, and the change
    of the actor's parameters (flattened)."""
    agent = jaxrl.NPG(
        hidden_sizes=HIDDEN,
        trust_region_size=trust_region_size,
        normalize_step=normalize_step,
        optim_critic_iters=0,
    )
    state = agent.init(jax.random.key(1), OBS_SPACE, ACT_SPACE)
    new, stats = _update(agent, state, rollout(jax.random.key(2)), jax.random.key(3))
    assert float(stats["cg_residual"].mean) < 1e-8  # the direction is the CG solution
    return float(stats["kl"].mean), change(state.actor.params, new.actor.params)


@pytest.mark.parametrize("bound", [1e-4, 1e-3])
def test_normalize_step_makes_trust_region_size_a_kl_bound(bound: float):
    """With ``normalize_step`` the step is ``sqrt(2 size / d.(F + damping)d) d``: along the
    direction of Tianshou's plain step ``size * d``, with the KL's damped quadratic model at
    ``trust_region_size``. So its KL stays below the bound (the damping's share of the model,
    about 20% here, is not KL: measured 0.79 and 0.81 of it) and grows linearly with it,
    where the plain step's KL grows quadratically (measured: x16.1 for 4x the size)."""
    kl, step = _npg_step(bound, True)
    plain_kl, plain = _npg_step(0.025, False)
    cosine = step @ plain / (np.linalg.norm(step) * np.linalg.norm(plain))
    assert cosine == pytest.approx(1.0, abs=1e-4)
    assert 0.6 * bound <= kl <= 1.01 * bound, kl / bound
    assert _npg_step(4 * bound, True)[0] / kl == pytest.approx(4.0, rel=0.05)
    assert _npg_step(0.1, False)[0] / plain_kl == pytest.approx(16.0, rel=0.1)


def _npg_params(fvp_batch_size: int | None, same_obs: bool) -> list[np.ndarray]:
    agent = jaxrl.NPG(
        hidden_sizes=HIDDEN, fvp_batch_size=fvp_batch_size, optim_critic_iters=0, cg_iters=10
    )
    state = agent.init(jax.random.key(1), OBS_SPACE, ACT_SPACE)
    new, _ = _update(agent, state, rollout(jax.random.key(2), same_obs), jax.random.key(3))
    return leaves(new.actor.params)


def test_fvp_batch_size_computes_the_fisher_on_a_subsample():
    """``fvp_batch_size`` < the minibatch estimates the Fisher on that many samples (the
    gradient still on all): on a batch whose samples all observe the same state, every
    subsample's Fisher is the whole batch's, so the step is the full one (up to float
    rounding); on varied states it is a different step; a size of at least the minibatch is
    the full step exactly."""
    full = _npg_params(None, same_obs=False)
    for a, b in zip(full, _npg_params(T * N, same_obs=False), strict=True):
        np.testing.assert_array_equal(a, b)
    sub = _npg_params(4, same_obs=False)
    differences = [
        np.abs(a - b).max() / max(np.abs(a).max(), 1e-6) for a, b in zip(full, sub, strict=True)
    ]
    assert max(differences) > 1e-2, differences

    same_full = _npg_params(None, same_obs=True)
    same_sub = _npg_params(4, same_obs=True)
    for a, b in zip(same_full, same_sub, strict=True):
        np.testing.assert_allclose(b, a, rtol=2e-3, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# The critic's steps
# ---------------------------------------------------------------------------------------------


def _critic_loop(critic, batch, weights, passes, key, batch_size):
    """The critic's Adam steps as a plain loop: each pass shuffles the samples (with
    ``batch_size``) and cuts them as Tianshou's ``split`` does, the last minibatch taking the
    remainder; one step per minibatch on the weighted mean squared error."""
    total, losses, apply = weights.shape[0], [], critic.apply_fn
    keys = [None] * passes if batch_size is None else list(jax.random.split(key, passes))
    for pass_key in keys:
        order = np.arange(total)
        if pass_key is not None:
            order = np.asarray(jax.random.permutation(pass_key, total))
        size = total if batch_size is None else min(batch_size, total)
        count = total // size
        for i in range(count):
            rows = order[i * size : total if i == count - 1 else (i + 1) * size]

            def loss_fn(params, rows=rows):
                error = (batch.target[rows] - apply(params, batch.obs[rows])) ** 2
                return jnp.sum(error * weights[rows]) / jnp.sum(weights[rows])

            loss, grads = jax.value_and_grad(loss_fn)(critic.params)
            critic = critic.apply_gradients(grads=grads)
            losses.append(loss)
    return critic, losses[-1]


@pytest.mark.parametrize("jitted", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize(("passes", "batch_size"), [(3, None), (2, 6), (2, 40)])
def test_the_critics_steps_are_a_plain_loops(jitted, passes, batch_size):
    """``critic_steps``: ``passes`` Adam steps on the whole minibatch (Tianshou's
    ``optim_critic_iters``), or with ``batch_size`` passes over shuffled minibatches of it,
    the last taking the remainder (``critic_batch_size``); padded samples (weight 0) take no
    part. Its loss is the last step's."""
    from jaxrl.algorithms import on_policy

    agent = jaxrl.NPG(hidden_sizes=HIDDEN)
    critic = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE).critic
    keys = jax.random.split(jax.random.key(1), 3)
    size = 20
    batch = on_policy.OnPolicyBatch(
        obs=jax.random.normal(keys[0], (size, 3)),
        action=jnp.zeros((size, 1)),
        advantage=jnp.zeros((size,)),
        target=jax.random.normal(keys[1], (size,)),
        log_prob_old=jnp.zeros((size,)),
    )
    weights = jnp.ones((size,)).at[-3:].set(0.0)  # a padded minibatch
    steps = functools.partial(on_policy.critic_steps, passes=passes, batch_size=batch_size)
    steps = jax.jit(steps) if jitted else steps
    got, loss, rejected = steps(critic, batch, weights, key=keys[2])
    want, want_loss = _critic_loop(critic, batch, weights, passes, keys[2], batch_size)
    for a, b in zip(leaves(got.params), leaves(want.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    assert int(rejected) == 0 and int(got.step) == int(want.step)


def test_no_critic_steps_leave_the_critic_and_measure_its_loss():
    from jaxrl.algorithms import on_policy

    agent = jaxrl.NPG(hidden_sizes=HIDDEN)
    critic = agent.init(jax.random.key(0), OBS_SPACE, ACT_SPACE).critic
    obs, target = jax.random.normal(jax.random.key(1), (10, 3)), jnp.arange(10.0)
    batch = on_policy.OnPolicyBatch(obs, jnp.zeros((10, 1)), target, target, target)
    for batch_size in (None, 4):
        got, loss, rejected = on_policy.critic_steps(
            critic, batch, jnp.ones((10,)), 0, jax.random.key(2), batch_size
        )
        assert got is critic and int(rejected) == 0
        want = jnp.mean((target - critic.apply_fn(critic.params, obs)) ** 2)
        np.testing.assert_allclose(loss, want, rtol=1e-6)

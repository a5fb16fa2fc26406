"""One ``DDPG.update`` against an independent NumPy float64 reference.

The reference re-derives Tianshou's DDPG ``learn`` (``jaxrl/algorithms/ddpg.py``'s docstring,
``/work/shared/reference``) from scratch on a tiny problem: observation dim 2, action dim 2,
one hidden layer of 4 tanh units in both networks, a batch of B=5 samples with windows of
n=3 steps whose episode ends cover every case of the n-step target. Nothing from ``jaxrl``
computes an expected value; jaxrl's state only supplies the initial parameters (read out of
the flax parameter dicts). The reference has:

* NumPy forward passes of the actor ``mu(s) = tanh(tanh(s W1 + b1) W2 + b2)`` and the critic
  ``Q(s, a) = tanh([s, a] W1 + b1) W2 + b2`` with hand-written backpropagation;
* the n-step target, written as a loop over each window: ``y = sum_{i <= l} gamma^i r_i +
  [not terminated_l] gamma^(l+1) Q'(s'_l, mu'(s'_l))`` with ``l`` the first step that ends
  the episode (terminated or truncated), else ``n - 1``;
* the critic's Adam step on ``mean (Q(s, a) - y)^2``, then the actor's Adam step on
  ``-mean Q(s, mu(s))`` through the UPDATED critic (Adam with b1 0.9, b2 0.999, eps 1e-8
  and bias correction, from a non-zero optimizer state so that the step depends on the
  gradient's magnitude, not only its sign);
* the Polyak update of both targets, ``theta' <- tau theta + (1 - tau) theta'``, from targets
  that differ from the online networks.

jaxrl runs on a float64 copy of the state inside ``jax.enable_x64(True)`` (the rewards are
float64 too; observations and actions are float32 values, which its update casts to float32
without rounding), so the comparison does not depend on the backend's matmul precision and
its tolerance (1e-9 relative to each parameter's move) is far below any real error: a move
is ~1e-3 here.
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.replay import NStepBatch

OBS_DIM, ACTION_DIM, HIDDEN, BATCH, HORIZON = 2, 2, 4, 5, 3
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8
ADAM_COUNT = 3  # Adam steps taken before this one (bias correction 1 - b^(count + 1))
OBS_SPACE = gymnasium.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
ACTION_SPACE = gymnasium.spaces.Box(-2.0, 2.0, (ACTION_DIM,), np.float32)
AGENT = jaxrl.DDPG(
    hidden_sizes=(HIDDEN,),
    activation="tanh",
    n_step_return_horizon=HORIZON,
    gamma=0.9,
    tau=0.3,
    actor_lr=2**-9,  # learning rates exactly representable in float32 (jaxrl casts them)
    critic_lr=2**-8,
)
# Episode ends in the windows [n, B]: sample 0 none (bootstrap after 3 steps); 1 terminated
# at step 1; 2 truncated at step 0 (bootstrap after 1 step); 3 terminated and truncated at
# step 2; 4 truncated at step 1, then terminated at step 2 (the window stops at the first).
TERMINATED = np.array([[0, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 1, 1]], bool)
TRUNCATED = np.array([[0, 0, 1, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]], bool)
BODY = (("W1", ("MLP_0", "Dense_0", "kernel")), ("b1", ("MLP_0", "Dense_0", "bias")))
PATHS = (*BODY, ("W2", ("Dense_0", "kernel")), ("b2", ("Dense_0", "bias")))

Params = dict[str, np.ndarray]


# ---------------------------------------------------------------------------------------------
# Problem set-up (jaxrl's initial state, perturbed) and reading parameters out
# ---------------------------------------------------------------------------------------------


def make_batch(seed: int = 1) -> NStepBatch:
    rng = np.random.default_rng(seed)
    return NStepBatch(
        obs=rng.normal(size=(BATCH, OBS_DIM)).astype(np.float32),
        action=rng.uniform(-1.2, 1.2, size=(BATCH, ACTION_DIM)).astype(np.float32),
        reward=rng.normal(size=(HORIZON, BATCH)),
        terminated=TERMINATED,
        truncated=TRUNCATED,
        next_obs=rng.normal(size=(HORIZON, BATCH, OBS_DIM)).astype(np.float32),
    )


def get(params: dict, path: tuple[str, ...]) -> np.ndarray:
    node = params["params"]
    for key in path:
        node = node[key]
    return np.array(node, np.float64)


def read(params: dict) -> Params:
    """The flax parameter dict as ``{W1, b1, W2, b2}`` float64 arrays."""
    return {name: get(params, path) for name, path in PATHS}


def adam_moments(opt_state) -> tuple[int, Params, Params]:
    """``(count, mu, nu)`` of the Adam state inside jaxrl's injected-hyperparameter optax."""
    adam = opt_state.inner_state[0]
    return int(adam.count), read(adam.mu), read(adam.nu)


def perturbed_float64_state(seed: int = 7):
    """A float64 copy of a fresh DDPG state where every parameter, every target (different
    from its online network) and the Adam moments are random, and Adam has taken
    ``ADAM_COUNT`` steps."""
    rng = np.random.default_rng(seed)

    def widen(x):
        x = np.asarray(x)
        return jnp.asarray(x.astype(np.float64) if x.dtype.kind == "f" else x)

    def shake(scale: float, positive: bool = False):
        def apply(x):
            noise = scale * rng.normal(size=np.shape(x))
            return jnp.asarray(np.abs(noise) if positive else np.asarray(x) + noise)

        return apply

    def with_adam(train_state):
        adam, rest = train_state.opt_state.inner_state[0], train_state.opt_state.inner_state[1:]
        adam = adam._replace(
            count=jnp.asarray(ADAM_COUNT, adam.count.dtype),
            mu=jax.tree_util.tree_map(shake(0.05), adam.mu),
            nu=jax.tree_util.tree_map(shake(0.01, positive=True), adam.nu),
        )
        # Adam's constants as float64 (optax stores them as float32: 0.9 would be rounded).
        hyperparams = {
            **train_state.opt_state.hyperparams,
            "b1": jnp.float64(ADAM_B1),
            "b2": jnp.float64(ADAM_B2),
            "eps": jnp.float64(ADAM_EPS),
        }
        opt_state = train_state.opt_state._replace(
            inner_state=(adam, *rest), hyperparams=hyperparams
        )
        params = jax.tree_util.tree_map(shake(0.3), train_state.params)
        return train_state.replace(params=params, opt_state=opt_state)

    state = AGENT.init(jax.random.key(3), OBS_SPACE, ACTION_SPACE)
    state = jax.tree_util.tree_map(widen, state)
    return state.replace(
        actor=with_adam(state.actor),
        critic=with_adam(state.critic),
        actor_target=jax.tree_util.tree_map(shake(0.3), state.actor_target),
        critic_target=jax.tree_util.tree_map(shake(0.3), state.critic_target),
    )


# ---------------------------------------------------------------------------------------------
# The NumPy reference
# ---------------------------------------------------------------------------------------------


def actor_forward(p: Params, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations ``g`` and actions ``mu = tanh(g W2 + b2)``."""
    g = np.tanh(obs @ p["W1"] + p["b1"])
    return g, np.tanh(g @ p["W2"] + p["b2"])


def actor_backward(p: Params, obs: np.ndarray, d_mu: np.ndarray) -> Params:
    """Gradient of a loss w.r.t. the actor's parameters given ``dL/dmu [B, A]``."""
    g, mu = actor_forward(p, obs)
    d_out = d_mu * (1.0 - mu**2)
    d_hidden = (d_out @ p["W2"].T) * (1.0 - g**2)
    return {"W1": obs.T @ d_hidden, "b1": d_hidden.sum(0), "W2": g.T @ d_out, "b2": d_out.sum(0)}


def critic_forward(p: Params, obs: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, ...]:
    """Input ``x = [obs, action]``, hidden activations ``h`` and ``Q [B]``."""
    x = np.concatenate([obs, action], axis=-1)
    h = np.tanh(x @ p["W1"] + p["b1"])
    return x, h, (h @ p["W2"] + p["b2"])[:, 0]


def critic_backward(
    p: Params, obs: np.ndarray, action: np.ndarray, d_q: np.ndarray
) -> tuple[Params, np.ndarray]:
    """Given ``dL/dQ [B]``: the gradient w.r.t. the critic's parameters and ``dL/daction``."""
    x, h, _ = critic_forward(p, obs, action)
    d_out = d_q[:, None]
    d_hidden = (d_out @ p["W2"].T) * (1.0 - h**2)
    grads = {"W1": x.T @ d_hidden, "b1": d_hidden.sum(0), "W2": h.T @ d_out, "b2": d_out.sum(0)}
    d_x = d_hidden @ p["W1"].T
    return grads, d_x[:, OBS_DIM:]


def nstep_target(rewards, terminated, truncated, bootstrap, gamma: float) -> float:
    """One window's target: discounted rewards up to the first episode end, plus the
    discounted bootstrap ``bootstrap(l)`` unless that step terminated."""
    last = HORIZON - 1
    for i in range(HORIZON):
        if terminated[i] or truncated[i]:
            last = i
            break
    target = sum(gamma**i * rewards[i] for i in range(last + 1))
    if not terminated[last]:
        target += gamma ** (last + 1) * bootstrap(last)
    return target


def adam_step(p: Params, grads: Params, count: int, mu: Params, nu: Params, lr: float):
    """One Adam step (optax's ``adam``: bias-corrected moments, eps outside the root)."""
    t = count + 1
    new_p, new_mu, new_nu = {}, {}, {}
    for k in p:
        new_mu[k] = ADAM_B1 * mu[k] + (1 - ADAM_B1) * grads[k]
        new_nu[k] = ADAM_B2 * nu[k] + (1 - ADAM_B2) * grads[k] ** 2
        m_hat = new_mu[k] / (1 - ADAM_B1**t)
        v_hat = new_nu[k] / (1 - ADAM_B2**t)
        new_p[k] = p[k] - lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)
    return new_p, t, new_mu, new_nu


def polyak(target: Params, online: Params, tau: float) -> Params:
    return {k: tau * online[k] + (1 - tau) * target[k] for k in target}


def reference_update(initial: dict, batch: NStepBatch) -> dict:
    """The expected state after one update, from the initial float64 values."""
    obs = np.asarray(batch.obs, np.float64)
    action = np.asarray(batch.action, np.float64)
    next_obs = np.asarray(batch.next_obs, np.float64)
    gamma, tau = AGENT.gamma, AGENT.tau

    def bootstrap(b: int):
        def value(step: int) -> float:
            s = next_obs[step, b][None]
            mu_target = actor_forward(initial["actor_target"], s)[1]
            return float(critic_forward(initial["critic_target"], s, mu_target)[2][0])

        return value

    targets = np.array(
        [
            nstep_target(batch.reward[:, b], TERMINATED[:, b], TRUNCATED[:, b], bootstrap(b), gamma)
            for b in range(BATCH)
        ]
    )
    # Critic: MSE to the targets, one Adam step.
    critic = initial["critic"]
    q = critic_forward(critic, obs, action)[2]
    critic_loss = np.mean((q - targets) ** 2)
    critic_grads, _ = critic_backward(critic, obs, action, 2.0 * (q - targets) / BATCH)
    critic, critic_count, critic_mu, critic_nu = adam_step(
        critic, critic_grads, *initial["critic_adam"], AGENT.critic_lr
    )
    # Actor: -mean Q(s, mu(s)) through the updated critic, one Adam step.
    actor = initial["actor"]
    mu = actor_forward(actor, obs)[1]
    actor_loss = -np.mean(critic_forward(critic, obs, mu)[2])
    _, d_mu = critic_backward(critic, obs, mu, np.full(BATCH, -1.0 / BATCH))
    actor_grads = actor_backward(actor, obs, d_mu)
    actor, actor_count, actor_mu, actor_nu = adam_step(
        actor, actor_grads, *initial["actor_adam"], AGENT.actor_lr
    )
    return {
        "actor": actor,
        "critic": critic,
        "actor_target": polyak(initial["actor_target"], actor, tau),
        "critic_target": polyak(initial["critic_target"], critic, tau),
        "actor_adam": (actor_count, actor_mu, actor_nu),
        "critic_adam": (critic_count, critic_mu, critic_nu),
        "actor_loss": actor_loss,
        "critic_loss": critic_loss,
        "targets": targets,
    }


# ---------------------------------------------------------------------------------------------
# jaxrl's side and the comparisons
# ---------------------------------------------------------------------------------------------


def snapshot(state) -> dict:
    """The float64 values the reference reads and the comparisons check."""
    return {
        "actor": read(state.actor.params),
        "critic": read(state.critic.params),
        "actor_target": read(state.actor_target),
        "critic_target": read(state.critic_target),
        "actor_adam": adam_moments(state.actor.opt_state),
        "critic_adam": adam_moments(state.critic.opt_state),
    }


@pytest.fixture(scope="module")
def outcome() -> tuple[dict, dict, dict]:
    """``(initial, got, expected)``: jaxrl's update run in float64 and the reference's."""
    batch = make_batch()
    with jax.enable_x64(True):
        state = perturbed_float64_state()
        initial = snapshot(state)
        new_state, stats = jax.jit(AGENT.update)(state, batch, jax.random.key(0))
        got = snapshot(new_state)
        got["stats"] = jax.tree_util.tree_map(np.asarray, stats)
        got["dtype"] = new_state.critic.params["params"]["Dense_0"]["kernel"].dtype
        got["targets"] = np.asarray(AGENT.critic_targets(state, batch))
    return initial, got, reference_update(initial, batch)


def assert_moved_as_expected(name: str, before: Params, got: Params, expected: Params) -> None:
    """Each parameter's move equals the reference's to 1e-9 of its size (and moved)."""
    for k in expected:
        expected_move, got_move = expected[k] - before[k], got[k] - before[k]
        assert np.all(np.abs(expected_move) > 1e-6), (name, k, expected_move)
        scale = np.max(np.abs(expected_move))
        np.testing.assert_allclose(
            got_move, expected_move, rtol=0, atol=1e-9 * scale, err_msg=f"{name} {k}"
        )


def test_update_runs_in_float64(outcome):
    _, got, _ = outcome
    assert got["dtype"] == np.float64


def test_critic_targets_match_the_nstep_reference(outcome):
    _, got, expected = outcome
    np.testing.assert_allclose(got["targets"], expected["targets"], rtol=1e-12, atol=1e-12)


def test_losses_match_reference(outcome):
    _, got, expected = outcome
    for name in ("critic_loss", "actor_loss"):
        np.testing.assert_allclose(got["stats"][name], expected[name], rtol=1e-10, err_msg=name)
    assert int(got["stats"]["rejected_steps"]) == 0


@pytest.mark.parametrize("network", ["critic", "actor"])
def test_adam_step_matches_reference(outcome, network):
    initial, got, expected = outcome
    assert_moved_as_expected(network, initial[network], got[network], expected[network])
    count, mu, nu = got[f"{network}_adam"]
    expected_count, expected_mu, expected_nu = expected[f"{network}_adam"]
    assert count == expected_count == ADAM_COUNT + 1
    for k in expected_mu:
        np.testing.assert_allclose(mu[k], expected_mu[k], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(nu[k], expected_nu[k], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("network", ["critic_target", "actor_target"])
def test_soft_update_matches_reference(outcome, network):
    initial, got, expected = outcome
    assert_moved_as_expected(network, initial[network], got[network], expected[network])


def test_reference_backprop_matches_finite_differences():
    """The hand-written gradients of both losses against central differences (float64)."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(BATCH, OBS_DIM))
    action = rng.uniform(-1, 1, size=(BATCH, ACTION_DIM))
    targets = rng.normal(size=BATCH)

    def random_params(inputs: int, outputs: int) -> Params:
        shapes = {"W1": (inputs, HIDDEN), "b1": (HIDDEN,), "W2": (HIDDEN, outputs)}
        params = {k: rng.normal(size=s) for k, s in shapes.items()}
        return {**params, "b2": rng.normal(size=outputs)}

    critic = random_params(OBS_DIM + ACTION_DIM, 1)
    actor = random_params(OBS_DIM, ACTION_DIM)

    def critic_loss(p: Params) -> float:
        return float(np.mean((critic_forward(p, obs, action)[2] - targets) ** 2))

    def actor_loss(p: Params) -> float:
        return float(-np.mean(critic_forward(critic, obs, actor_forward(p, obs)[1])[2]))

    q = critic_forward(critic, obs, action)[2]
    critic_grads = critic_backward(critic, obs, action, 2.0 * (q - targets) / BATCH)[0]
    mu = actor_forward(actor, obs)[1]
    d_mu = critic_backward(critic, obs, mu, np.full(BATCH, -1.0 / BATCH))[1]
    actor_grads = actor_backward(actor, obs, d_mu)
    cases = ((critic_loss, critic, critic_grads), (actor_loss, actor, actor_grads))
    for loss, params, grads in cases:
        for k, value in params.items():
            numeric = np.zeros_like(value)
            for index in np.ndindex(value.shape):
                up, down = {**params, k: value.copy()}, {**params, k: value.copy()}
                up[k][index] += 1e-6
                down[k][index] -= 1e-6
                numeric[index] = (loss(up) - loss(down)) / 2e-6
            np.testing.assert_allclose(grads[k], numeric, rtol=1e-6, atol=1e-8, err_msg=k)

"""One ``agent.update`` of NPG and TRPO against an independent NumPy reference, in float64.

The reference re-derives Tianshou's update (``/work/shared/reference/tianshou.md``: "Returns
and advantages", "NPG update", "TRPO update") from scratch on a tiny problem: observation dim 2,
one hidden layer of 4 tanh units, T=4 steps of N=2 environments with terminated/truncated flags.
Nothing from ``jaxrl`` is used to compute the expected values; jaxrl's state only supplies the
initial parameters (read out of the flax parameter dicts). The reference has:

* a NumPy forward pass of the 1-hidden-layer MLPs (Dense kernels are ``[in, out]``) and a
  hand-written Jacobian of the distribution parameters w.r.t. the flat actor parameters
  (checked against central finite differences below);
* plain-Python GAE, return scaling with a Chan-merged running variance, advantage normalization
  with the unbiased std;
* the actor gradient ``g = J^T dL/d(dist params)``, an EXPLICIT Fisher matrix
  ``F = (1/B) sum_i J_i^T M_i J_i`` with ``M = diag(1/sigma^2, 2)`` in (mean, log_std)
  coordinates for the Gaussian and ``M = diag(p) - p p^T`` in logit coordinates for the
  categorical (the exact Hessian of the mean KL(old || new) at theta_old), and Tianshou's
  10-iteration conjugate gradients on ``(F + 0.1 I) x = g``;
* the NPG step ``theta - trust_region_size * x``; TRPO's ``beta = sqrt(2 max_kl / d.(F+0.1I)d)``
  and a backtracking loop with closed-form KLs (accept when KL < max_kl and the surrogate
  strictly decreases; restore on failure);
* hand backprop of the critic's MSE and Adam steps (b1 0.9, b2 0.999, eps 1e-8).

jaxrl runs on a float64 copy of its initial state inside ``jax.enable_x64(True)``. (Its update
casts observations and rewards to float32, so GAE runs in float32; the inputs here are exactly
representable in float32, and the remaining rounding is far below the 1e-4 tolerance.)
"""

from __future__ import annotations

import dataclasses
import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl

T, N, OBS_DIM, HIDDEN = 4, 2, 2, 4
CG_ITERS, CG_TOL, RET_EPS = 10, 1e-10, 1e-8
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8
TOL = 1e-4

OBS_SPACE = gymnasium.spaces.Box(-1.0, 1.0, (OBS_DIM,), np.float32)
BOX = gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
DISCRETE = gymnasium.spaces.Discrete(3)

# Flags [T, N]: terminations and truncations at different places, one step with both, and
# unfinished episodes at the segment's end of env 0.
TERMINATED = np.array([[0, 0], [1, 0], [0, 0], [0, 1]], bool)
TRUNCATED = np.array([[0, 1], [0, 0], [1, 0], [0, 1]], bool)


@dataclasses.dataclass(frozen=True)
class Case:
    algo: str  # "npg" or "trpo"
    space: str  # "box" or "discrete"
    kwargs: dict
    line_search: str = "accepts"  # TRPO: "accepts" at once, "backtracks", or "fails"


COMMON = {"hidden_sizes": (HIDDEN,), "activation": "tanh", "optim_critic_iters": 1}
# Four compilations: cases differing only in numeric hyperparameters (pytree leaves of the
# agent: gamma, gae_lambda, lr, damping, trust_region_size, max_kl, backtrack_coeff) share one.
CASES = {
    # Tianshou's settings with return scaling; advantage normalization is on by default.
    "npg-box": Case("npg", "box", {"return_scaling": True}),
    "npg-box-leaves": Case(
        "npg",
        "box",
        {
            "return_scaling": True,
            "gamma": 0.9,
            "gae_lambda": 0.8,
            "trust_region_size": 0.3,
            "lr": 3e-3,
            "damping": 0.5,
        },
    ),
    "trpo-box": Case("trpo", "box", {"return_scaling": True}),
    # A loose KL bound: candidates 0-2 are rejected (KL above the bound, or a higher surrogate;
    # the margins are large) and candidate 3 is accepted.
    "trpo-box-backtrack": Case(
        "trpo", "box", {"return_scaling": True, "max_kl": 10.0}, line_search="backtracks"
    ),
    # backtrack_coeff 1: every candidate is the rejected first one; parameters are restored.
    "trpo-box-fail": Case(
        "trpo",
        "box",
        {"return_scaling": True, "max_kl": 10.0, "backtrack_coeff": 1.0},
        line_search="fails",
    ),
    "npg-box-repeat2": Case(
        "npg",
        "box",
        {"repeat": 2, "optim_critic_iters": 2, "advantage_normalization": False},
    ),
    "trpo-discrete-repeat2": Case("trpo", "discrete", {"repeat": 2, "return_scaling": True}),
}

# Paths of the parameters in the flax dicts, in the reference's flattening order.
BODY = (("W1", ("MLP_0", "Dense_0", "kernel")), ("b1", ("MLP_0", "Dense_0", "bias")))
HEAD = (("W2", ("Dense_0", "kernel")), ("b2", ("Dense_0", "bias")))
ACTOR_BOX_PATHS = (*BODY, *HEAD, ("log_std", ("log_std",)))
ACTOR_DISCRETE_PATHS = (*BODY, *HEAD)
CRITIC_PATHS = (*BODY, *HEAD)


# ---------------------------------------------------------------------------- data and params
def make_rollout(space: str, seed: int = 1) -> jaxrl.Rollout:
    rng = np.random.default_rng(seed)
    if space == "box":
        action = rng.normal(0.0, 1.2, (T, N, 1)).astype(np.float32)
    else:
        action = np.array([[0, 2], [1, 1], [2, 0], [1, 2]], np.int32)
    return jaxrl.Rollout(
        obs=rng.normal(size=(T, N, OBS_DIM)).astype(np.float32),
        action=action,
        reward=rng.normal(1.0, 2.0, (T, N)).astype(np.float32),
        terminated=TERMINATED,
        truncated=TRUNCATED,
        next_obs=rng.normal(size=(T, N, OBS_DIM)).astype(np.float32),
    )


def read_params(params: dict, paths: tuple) -> dict[str, np.ndarray]:
    out = {}
    for name, path in paths:
        node = params["params"]
        for key in path:
            node = node[key]
        out[name] = np.array(node, np.float64)
    return out


def perturb_and_widen(state, seed: int = 7):
    """float64 copy of the state; actor/critic parameters (biases and log-std included) get a
    random perturbation so that no parameter sits at its special initial value (0)."""
    rng = np.random.default_rng(seed)

    def widen(x):
        x = np.asarray(x)
        return jnp.asarray(x.astype(np.float64) if x.dtype.kind == "f" else x)

    def shake(x):
        return jnp.asarray(np.asarray(x) + 0.3 * rng.normal(size=x.shape))

    state = jax.tree_util.tree_map(widen, state)
    actor = jax.tree_util.tree_map(shake, state.actor.params)
    critic = jax.tree_util.tree_map(shake, state.critic.params)
    return state.replace(
        actor=state.actor.replace(params=actor), critic=state.critic.replace(params=critic)
    )


def flatten(p: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    return np.concatenate([p[k].ravel() for k in names])


def unflatten(theta: np.ndarray, like: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out, start = {}, 0
    for key, value in like.items():
        out[key] = theta[start : start + value.size].reshape(value.shape)
        start += value.size
    return out


# ---------------------------------------------------------------------------- NumPy networks
def mlp(p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations ``h = tanh(x W1 + b1)`` and head outputs ``h W2 + b2``."""
    h = np.tanh(x @ p["W1"] + p["b1"])
    return h, h @ p["W2"] + p["b2"]


def head_jacobian(p: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """``[B, K, P_body]``: d(head output k)/d(W1, b1, W2, b2), flattened row-major."""
    h, _ = mlp(p, x)
    batch, num_out = x.shape[0], p["W2"].shape[1]
    rows = []
    for i in range(batch):
        per_output = []
        for k in range(num_out):
            dpre = p["W2"][:, k] * (1.0 - h[i] ** 2)  # d out_k / d pre-activation
            dw2 = np.zeros_like(p["W2"])
            dw2[:, k] = h[i]
            db2 = np.zeros_like(p["b2"])
            db2[k] = 1.0
            per_output.append(
                np.concatenate([np.outer(x[i], dpre).ravel(), dpre, dw2.ravel(), db2])
            )
        rows.append(per_output)
    return np.array(rows)


class Gaussian:
    """Diagonal Gaussian with a state-independent log-std; dist params ``(mean, log_std)``."""

    names = ("W1", "b1", "W2", "b2", "log_std")

    @staticmethod
    def dist(p, x):
        mean = mlp(p, x)[1]
        return mean, np.broadcast_to(p["log_std"], mean.shape)

    @staticmethod
    def log_prob(dist, a):
        mean, log_std = dist
        z = (a - mean) / np.exp(log_std)
        return np.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)

    @staticmethod
    def dlogp(dist, a):
        """``[B, 2A]``: d log p / d(mean, log_std)."""
        mean, log_std = dist
        z2 = ((a - mean) / np.exp(log_std)) ** 2
        return np.concatenate([(a - mean) / np.exp(2 * log_std), z2 - 1.0], axis=-1)

    @staticmethod
    def metric(dist):
        """``[B, 2A, 2A]``: Fisher of the Gaussian in (mean, log_std) coordinates."""
        _, log_std = dist
        return np.array(
            [np.diag(np.concatenate([np.exp(-2 * s), np.full_like(s, 2.0)])) for s in log_std]
        )

    @staticmethod
    def kl(old, new):
        (m0, s0), (m1, s1) = old, new
        var0, var1 = np.exp(2 * s0), np.exp(2 * s1)
        return np.sum(s1 - s0 + (var0 + (m0 - m1) ** 2) / (2 * var1) - 0.5, axis=-1)

    @staticmethod
    def jacobian(p, x):
        """``[B, 2A, P]`` w.r.t. the flat (W1, b1, W2, b2, log_std)."""
        body = head_jacobian(p, x)
        batch, num_act = body.shape[0], p["log_std"].size
        jac = np.zeros((batch, 2 * num_act, body.shape[2] + num_act))
        jac[:, :num_act, : body.shape[2]] = body
        jac[:, num_act:, body.shape[2] :] = np.eye(num_act)
        return jac


class Categorical:
    """Softmax over logits ``h W2 + b2``; dist params are the logits."""

    names = ("W1", "b1", "W2", "b2")

    @staticmethod
    def dist(p, x):
        return mlp(p, x)[1]

    @staticmethod
    def _log_softmax(logits):
        shifted = logits - np.max(logits, -1, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), -1, keepdims=True))

    @classmethod
    def log_prob(cls, dist, a):
        return cls._log_softmax(dist)[np.arange(len(a)), a]

    @classmethod
    def dlogp(cls, dist, a):
        return np.eye(dist.shape[-1])[a] - np.exp(cls._log_softmax(dist))

    @classmethod
    def metric(cls, dist):
        probs = np.exp(cls._log_softmax(dist))
        return np.array([np.diag(q) - np.outer(q, q) for q in probs])

    @classmethod
    def kl(cls, old, new):
        lp0, lp1 = cls._log_softmax(old), cls._log_softmax(new)
        return np.sum(np.exp(lp0) * (lp0 - lp1), -1)

    @staticmethod
    def jacobian(p, x):
        return head_jacobian(p, x)


# ---------------------------------------------------------------------------- reference update
def reference_gae(rew, val, next_val, term, trunc, gamma, lam):
    adv = np.zeros((T, N))
    for n in range(N):
        running = 0.0
        for t in reversed(range(T)):
            end = term[t, n] or trunc[t, n] or t == T - 1
            bootstrap = 0.0 if term[t, n] else next_val[t, n]
            delta = rew[t, n] + gamma * bootstrap - val[t, n]
            running = delta + (0.0 if end else gamma * lam * running)
            adv[t, n] = running
    return adv, adv + val


def conjugate_gradients(matrix, b):
    """Tianshou's ``_conjugate_gradients``; returns x and the number of iterations run."""
    x, r, p = np.zeros_like(b), b.copy(), b.copy()
    rdotr, iterations = r @ r, 0
    for _ in range(CG_ITERS):
        iterations += 1
        z = matrix @ p
        alpha = rdotr / (p @ z)
        x = x + alpha * p
        r = r - alpha * z
        new_rdotr = r @ r
        if new_rdotr < CG_TOL:
            break
        p = r + new_rdotr / rdotr * p
        rdotr = new_rdotr
    return x, iterations


def surrogate_loss(family, algo, p, obs, acts, adv, logp_old):
    """NPG: ``-mean(logp * A)``; TRPO: ``-mean(exp(logp - logp_old) * A)``."""
    logp = family.log_prob(family.dist(p, obs), acts)
    weight = np.exp(logp - logp_old) if algo == "trpo" else logp
    return -np.mean(weight * adv)


def actor_gradient_and_fisher(family, algo, p, obs, acts, adv, logp_old):
    """Gradient of :func:`surrogate_loss` and the explicit Fisher ``(1/B) sum J^T M J``."""
    dist = family.dist(p, obs)
    jac = family.jacobian(p, obs)  # [B, K, P]
    logp = family.log_prob(dist, acts)
    coeff = adv * (np.exp(logp - logp_old) if algo == "trpo" else 1.0)
    dloss = -(coeff[:, None] * family.dlogp(dist, acts)) / len(adv)  # dL/d(dist params)
    grad = np.einsum("bkp,bk->p", jac, dloss)
    fisher = np.einsum("bkp,bkl,blq->pq", jac, family.metric(dist), jac) / len(adv)
    return grad, fisher


def critic_loss_and_grad(p, obs, targets):
    h, out = mlp(p, obs)
    err = out[:, 0] - targets
    loss = np.mean(err**2)
    dout = (2.0 * err / len(targets))[:, None]  # [B, 1]
    dpre = (dout @ p["W2"].T) * (1.0 - h**2)
    grad = {"W1": obs.T @ dpre, "b1": dpre.sum(0), "W2": h.T @ dout, "b2": dout.sum(0)}
    return loss, grad


def reference_update(case: Case, agent, actor0: dict, critic0: dict, rollout) -> dict:
    family = Gaussian if case.space == "box" else Categorical
    gamma, lam = agent.gamma, agent.gae_lambda
    obs = np.asarray(rollout.obs, np.float64)
    next_obs = np.asarray(rollout.next_obs, np.float64)
    rew = np.asarray(rollout.reward, np.float64)

    # Returns and advantages.
    values = mlp(critic0, obs.reshape(-1, OBS_DIM))[1][:, 0].reshape(T, N)
    next_values = mlp(critic0, next_obs.reshape(-1, OBS_DIM))[1][:, 0].reshape(T, N)
    rms_mean, rms_var, rms_count = 0.0, 1.0, 0.0  # fresh RunningMeanStd
    std = math.sqrt(rms_var + RET_EPS)
    if agent.return_scaling:
        values, next_values = values * std, next_values * std
    adv, returns = reference_gae(rew, values, next_values, TERMINATED, TRUNCATED, gamma, lam)
    targets = returns.ravel()
    if agent.return_scaling:
        targets = targets / std
        batch = returns.ravel()
        b_mean, b_var, b_count = batch.mean(), batch.var(), batch.size
        total = rms_count + b_count
        delta = b_mean - rms_mean
        rms_mean, rms_var = (
            rms_mean + delta * b_count / total,
            (rms_var * rms_count + b_var * b_count + delta**2 * rms_count * b_count / total)
            / total,
        )
        rms_count = total
    adv = adv.ravel()
    if agent.advantage_normalization:
        adv = (adv - adv.mean()) / adv.std(ddof=1)

    flat_obs = obs.reshape(-1, OBS_DIM)
    acts = np.asarray(rollout.action)
    acts = acts.reshape(-1, *acts.shape[2:])
    logp_old = family.log_prob(family.dist(actor0, flat_obs), acts)

    def surrogate(p):
        return surrogate_loss(family, case.algo, p, flat_obs, acts, adv, logp_old)

    actor = {k: actor0[k] for k in family.names}
    critic = dict(critic0)
    adam_m = {k: np.zeros_like(v) for k, v in critic.items()}
    adam_v = {k: np.zeros_like(v) for k, v in critic.items()}
    adam_t = 0
    log = {"actor_loss": [], "kl": [], "critic_loss": [], "step_size": [], "backtracks": []}
    log["cg_iterations"] = []
    for _ in range(agent.repeat):
        # Actor: gradient, explicit Fisher, CG, step.
        theta = flatten(actor, family.names)
        dist = family.dist(actor, flat_obs)
        loss = surrogate(actor)
        grad, fisher = actor_gradient_and_fisher(
            family, case.algo, actor, flat_obs, acts, adv, logp_old
        )
        damped = fisher + agent.damping * np.eye(theta.size)
        x, iterations = conjugate_gradients(damped, grad)
        direction = -x
        if case.algo == "npg":
            new_theta = theta + agent.trust_region_size * direction
        else:
            beta = math.sqrt(2 * agent.max_kl / (direction @ damped @ direction))
            new_theta, step_size, backtracks = theta, 0.0, 0
            for i in range(agent.max_backtracks):
                step = beta * agent.backtrack_coeff**i
                candidate = unflatten(theta + step * direction, actor)
                kl = np.mean(family.kl(dist, family.dist(candidate, flat_obs)))
                if kl < agent.max_kl and surrogate(candidate) < loss:
                    new_theta, step_size, backtracks = theta + step * direction, step, i
                    break
            log["step_size"].append(step_size)
            log["backtracks"].append(backtracks)
        actor = unflatten(new_theta, actor)
        log["actor_loss"].append(loss)
        log["kl"].append(np.mean(family.kl(dist, family.dist(actor, flat_obs))))
        log["cg_iterations"].append(iterations)
        # Critic: Adam steps on the MSE to the (scaled) targets.
        for _ in range(agent.optim_critic_iters):
            loss_q, g = critic_loss_and_grad(critic, flat_obs, targets)
            adam_t += 1
            for k in critic:
                adam_m[k] = ADAM_B1 * adam_m[k] + (1 - ADAM_B1) * g[k]
                adam_v[k] = ADAM_B2 * adam_v[k] + (1 - ADAM_B2) * g[k] ** 2
                m_hat = adam_m[k] / (1 - ADAM_B1**adam_t)
                v_hat = adam_v[k] / (1 - ADAM_B2**adam_t)
                critic[k] = critic[k] - agent.lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)
        log["critic_loss"].append(loss_q)
    return {
        "actor": actor,
        "critic": critic,
        "rms": (rms_mean, rms_var, rms_count),
        "log": log,
    }


# ---------------------------------------------------------------------------- tests
# The agent is passed as a pytree argument: cases differing only in numeric hyperparameters
# (its leaves) share one compilation.
UPDATES = {cls: jax.jit(cls.update) for cls in (jaxrl.NPG, jaxrl.TRPO)}
INITIAL_STATES = {}


def initial_state(space: str):
    """float64 initial state for the action space, shared by NPG and TRPO (same networks)."""
    if space not in INITIAL_STATES:
        action_space = BOX if space == "box" else DISCRETE
        state = jaxrl.NPG(**COMMON).init(jax.random.key(3), OBS_SPACE, action_space)
        INITIAL_STATES[space] = perturb_and_widen(state)
    return INITIAL_STATES[space]


def run_case(case: Case):
    cls = jaxrl.NPG if case.algo == "npg" else jaxrl.TRPO
    agent = cls(**{**COMMON, **case.kwargs})
    paths = ACTOR_BOX_PATHS if case.space == "box" else ACTOR_DISCRETE_PATHS
    rollout = make_rollout(case.space)
    with jax.enable_x64(True):
        state = initial_state(case.space)
        actor0 = read_params(state.actor.params, paths)
        critic0 = read_params(state.critic.params, CRITIC_PATHS)
        new_state, stats = UPDATES[cls](agent, state, rollout, jax.random.key(0))
        got = {
            "actor": read_params(new_state.actor.params, paths),
            "critic": read_params(new_state.critic.params, CRITIC_PATHS),
            "rms": tuple(float(getattr(new_state.return_rms, f)) for f in ("mean", "var", "count")),
            "stats": jax.tree_util.tree_map(np.asarray, stats),
            "dtype": new_state.actor.params["params"]["Dense_0"]["kernel"].dtype,
        }
    expected = reference_update(case, agent, actor0, critic0, rollout)
    return agent, actor0, critic0, got, expected


@pytest.fixture(scope="module", params=sorted(CASES))
def outcome(request):
    case = CASES[request.param]
    return (case, *run_case(case))


def close(name: str, actual, desired) -> float:
    actual, desired = np.asarray(actual, np.float64), np.asarray(desired, np.float64)
    np.testing.assert_allclose(actual, desired, rtol=TOL, atol=TOL, err_msg=name)
    return float(np.max(np.abs(actual - desired))) if actual.size else 0.0


def test_update_runs_in_float64(outcome):
    *_, got, _ = outcome
    assert got["dtype"] == np.float64


def test_actor_params_match_reference(outcome):
    case, _, actor0, _, got, expected = outcome
    for name in expected["actor"]:
        close(f"actor {name}", got["actor"][name], expected["actor"][name])
    moved = max(np.max(np.abs(got["actor"][k] - actor0[k])) for k in actor0)
    if case.line_search == "fails":
        assert moved == 0.0  # restored exactly
    else:
        assert moved > 1e-2  # the step is not trivially zero


def test_critic_params_match_reference(outcome):
    _, _, _, critic0, got, expected = outcome
    for name in expected["critic"]:
        close(f"critic {name}", got["critic"][name], expected["critic"][name])
    assert max(np.max(np.abs(got["critic"][k] - critic0[k])) for k in critic0) > 1e-4


def test_return_rms_matches_reference(outcome):
    _, agent, _, _, got, expected = outcome
    close("return_rms", got["rms"], expected["rms"])
    if not agent.return_scaling:
        assert got["rms"] == (0.0, 1.0, 0.0)


def test_stats_match_reference(outcome):
    case, agent, _, _, got, expected = outcome
    stats, log = got["stats"], expected["log"]
    names = ["actor_loss", "kl", "critic_loss", "cg_iterations"]
    if case.algo == "trpo":
        names.append("step_size")
    for name in names:
        close(f"stats[{name}].mean", stats[name].mean, np.mean(log[name]))
        close(f"stats[{name}].max", stats[name].max, np.max(log[name]))
    if case.algo == "trpo":
        assert int(stats["backtracks"]) == sum(log["backtracks"])
        failures = sum(s == 0.0 for s in log["step_size"])
        assert int(stats["line_search_failures"]) == failures
        assert failures == (agent.repeat if case.line_search == "fails" else 0)
        assert (sum(log["backtracks"]) > 0) == (case.line_search == "backtracks")


def random_problem(family, rng):
    num_out = 1 if family is Gaussian else 3
    p = {
        "W1": rng.normal(size=(OBS_DIM, HIDDEN)),
        "b1": rng.normal(size=HIDDEN),
        "W2": rng.normal(size=(HIDDEN, num_out)),
        "b2": rng.normal(size=num_out),
    }
    if family is Gaussian:
        p["log_std"] = rng.normal(size=num_out)
        acts = rng.normal(size=(5, num_out))
    else:
        acts = rng.integers(0, num_out, 5)
    return p, rng.normal(size=(5, OBS_DIM)), acts


def central_difference(fn, theta, eps):
    return np.stack(
        [(fn(theta + eps * e) - fn(theta - eps * e)) / (2 * eps) for e in np.eye(theta.size)],
        -1,
    )


@pytest.mark.parametrize("algo", ["npg", "trpo"])
@pytest.mark.parametrize("family", [Gaussian, Categorical], ids=["gaussian", "categorical"])
def test_reference_derivatives_match_finite_differences(family, algo):
    """Guards the reference itself: its hand-written Jacobian, surrogate gradient and Fisher
    matrix against central differences of its own forward pass, surrogate and closed-form KL
    (the Fisher is the Hessian of the mean KL(old || theta) at theta = old)."""
    rng = np.random.default_rng(0)
    p, x, acts = random_problem(family, rng)
    theta = flatten(p, family.names)
    adv = rng.normal(size=len(x))
    old = family.dist(p, x)
    # TRPO away from the old policy, so that the ratio is not 1.
    logp_old = family.log_prob(old, acts) + (0.3 * rng.normal(size=len(x)) if algo == "trpo" else 0)

    def outputs(th):
        dist = family.dist(unflatten(th, p), x)
        return np.concatenate(dist, -1) if family is Gaussian else dist

    np.testing.assert_allclose(
        family.jacobian(p, x), central_difference(outputs, theta, 1e-6), atol=1e-7
    )

    grad, fisher = actor_gradient_and_fisher(family, algo, p, x, acts, adv, logp_old)

    def loss(th):
        return surrogate_loss(family, algo, unflatten(th, p), x, acts, adv, logp_old)

    np.testing.assert_allclose(grad, central_difference(loss, theta, 1e-6), atol=1e-7)

    def kl_grad(th):
        return central_difference(
            lambda t: np.mean(family.kl(old, family.dist(unflatten(t, p), x))), th, 1e-4
        )

    hessian = central_difference(kl_grad, theta, 1e-4)
    np.testing.assert_allclose(fisher, hessian, atol=1e-5)

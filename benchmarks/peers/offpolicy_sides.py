"""The sides of ``offpolicy.py``, each run as a child process of its own interpreter (this
repository's, or a peer's virtual environment without jaxrl): ``python offpolicy_sides.py
--child NAME [options]`` prints the child's record as the last line of its standard output.
The matched settings of every side are here (``offpolicy.py`` says what they are and what
differs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from common import installed_version, summarize  # noqa: E402

TD3_PLUGIN = ROOT / "examples" / "td3.py"

# The matched settings (``offpolicy.py``'s docstring).
BATCH_SIZE = 256
BUFFER_SIZE = 20_000
HIDDEN = (64, 64)
ACTIVATION = "relu"
WARMUP_STEPS = 1_000
EXPLORATION_NOISE = 0.1  # in [-1, 1]-action units
TAU = 0.005
GAMMA = 0.99
ACTOR_LR = 1e-3
CRITIC_LR = 1e-3
POLICY_NOISE = 0.2  # TD3, in [-1, 1]-action units
NOISE_CLIP = 0.5
POLICY_DELAY = 2
UPDATES_PER_CALL = 4  # the update comparison: updates per compiled call, every case alike
EVAL_EPISODES = 128  # rejax's fixed count per evaluation
HOST_EVAL_EPISODES = 10
PENDULUM_ACTION_SCALE = 2.0  # Pendulum's actions are in [-2, 2]: rejax's noises in its units


def versions_of(packages: Sequence[str]) -> dict[str, str | None]:
    return {name: installed_version(name) for name in packages}


# ============================================================================ child processes
# Each child prints one JSON line last on its standard output. Its imports happen inside
# the functions: the peers' interpreters run this file, without jaxrl.


def _backend() -> str:
    import jax

    return jax.default_backend()


def jaxrl_agent(algo: str, warmup_steps: int = WARMUP_STEPS) -> Any:
    """jaxrl's DDPG, or TD3 from the plug-in, with the matched settings."""
    import jaxrl

    cls = jaxrl.DDPG
    extra: dict[str, Any] = {}
    if algo == "td3":
        from jaxrl.algorithms import registry

        jaxrl.load_plugin(str(TD3_PLUGIN))
        cls = registry.get("td3").cls
        extra = dict(policy_noise=POLICY_NOISE, noise_clip=NOISE_CLIP, policy_delay=POLICY_DELAY)
    return cls(
        actor_lr=ACTOR_LR,
        critic_lr=CRITIC_LR,
        gamma=GAMMA,
        tau=TAU,
        exploration_noise=jaxrl.GaussianNoise(sigma=EXPLORATION_NOISE),
        n_step_return_horizon=1,
        batch_size=BATCH_SIZE,
        buffer_size=BUFFER_SIZE,
        warmup_steps=warmup_steps,
        update_per_step=1.0,
        hidden_sizes=HIDDEN,
        activation=ACTIVATION,
        **extra,
    )


def jaxrl_api_child(
    algo: str,
    seeds: int,
    steps: int,
    episodes: int = EVAL_EPISODES,
    seed: int = 0,
    warmup_steps: int = WARMUP_STEPS,
) -> dict:
    """jaxrl through its API: ``seeds`` seeds of ``make_train`` in one jitted program on gymnax
    Pendulum-v1, one evaluation at the end. Returns each seed's final return and the seconds
    from this function's start (imports included) to the evaluation's result."""
    start = time.perf_counter()
    import jax

    from jaxrl.training import TrainConfig, make_train, over_seeds
    from jaxrl.training.seeds import seed_keys

    agent = jaxrl_agent(algo, warmup_steps)
    config = TrainConfig(
        num_envs=1, num_steps=1, total_steps=steps, eval_every=steps, eval_episodes=episodes
    )
    train = jax.jit(over_seeds(make_train(agent, "Pendulum-v1", config), agent=agent))
    _, metrics = train(seed_keys(seed, seeds))
    returns = np.asarray(jax.block_until_ready(metrics["eval/return"]))[:, -1]
    return {
        "returns": returns.tolist(),
        "env_steps": int(np.asarray(metrics["eval/env_steps"])[0, -1]),
        "inner_s": time.perf_counter() - start,
        "backend": _backend(),
    }


def rejax_ddpg_class() -> type:
    """DDPG from rejax 0.1.3's TD3 (rejax has no DDPG): one critic and a critic loss without
    target smoothing; create it with ``num_critics=1, policy_delay=1``."""
    import jax
    import optax
    from rejax import TD3

    class DDPG(TD3):
        def update_critic(self, ts: Any, minibatch: Any) -> Any:
            def critic_loss_fn(params: Any) -> Any:
                action = self.actor.apply(ts.actor_target_params, minibatch.next_obs)
                q_next = self.vmap_critic(ts.critic_target_params, minibatch.next_obs, action)
                target = minibatch.reward + (1 - minibatch.done) * self.gamma * q_next[0]
                q = self.vmap_critic(params, minibatch.obs, minibatch.action)[0]
                return optax.l2_loss(q, target).mean()

            grads = jax.grad(critic_loss_fn)(ts.critic_ts.params)
            return ts.replace(critic_ts=ts.critic_ts.apply_gradients(grads=grads))

    return DDPG


def patch_rejax_uniform_sampling() -> None:
    """Replace rejax's replay sampling (without replacement over the whole buffer, weighted
    to the filled part) by uniform sampling with replacement over the filled part."""
    from functools import partial

    import jax
    import jax.numpy as jnp
    from rejax.buffers import ReplayBuffer

    @partial(jax.jit, static_argnames=("num",))
    def sample(self: Any, num: int, rng: Any) -> Any:
        index = jax.random.randint(rng, (num,), 0, jnp.maximum(self.num_entries, 1))
        return jax.tree.map(lambda arr: arr[index], self.data)

    ReplayBuffer.sample = sample


def rejax_algo(algo: str, steps: int) -> Any:
    """rejax's TD3, or DDPG from it, on gymnax Pendulum-v1 with the matched settings."""
    from rejax import TD3

    common = dict(
        env="Pendulum-v1",
        total_timesteps=steps,
        eval_freq=steps,
        skip_initial_evaluation=True,
        num_envs=1,
        buffer_size=BUFFER_SIZE,
        fill_buffer=WARMUP_STEPS,
        batch_size=BATCH_SIZE,
        learning_rate=ACTOR_LR,  # one rate for actor and critic; ACTOR_LR == CRITIC_LR
        gamma=GAMMA,
        polyak=1 - TAU,
        exploration_noise=EXPLORATION_NOISE * PENDULUM_ACTION_SCALE,
        actor_kwargs={"activation": ACTIVATION},
        critic_kwargs={"activation": ACTIVATION},
    )
    if algo == "td3":
        return TD3.create(
            **common,
            target_noise=POLICY_NOISE * PENDULUM_ACTION_SCALE,
            target_noise_clip=NOISE_CLIP * PENDULUM_ACTION_SCALE,
            policy_delay=POLICY_DELAY,
        )
    return rejax_ddpg_class().create(**common, num_critics=1, policy_delay=1, target_noise=0.0)


def rejax_child(algo: str, seeds: int, steps: int, uniform: bool, seed: int = 0) -> dict:
    """rejax: ``jax.jit(jax.vmap(algo.train))`` over ``seeds`` keys; one evaluation (128
    episodes per seed) at the end."""
    start = time.perf_counter()
    import jax

    if uniform:
        patch_rejax_uniform_sampling()
    algo_ = rejax_algo(algo, steps)
    train = jax.jit(jax.vmap(algo_.train))
    ts, (_, returns) = train(jax.random.split(jax.random.key(seed), seeds))
    returns = np.asarray(jax.block_until_ready(returns))  # [seeds, evaluations, episodes]
    return {
        "returns": returns[:, -1].mean(axis=-1).tolist(),
        "env_steps": int(np.asarray(ts.global_step)[0]),
        "inner_s": time.perf_counter() - start,
        "backend": _backend(),
    }


def sbx_child(steps: int, seed: int, episodes: int = HOST_EVAL_EPISODES) -> dict:
    """sbx's DDPG on gymnasium Pendulum-v1 with the matched settings, then ``evaluate_policy``
    (deterministic) on a new environment."""
    start = time.perf_counter()
    import gymnasium as gym
    from sbx import DDPG
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.noise import NormalActionNoise

    env = gym.make("Pendulum-v1")
    dim = env.action_space.shape[0]
    model = DDPG(
        "MlpPolicy",
        env,
        learning_rate=ACTOR_LR,
        qf_learning_rate=CRITIC_LR,
        buffer_size=BUFFER_SIZE,
        learning_starts=WARMUP_STEPS,
        batch_size=BATCH_SIZE,
        tau=TAU,
        gamma=GAMMA,
        train_freq=1,
        gradient_steps=1,
        action_noise=NormalActionNoise(np.zeros(dim), EXPLORATION_NOISE * np.ones(dim)),
        policy_kwargs={"net_arch": list(HIDDEN)},  # relu: sbx's default activation
        seed=seed,
        verbose=0,
    )
    model.learn(steps)
    test = Monitor(gym.make("Pendulum-v1"))
    test.reset(seed=seed + 10_000)
    returns, _ = evaluate_policy(
        model, test, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return {
        "returns": [float(np.mean(returns))],
        "env_steps": int(model.num_timesteps),
        "inner_s": time.perf_counter() - start,
        "backend": _backend(),
    }


def _time_calls(step: Callable[[], Any], calls: int) -> list[float]:
    """Seconds of each of ``calls`` calls of ``step`` (which waits for its result)."""
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return samples


def _compile(fn: Callable, *args: Any) -> tuple[Any, float]:
    import jax

    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - start


def jaxrl_update_child(seeds: int, calls: int) -> dict:
    """jaxrl's DDPG and TD3 learning step, ``seeds`` seeds vmapped: sample a batch from a full
    buffer of synthetic transitions, then ``agent.update``."""
    import gymnax
    import jax
    import jax.numpy as jnp

    from jaxrl.training import over_seeds

    env, params = gymnax.make("Pendulum-v1")
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    cases = []
    for algo in ("ddpg", "td3"):
        agent = jaxrl_agent(algo)
        keys = jax.random.split(jax.random.key(0), seeds)

        @jax.jit
        def init(keys: Any, a: Any = agent) -> tuple[Any, Any]:
            state = jax.vmap(lambda k: a.init(k, obs_space, act_space, 1))(keys)
            buffer = jax.vmap(lambda s: a.init_buffer(s, 1))(state)
            data = _synthetic(buffer.data, jax.random.key(1))
            return state, buffer.replace(data=data, size=jnp.full_like(buffer.size, BUFFER_SIZE))

        state, buffer = init(keys)

        def updates(state: Any, buffer: Any, key: Any, a: Any = agent) -> Any:
            # UPDATES_PER_CALL updates in one program (TD3 steps its actor on every
            # POLICY_DELAY-th), as rejax's cycles below.
            def one(carry: tuple, _: None) -> tuple:
                state, key = carry
                key, batch_key, update_key = jax.random.split(key, 3)
                state, stats = a.update(state, a.sample_batch(buffer, batch_key), update_key)
                return (state, key), stats

            (state, key), stats = jax.lax.scan(one, (state, key), None, UPDATES_PER_CALL)
            return state, stats, key

        update = over_seeds(updates, "vmap", agent)
        keys = jax.random.split(jax.random.key(2), seeds)
        compiled, compile_s = _compile(update, state, buffer, keys)
        box = {"state": state, "key": keys}

        def step(box: dict = box, compiled: Any = compiled, buffer: Any = buffer) -> None:
            box["state"], stats, box["key"] = compiled(box["state"], buffer, box["key"])
            jax.block_until_ready((box["state"], stats))

        cases.append((("jaxrl", algo, "uniform (jaxrl's)"), step, UPDATES_PER_CALL, compile_s))
    return {
        "rows": _time_in_rounds(cases, max(1, calls // UPDATES_PER_CALL)),
        "backend": _backend(),
    }


def _time_in_rounds(cases: list[tuple[tuple, Callable, int, float]], calls: int) -> list[dict]:
    """Time ``(row labels, step, updates per step, compile s)`` cases in alternating rounds
    (one step of each per round, after 3 untimed), so that a change in the machine's load
    falls on every case alike; seconds per update = a step's / its updates."""
    for _ in range(3):
        for _, step, _, _ in cases:
            step()
    samples: list[list[float]] = [[] for _ in cases]
    for _ in range(calls):
        for times, (_, step, updates, _) in zip(samples, cases, strict=True):
            times.extend(t / updates for t in _time_calls(step, 1))
    return [
        _update_row(*labels, times, compile_s)
        for times, (labels, _, _, compile_s) in zip(samples, cases, strict=True)
    ]


def _synthetic(data: Any, key: Any) -> Any:
    """Transitions of ``data`` 's shapes: normal floats, no episode end."""
    import jax
    import jax.numpy as jnp

    leaves, tree = jax.tree.flatten(data)
    keys = jax.random.split(key, len(leaves))
    filled = [
        jax.random.normal(k, x.shape, x.dtype)
        if jnp.issubdtype(x.dtype, jnp.floating)
        else jnp.zeros_like(x)
        for k, x in zip(keys, leaves, strict=True)
    ]
    return jax.tree.unflatten(tree, filled)


def rejax_update_child(seeds: int, calls: int) -> dict:
    """rejax's learning step, ``seeds`` seeds vmapped: ``policy_delay`` times (sample, then
    ``update_critic``), then ``update_actor`` on the last minibatch and the target updates
    (rejax's ``train_critic`` and ``train_policy`` without collection); seconds per update =
    the cycle's / ``policy_delay``. rejax's sampler as is, then uniform-patched (the patch
    replaces the class' method, so the programs are compiled anew after it)."""
    import jax

    rows: list[dict] = []
    for sampler in ("as is", "uniform"):
        if sampler == "uniform":
            patch_rejax_uniform_sampling()
        cases = []
        for algo in ("ddpg", "td3"):
            algo_ = rejax_algo(algo, 10_000)
            delay = algo_.policy_delay

            @jax.jit
            def init(keys: Any, a: Any = algo_) -> tuple[Any, Any]:
                ts = jax.vmap(a.init_state)(keys)
                buffer = ts.replay_buffer
                data = _synthetic(buffer.data, jax.random.key(1))
                buffer = buffer.replace(data=data, full=jax.numpy.ones_like(buffer.full))
                return ts.replace(replay_buffer=None), buffer

            ts, buffer = init(jax.random.split(jax.random.key(0), seeds))

            def cycle(ts: Any, buffer: Any, a: Any = algo_, delay: int = delay) -> Any:
                ts = ts.replace(replay_buffer=buffer)
                minibatch = None
                for _ in range(delay):
                    rng, rng_sample = jax.random.split(ts.rng)
                    ts = ts.replace(rng=rng)
                    minibatch = ts.replay_buffer.sample(a.batch_size, rng_sample)
                    ts = a.update_critic(ts, minibatch)
                ts = a.update_actor(ts, minibatch)
                ts = ts.replace(
                    critic_target_params=a.maybe_update_target_params(
                        ts.critic_ts.params, ts.critic_target_params, 1, 0
                    ),
                    actor_target_params=a.maybe_update_target_params(
                        ts.actor_ts.params, ts.actor_target_params, 1, 0
                    ),
                )
                return ts.replace(replay_buffer=None)

            def cycles(ts: Any, buffer: Any, delay: int = delay) -> Any:
                # UPDATES_PER_CALL updates in one program, as jaxrl's above.
                step = lambda ts, _: (cycle(ts, buffer), None)  # noqa: E731
                return jax.lax.scan(step, ts, None, UPDATES_PER_CALL // delay)[0]

            compiled, compile_s = _compile(jax.vmap(cycles), ts, buffer)
            box = {"ts": ts}

            def step(box: dict = box, compiled: Any = compiled, buffer: Any = buffer) -> None:
                box["ts"] = jax.block_until_ready(compiled(box["ts"], buffer))

            cases.append((("rejax", algo, sampler), step, UPDATES_PER_CALL, compile_s))
        rows += _time_in_rounds(cases, max(1, calls // UPDATES_PER_CALL))
    return {"rows": rows, "backend": _backend()}


def _update_row(
    library: str, algo: str, sampler: str, samples: list[float], compile_s: float
) -> dict:
    return {
        "library": library,
        "algo": algo,
        "sampler": sampler,
        "median_s": float(np.median(samples)),
        "summary": summarize(samples),
        "compile_s": compile_s,
        "calls": len(samples),
    }


CHILDREN: dict[str, Callable[[argparse.Namespace], dict]] = {
    "jaxrl-api": lambda a: jaxrl_api_child(a.algo, a.seeds, a.steps, a.episodes, a.seed),
    "rejax": lambda a: rejax_child(a.algo, a.seeds, a.steps, a.uniform, a.seed),
    "sbx": lambda a: sbx_child(a.steps, a.seed, a.episodes),
    "jaxrl-update": lambda a: jaxrl_update_child(a.seeds, a.calls),
    "rejax-update": lambda a: rejax_update_child(a.seeds, a.calls),
    "versions": lambda a: versions_of(a.packages),
    "warm": lambda a: warm_bytecode(a.packages),
}

# What each interpreter's sides import (``warm_bytecode``).
SIDE_MODULES = {
    "jaxrl": ["jax", "flax", "optax", "gymnax", "gymnasium", "jaxrl.training", "jaxrl.runs"],
    "rejax": ["jax", "flax", "optax", "gymnax", "rejax"],
    "sbx": ["jax", "flax", "optax", "torch", "gymnasium", "sbx", "stable_baselines3"],
}


def warm_bytecode(modules: Sequence[str]) -> dict:
    """Import ``modules`` (their bytecode written on the way), untimed."""
    import importlib

    for name in modules:
        importlib.import_module(name)
    return {"imported": list(modules)}


def child_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", choices=sorted(CHILDREN), required=True)
    parser.add_argument("--algo", default="ddpg")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--episodes", type=int, default=EVAL_EPISODES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--uniform", action="store_true")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--packages", nargs="*", default=[])
    args = parser.parse_args(argv)
    print(json.dumps(CHILDREN[args.child](args)), flush=True)


if __name__ == "__main__":
    child_main(sys.argv[1:])

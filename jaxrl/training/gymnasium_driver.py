"""Host driver: gymnasium environments stepped on the host, the agent's jitted functions on
the accelerator (CleanRL/sbx style). Any gymnasium id works, MuJoCo ones included through the
``gymnasium[mujoco]`` extra. NPG/TRPO update on each fresh rollout; DDPG keeps a jittable
replay buffer on the device and runs ``update_per_step`` updates per collected env step.

Vector environments auto-reset in the same step (``AutoresetMode.SAME_STEP``): when an
episode ends, ``info["final_obs"]`` holds its final observation, which becomes the
transition's ``next_obs`` so truncated episodes are bootstrapped correctly.

Observation normalization (Tianshou's MuJoCo setting) keeps a
:class:`jaxrl.core.RunningMeanStd` of training observations, updated as they arrive; agents
see ``clip((obs - mean) / sqrt(var + eps), -10, 10)``, and evaluation uses the training
statistics without updating them.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.core.normalization import RunningMeanStd
from jaxrl.replay import ReplayBuffer, Transition
from jaxrl.rollout import Rollout
from jaxrl.spaces import describe_space
from jaxrl.training.agent_steps import (
    evaluation_is_deterministic,
    explore,
    init_agent,
    is_off_policy,
    mean_stats,
    off_policy_updates,
    policy_action,
    updates_per_collect,
    updates_take_effect,
)

OBS_CLIP = 10.0
OBS_EPS = float(np.finfo(np.float32).eps)


class EnvironmentError_(RuntimeError):
    """An environment raised or returned malformed data; names the environment and step."""


def _make_vector_env(
    env_id: str, num_envs: int, env_kwargs: dict[str, Any]
) -> gym.vector.VectorEnv:
    try:
        return gym.make_vec(
            env_id,
            num_envs=num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
            **env_kwargs,
        )
    except gym.error.Error as error:
        raise ValueError(f"env: cannot make gymnasium environment {env_id!r}: {error}") from error


@dataclasses.dataclass
class ObservationNormalizer:
    """Host-side observation normalization with a running mean/std (or none)."""

    enabled: bool
    stats: RunningMeanStd | None = None

    def __call__(self, obs: np.ndarray, update: bool) -> np.ndarray:
        if not self.enabled:
            return obs.astype(np.float32)
        if self.stats is None:
            self.stats = RunningMeanStd.create(obs.shape[1:])
        if update:
            self.stats = self.stats.update(jnp.asarray(obs))
        mean, var = np.asarray(self.stats.mean), np.asarray(self.stats.var)
        normalized = (obs - mean) / np.sqrt(var + OBS_EPS)
        return np.clip(normalized, -OBS_CLIP, OBS_CLIP).astype(np.float32)


def _checked_step(envs: gym.vector.VectorEnv, env_id: str, step: int, action: np.ndarray) -> tuple:
    try:
        obs, reward, terminated, truncated, info = envs.step(action)
    except Exception as error:  # re-raised with the environment and step named
        raise EnvironmentError_(
            f"environment {env_id!r} raised at step {step}: {error!r}"
        ) from error
    num_envs = envs.num_envs
    reward = np.asarray(reward, np.float32)
    if obs.shape != (num_envs, *envs.single_observation_space.shape):
        raise EnvironmentError_(
            f"environment {env_id!r} returned observations of shape {obs.shape} at step {step}, "
            f"expected {(num_envs, *envs.single_observation_space.shape)}"
        )
    if reward.shape != (num_envs,) or not np.all(np.isfinite(reward)):
        raise EnvironmentError_(
            f"environment {env_id!r} returned malformed rewards at step {step}: {reward!r}"
        )
    if not np.all(np.isfinite(obs)):
        raise EnvironmentError_(
            f"environment {env_id!r} returned non-finite observations at step {step}"
        )
    final_obs = obs.copy()
    if "_final_obs" in info:
        for i in np.flatnonzero(info["_final_obs"]):
            final_obs[i] = info["final_obs"][i]
    return obs, reward, np.asarray(terminated, bool), np.asarray(truncated, bool), final_obs


@functools.cache
def _evaluation_policy(agent: Any) -> Callable:
    """The jitted evaluation policy of ``agent``, built once per agent (not per evaluation)."""
    deterministic = evaluation_is_deterministic(agent)
    return jax.jit(lambda state, obs, key: policy_action(agent, state, obs, key, deterministic))


def evaluate_gymnasium(
    agent: Any,
    state: Any,
    env_id: str,
    normalizer: ObservationNormalizer,
    num_episodes: int,
    seed: int,
    env_kwargs: dict[str, Any] | None = None,
) -> float:
    """Mean return of ``num_episodes`` episodes run in parallel on fresh environments (the
    policy acts deterministically where :func:`evaluation_is_deterministic` says so)."""
    envs = _make_vector_env(env_id, num_episodes, env_kwargs or {})
    act = _evaluation_policy(agent)
    obs, _ = envs.reset(seed=seed)
    returns = np.zeros(num_episodes)
    running = np.ones(num_episodes, bool)
    key = jax.random.key(seed)
    step = 0
    while running.any():
        key, act_key = jax.random.split(key)
        action = np.asarray(act(state, normalizer(obs, update=False), act_key))
        obs, reward, terminated, truncated, _ = _checked_step(envs, env_id, step, action)
        returns += np.where(running, reward, 0.0)
        running &= ~(terminated | truncated)
        step += 1
    envs.close()
    return float(returns.mean())


def train_gymnasium(
    agent: Any,
    env_id: str,
    *,
    num_envs: int = 16,
    num_steps: int = 128,
    total_steps: int = 100_000,
    eval_every: int = 20_480,
    eval_episodes: int = 10,
    seed: int = 0,
    normalize_obs: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    progress: Callable[[dict], None] | None = None,
    stop: Callable[[float], bool] | None = None,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Train NPG, TRPO or DDPG on a gymnasium environment.

    Collects ``num_steps`` vector steps from ``num_envs`` environments with the agent's jitted
    exploration, then learns: NPG/TRPO call the jitted ``agent.update`` on the rollout; DDPG
    adds the transitions to its replay buffer and runs ``update_per_step * num_envs *
    num_steps`` jitted updates. Evaluates every ``eval_every`` env steps (rounded to whole
    collections) and at the end.

    Args:
      progress: optional callback after each evaluation, given a dict with ``env_steps``,
        ``eval_return``, ``seconds`` and the agent ``state``.
      stop: optional ``eval_return -> bool`` (Tianshou's ``stop_fn``): the run ends after the
        first evaluation for which it returns True, e.g. ``lambda r: r >= -250``.

    Returns:
      ``(state, metrics)`` with per-collection arrays (``env_steps``, ``train_return``, the
      agent's stats means; NaN for collections inside DDPG's warm-up, which run no update)
      and per-evaluation arrays ``eval/env_steps``, ``eval/return``.
    """
    env_kwargs = env_kwargs or {}
    envs = _make_vector_env(env_id, num_envs, env_kwargs)
    normalizer = ObservationNormalizer(normalize_obs)
    off_policy = is_off_policy(agent)
    steps_per_collect = num_envs * num_steps
    num_updates = updates_per_collect(agent, steps_per_collect) if off_policy else 1
    # Per-step keys are folded in from the env-step count inside the jitted calls: no
    # host-side key splitting (an eager dispatch) on every step.
    init_key, explore_key, learn_key = jax.random.split(jax.random.key(seed), 3)
    state, buffer = init_agent(
        agent,
        init_key,
        describe_space(envs.single_observation_space, "observation_space"),
        describe_space(envs.single_action_space, "action_space"),
        num_envs,
    )
    explore_jit = jax.jit(
        lambda state, obs, steps: explore(
            agent, state, obs, jax.random.fold_in(explore_key, steps), steps
        )
    )
    if off_policy:
        # One call per collection: add the segment, then learn. The buffer is donated, so XLA
        # writes the new rows in place instead of copying the whole buffer on every env step.
        def add_and_learn(state, buffer, segment, steps):
            buffer = buffer.extend(segment)
            key = jax.random.fold_in(learn_key, steps)
            state, stats = off_policy_updates(agent, state, buffer, key, num_updates, steps)
            return state, buffer, mean_stats(stats)

        add_and_learn_jit = jax.jit(add_and_learn, donate_argnums=1)
        add_only_jit = jax.jit(ReplayBuffer.extend, donate_argnums=0)
    else:

        def learn(state, rollout, steps):
            state, stats = agent.update(state, rollout, jax.random.fold_in(learn_key, steps))
            return state, mean_stats(stats)

        learn_jit = jax.jit(learn)

    raw_obs, _ = envs.reset(seed=seed)
    obs = normalizer(raw_obs, update=True)
    episode_return = np.zeros(num_envs)
    num_collections = max(1, total_steps // steps_per_collect)
    collections_per_eval = max(1, round(eval_every / steps_per_collect))
    # Stats stay on the device until the end: fetching them every collection would wait for
    # each update (a host sync per env step for DDPG).
    per_collection: list[dict[str, Any]] = []
    per_eval: list[tuple[int, float]] = []
    env_steps = 0
    start = time.perf_counter()
    for collection in range(num_collections):
        steps: dict[str, list] = {name: [] for name in Rollout._fields}
        finished: list[float] = []
        for _ in range(num_steps):
            state, sample = explore_jit(state, obs, env_steps)
            raw_obs, reward, terminated, truncated, final_obs = _checked_step(
                envs, env_id, env_steps // num_envs, np.asarray(sample.env_action)
            )
            next_obs = normalizer(raw_obs, update=True)
            # The final observation is normalized with the statistics that saw it arrive.
            next_for_learning = normalizer(final_obs, update=False)
            values = (
                obs,
                np.asarray(sample.action),
                reward,
                terminated,
                truncated,
                next_for_learning,
            )
            for name, value in zip(Rollout._fields, values, strict=True):
                steps[name].append(value)
            episode_return += reward
            done = terminated | truncated
            finished.extend(episode_return[done].tolist())
            episode_return[done] = 0.0
            obs = next_obs
            env_steps += num_envs
        segment = [np.stack(steps[name]) for name in Rollout._fields]
        collection_start = env_steps - steps_per_collect
        if off_policy and not updates_take_effect(agent, collection_start):
            # Still in DDPG's random warm-up: no update would take effect, so only store the
            # transitions instead of computing updates that the jitted mask would discard.
            buffer, stats = add_only_jit(buffer, Transition(*segment)), {}
        elif off_policy:
            state, buffer, stats = add_and_learn_jit(
                state, buffer, Transition(*segment), collection_start
            )
        else:
            state, stats = learn_jit(state, Rollout(*segment), env_steps)
        row = {"env_steps": env_steps, "train_return": np.mean(finished) if finished else np.nan}
        per_collection.append(row | stats)
        if (collection + 1) % collections_per_eval == 0 or collection == num_collections - 1:
            eval_return = evaluate_gymnasium(
                agent,
                state,
                env_id,
                normalizer,
                eval_episodes,
                seed + 10_000 + collection,
                env_kwargs,
            )
            per_eval.append((env_steps, eval_return))
            if progress is not None:
                progress(
                    {
                        "env_steps": env_steps,
                        "eval_return": eval_return,
                        "seconds": time.perf_counter() - start,
                        "state": state,
                    }
                )
            if stop is not None and stop(eval_return):
                break
    envs.close()
    per_collection = jax.device_get(per_collection)
    metrics = {
        # Collections during DDPG's warm-up ran no update: their stats are NaN.
        name: np.asarray([float(row.get(name, np.nan)) for row in per_collection])
        for name in dict.fromkeys(name for row in per_collection for name in row)
    }
    metrics["eval/env_steps"] = np.asarray([s for s, _ in per_eval])
    metrics["eval/return"] = np.asarray([r for _, r in per_eval])
    return state, metrics

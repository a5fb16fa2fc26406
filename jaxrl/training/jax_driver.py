"""A training run on JAX-native (gymnax-interface) environments as one pure function.

``make_train(agent, env)`` returns ``train(key) -> (final_state, metrics)``: collection from
``num_envs`` vectorized environments, on-policy updates every ``num_steps`` steps, and
periodic evaluation, all inside one ``lax.scan`` (PureJaxRL's design). Because ``train`` is
pure, ``jax.jit(jax.vmap(train))(keys)`` trains many seeds in one program.

Environments: any gymnax id, or any object with the gymnax interface::

    env.reset(key, params) -> (obs, env_state)
    env.step(key, env_state, action, params)
        -> (obs, env_state, reward, terminated, truncated, info)   # auto-resets;
           info["final_observation"] is the observation before the reset
    env.observation_space(params), env.action_space(params)   # Box / Discrete
    params.max_steps_in_episode                                # evaluation horizon

Metrics are reduced per update and per evaluation (never stacked per env step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import gymnax
import jax
import jax.numpy as jnp
from jax import lax

from jaxrl.algorithms.npg import NPG, OnPolicyState
from jaxrl.core.stats import SummaryStats
from jaxrl.rollout import Rollout
from jaxrl.spaces import describe_space

Array = jax.Array


def make_env(env: Any, env_params: Any = None) -> tuple[Any, Any]:
    """Resolve a gymnax id (``"Pendulum-v1"``) or an environment object to ``(env, params)``."""
    if isinstance(env, str):
        try:
            env, default_params = gymnax.make(env)
        except (ValueError, KeyError) as error:
            raise ValueError(f"env: unknown gymnax environment id {env!r}") from error
        return env, env_params if env_params is not None else default_params
    for method in ("reset", "step", "observation_space", "action_space"):
        if not callable(getattr(env, method, None)):
            raise TypeError(f"env must have the gymnax interface; it lacks {method}()")
    return env, env_params if env_params is not None else env.default_params


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Shape of a training run (all static).

    Attributes:
      num_envs: parallel training environments.
      num_steps: steps per environment between on-policy updates (Tianshou's
        ``step_per_collect = num_envs * num_steps``).
      total_steps: env-step budget; the run does ``total_steps // (num_envs * num_steps)``
        updates, rounded down to a multiple of the evaluation interval.
      eval_every: env steps between evaluations (rounded to whole updates).
      eval_episodes: evaluation episodes (run in parallel).
    """

    num_envs: int = 16
    num_steps: int = 128
    total_steps: int = 250_000
    eval_every: int = 50_000
    eval_episodes: int = 10

    def __post_init__(self) -> None:
        for name in ("num_envs", "num_steps", "total_steps", "eval_every", "eval_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive int, got {value!r}")

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def updates_per_eval(self) -> int:
        return max(1, round(self.eval_every / self.steps_per_update))

    @property
    def num_evals(self) -> int:
        num = self.total_steps // self.steps_per_update // self.updates_per_eval
        if num < 1:
            raise ValueError(
                f"TrainConfig.total_steps={self.total_steps} is less than one evaluation "
                f"interval ({self.updates_per_eval * self.steps_per_update} env steps)"
            )
        return num


def evaluate(
    agent: NPG, state: OnPolicyState, env: Any, env_params: Any, key: Array, num_episodes: int
) -> Array:
    """Mean undiscounted return of ``num_episodes`` parallel episodes (deterministic actions if
    ``agent.deterministic_eval``). Each episode runs until its first termination or truncation,
    at most ``env_params.max_steps_in_episode`` steps."""
    reset_key, run_key = jax.random.split(key)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(reset_key, num_episodes), env_params
    )

    def step(carry: tuple, step_key: Array) -> tuple[tuple, None]:
        obs, env_state, returns, running = carry
        act_key, env_key = jax.random.split(step_key)
        action = agent.act(state, obs, act_key, agent.deterministic_eval)
        obs, env_state, reward, terminated, truncated, _ = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(jax.random.split(env_key, num_episodes), env_state, action, env_params)
        returns = returns + jnp.where(running, reward, 0.0)
        running = running & ~(terminated | truncated)
        return (obs, env_state, returns, running), None

    init = (obs, env_state, jnp.zeros(num_episodes), jnp.ones(num_episodes, bool))
    horizon = int(env_params.max_steps_in_episode)
    (_, _, returns, _), _ = lax.scan(step, init, jax.random.split(run_key, horizon))
    return jnp.mean(returns)


def make_train(
    agent: NPG,
    env: Any,
    config: TrainConfig = TrainConfig(),
    env_params: Any = None,
    progress: Callable[[dict], None] | None = None,
) -> Callable[[Array], tuple[OnPolicyState, dict[str, Array]]]:
    """Build ``train(key) -> (final_state, metrics)`` for an on-policy agent (NPG, TRPO).

    Args:
      agent: the algorithm object (its numeric fields may be traced: vmap over agents to
        sweep hyperparameters).
      env: a gymnax id or an environment with the gymnax interface.
      config: the run's shape.
      env_params: environment parameters (default: the environment's defaults).
      progress: optional host callback, called after every evaluation with a dict of
        ``env_steps`` and ``eval_return`` (via ``jax.debug.callback``; under ``vmap`` it is
        called once per seed).

    Returns:
      ``train(key)``; its metrics hold per-update arrays ``[num_updates]`` (``env_steps``,
      ``train_return``: mean return of episodes finished during the collection, NaN if none,
      and the agent's stats means) and per-evaluation arrays under ``eval/`` (``env_steps``,
      ``return``).
    """
    env, env_params = make_env(env, env_params)
    num_envs, num_steps = config.num_envs, config.num_steps
    updates_per_eval, num_evals = config.updates_per_eval, config.num_evals
    # Described eagerly: gymnax builds space bounds with jnp ops, which would be traced.
    observation_space = describe_space(env.observation_space(env_params), "observation_space")
    action_space = describe_space(env.action_space(env_params), "action_space")

    def train(key: Array) -> tuple[OnPolicyState, dict[str, Array]]:
        init_key, reset_key, run_key = jax.random.split(key, 3)
        state = agent.init(init_key, observation_space, action_space)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, num_envs), env_params
        )
        episode_return = jnp.zeros(num_envs)

        def env_step(carry: tuple, step_key: Array) -> tuple[tuple, tuple]:
            state, obs, env_state, episode_return = carry
            act_key, env_key = jax.random.split(step_key)
            sample = agent.sample_actions(state, obs, act_key)
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
                env.step, in_axes=(0, 0, 0, None)
            )(jax.random.split(env_key, num_envs), env_state, sample.env_action, env_params)
            transition = Rollout(
                obs=obs,
                action=sample.action,
                reward=reward.astype(jnp.float32),
                terminated=terminated,
                truncated=truncated,
                next_obs=info["final_observation"],
            )
            episode_return = episode_return + reward
            done = terminated | truncated
            finished = (jnp.sum(jnp.where(done, episode_return, 0.0)), jnp.sum(done))
            episode_return = jnp.where(done, 0.0, episode_return)
            return (state, next_obs, env_state, episode_return), (transition, finished)

        def update_step(carry: tuple, update_key: Array) -> tuple[tuple, dict]:
            state, obs, env_state, episode_return = carry
            collect_key, learn_key = jax.random.split(update_key)
            (state, obs, env_state, episode_return), (rollout, finished) = lax.scan(
                env_step,
                (state, obs, env_state, episode_return),
                jax.random.split(collect_key, num_steps),
            )
            state, stats = agent.update(state, rollout, learn_key)
            return_sum, episodes = jnp.sum(finished[0]), jnp.sum(finished[1])
            metrics = {
                "env_steps": (state.num_updates * num_envs * num_steps).astype(jnp.int32),
                "train_return": jnp.where(
                    episodes > 0, return_sum / jnp.maximum(episodes, 1), jnp.nan
                ),
                **{
                    name: (value.mean if isinstance(value, SummaryStats) else value)
                    for name, value in stats.items()
                },
            }
            return (state, obs, env_state, episode_return), metrics

        def eval_period(carry: tuple, period_key: Array) -> tuple[tuple, tuple]:
            updates_key, eval_key = jax.random.split(period_key)
            carry, metrics = lax.scan(
                update_step, carry, jax.random.split(updates_key, updates_per_eval)
            )
            state = carry[0]
            eval_return = evaluate(agent, state, env, env_params, eval_key, config.eval_episodes)
            eval_steps = (state.num_updates * num_envs * num_steps).astype(jnp.int32)
            if progress is not None:
                jax.debug.callback(
                    lambda steps, ret: progress(
                        {"env_steps": int(steps), "eval_return": float(ret)}
                    ),
                    eval_steps,
                    eval_return,
                )
            return carry, (metrics, {"eval/env_steps": eval_steps, "eval/return": eval_return})

        carry = (state, obs, env_state, episode_return)
        carry, (per_update, per_eval) = lax.scan(
            eval_period, carry, jax.random.split(run_key, num_evals)
        )
        per_update = jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[2:]), per_update)
        return carry[0], {**per_update, **per_eval}

    return train

"""The drivers' evaluation, one home for both: the mean undiscounted return of a policy over
fresh episodes. Not public: a trained policy's evaluation is :func:`jaxrl.evaluate_policy`
(gymnax, Brax and gymnasium alike), which runs on these.

- :func:`evaluate`: one seed's policy on JAX environments, pure (the jitted run evaluates
  with it after every period; :func:`jax_evaluation_program` vmaps it over seeds for
  ``JaxLoop.evaluate``).
- :func:`evaluate_gymnasium`: on host environments (gymnasium, EnvPool), every seed's
  episodes in one vector env, their actions in one jitted call per step (the host loop's
  evaluations and ``HostLoop.evaluate``).

Each episode counts until its first end. The policy acts deterministically where the agent
evaluates so (``agent.evaluates_deterministically``: NPG/TRPO with ``deterministic_eval``,
DDPG always) unless told otherwise, on observations normalized by the run's statistics,
frozen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxrl.algorithms.protocol import Agent
from jaxrl.core.normalization import RunningMeanStd, normalize_observations
from jaxrl.core.prng import bucketed_keys
from jaxrl.core.tree import strong_types
from jaxrl.envs.host import HostVectorEnv, checked_step, make_host_env
from jaxrl.training.programs import compiled

Array = jax.Array


def _step_without_reset(env: Any) -> Callable:
    """``(key, state, action, params) -> (obs, state, reward, terminated, truncated)``.

    Evaluation stops counting an episode at its first end, so it needs no auto-reset: for
    gymnax environments this is ``step_env`` with the step key ``env.step`` would give it
    (the same numbers, without tracing a reset every step); other environments use ``step``.
    """
    if not (
        callable(getattr(env, "step_env", None)) and callable(getattr(env, "is_truncated", None))
    ):
        return lambda key, state, action, params: env.step(key, state, action, params)[:5]

    def step(key: Array, state: Any, action: Array, params: Any) -> tuple:
        step_key, _ = jax.random.split(key)  # env.step's split: its key for step_env
        obs, state, reward, terminated, _ = env.step_env(step_key, state, action, params)
        return obs, state, reward, terminated, env.is_truncated(state, params)

    return step


class Episodes(NamedTuple):
    """``E`` evaluation episodes under way (leaves ``[E, ...]``): their observations,
    environment states, returns so far and whether each is still running (an episode counts
    until its first end)."""

    obs: Array
    env_state: Any
    returns: Array
    running: Array


def start_episodes(
    env: Any, env_params: Any, key: Array, num_episodes: int
) -> tuple[Episodes, Array]:
    """``num_episodes`` fresh episodes from ``key``, and the ``[horizon]`` keys of their
    steps (``horizon = env_params.max_steps_in_episode``: every episode has ended by then)."""
    reset_key, run_key = jax.random.split(key)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(reset_key, num_episodes), env_params
    )
    episodes = Episodes(
        obs, strong_types(env_state), jnp.zeros(num_episodes), jnp.ones(num_episodes, bool)
    )
    return episodes, jax.random.split(run_key, int(env_params.max_steps_in_episode))


def step_episodes(
    agent: Agent,
    state: Any,
    env: Any,
    env_params: Any,
    obs_stats: RunningMeanStd | None,
    deterministic: bool | Array,
    episodes: Episodes,
    step_key: Array,
) -> Episodes:
    """The episodes one step on, the policy (``state``) acting on observations normalized by
    the frozen ``obs_stats``; an ended episode's return stays as it was."""
    num_episodes = episodes.returns.shape[0]
    act_key, env_key = jax.random.split(step_key)
    obs = episodes.obs
    if obs_stats is not None:
        obs = normalize_observations(obs_stats, obs, update=False)[1]
    action = agent.policy(state, obs, act_key, deterministic)
    obs, env_state, reward, terminated, truncated = jax.vmap(
        _step_without_reset(env), in_axes=(0, 0, 0, None)
    )(jax.random.split(env_key, num_episodes), episodes.env_state, action, env_params)
    returns = episodes.returns + jnp.where(episodes.running, reward, 0.0)
    running = episodes.running & ~(terminated | truncated)
    return Episodes(obs, env_state, returns, running)


def evaluate(
    agent: Agent,
    state: Any,
    env: Any,
    env_params: Any,
    key: Array,
    num_episodes: int,
    obs_stats: RunningMeanStd | None = None,
    deterministic: bool | Array | None = None,
) -> Array:
    """Mean undiscounted return of ``num_episodes`` parallel episodes. By default NPG/TRPO
    act deterministically if ``agent.deterministic_eval``; DDPG always acts without noise
    (Tianshou's test collector); ``deterministic`` (a bool, or a traced one) overrides it.
    Each episode runs until its first termination or truncation, at most
    ``env_params.max_steps_in_episode`` steps. With ``obs_stats`` the policy sees
    observations normalized by those (frozen) statistics."""
    if deterministic is None:
        deterministic = agent.evaluates_deterministically
    episodes, step_keys = start_episodes(env, env_params, key, num_episodes)
    policy = (agent, state, env, env_params, obs_stats, deterministic)
    episodes, _ = lax.scan(lambda e, k: (step_episodes(*policy, e, k), None), episodes, step_keys)
    return jnp.mean(episodes.returns)


def jax_evaluation_program(
    structure: Any,
    env: Any,
    env_params: Any,
    episodes: int,
    static: bool | None,
    placement: Any = None,
) -> Callable:
    """``(leaves, state [S], obs_stats [S], keys [S], deterministic) -> returns [S]``, jitted,
    for agents of one ``structure`` (their pytree definition: class and static fields),
    whose ``leaves`` (numeric hyperparameters) are arguments: the settings of a sweep group
    share the program.

    With ``static=None``, ``deterministic`` is a traced bool, so that the deterministic and
    the stochastic evaluations (the step-0 and the final ones) share one compiled program;
    otherwise the policy acts as ``static`` says and the argument is ignored. ``placement``
    (a :class:`jaxrl.training.sharding.SeedPlacement`) splits the seeds over the devices
    of a job of several processes; ``env``, ``env_params``: resolved by
    :func:`jaxrl.envs.make_env`."""

    def one(
        leaves: list, state: Any, stats: Any, key: jax.Array, deterministic: jax.Array
    ) -> jax.Array:
        agent = jax.tree_util.tree_unflatten(structure, leaves)
        mode = deterministic if static is None else static
        return evaluate(agent, state, env, env_params, key, episodes, stats, mode)

    # The same numbers as over_seeds' programs draw, compiled as fewer kernels on a CPU.
    seeds = bucketed_keys(jax.vmap(one, in_axes=(None, 0, 0, 0, None)))
    if placement is None:
        return jax.jit(seeds)
    return placement.jit(seeds, split=(False, True, True, True, False))


@dataclasses.dataclass
class ObservationNormalizer:
    """Host-side observation normalization of one stream of observations (or none): the
    same arithmetic as :func:`jaxrl.core.normalize_observations`, for code outside jit."""

    enabled: bool
    stats: RunningMeanStd | None = None

    def __call__(self, obs: np.ndarray, update: bool) -> np.ndarray:
        if not self.enabled:
            return np.asarray(obs, np.float32)
        if self.stats is None:
            self.stats = RunningMeanStd.create(np.shape(obs)[1:])
        self.stats, normalized = normalize_observations(self.stats, obs, update)
        return np.asarray(normalized)


def split_seeds(x: np.ndarray, num_seeds: int) -> np.ndarray:
    """``[S * N, ...]`` host environments' arrays (laid out seed after seed) as
    ``[S, N, ...]``."""
    return x.reshape(num_seeds, -1, *x.shape[1:])


def join_seeds(x: Any) -> np.ndarray:
    """``[S, N, ...]`` per-seed arrays as ``[S * N, ...]`` (the inverse of :func:`split_seeds`)."""
    x = np.asarray(x)
    return x.reshape(-1, *x.shape[2:])


def evaluate_gymnasium(
    agent: Agent,
    state: Any,
    env_id: str,
    normalizer: ObservationNormalizer | RunningMeanStd | None,
    num_episodes: int,
    seed: int,
    env_kwargs: dict[str, Any] | None = None,
    *,
    env_backend: str = "auto",
    num_seeds: int | None = None,
    deterministic: bool | None = None,
) -> Any:
    """Mean return of ``num_episodes`` episodes run in parallel on fresh environments (the
    policy acts deterministically where ``agent.evaluates_deterministically``, or as
    ``deterministic`` says).

    With ``num_seeds=S`` the ``state`` (and the observation statistics) have a leading seed
    axis and the result is the per-seed mean return ``[S]``: all seeds' episodes run in one
    vector env, their actions in one jitted call per step. Environment ``e`` of seed ``i``
    is seeded ``seed + i * num_episodes + e``.
    """
    stacked = num_seeds is not None
    if not stacked:
        state = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], state)
    if isinstance(normalizer, ObservationNormalizer):
        normalizer = normalizer.stats if normalizer.enabled else None
    if normalizer is not None and not stacked:
        normalizer = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], normalizer)
    count = num_seeds or 1
    if deterministic is None:
        deterministic = agent.evaluates_deterministically
    programs = _evaluation_programs(agent, bool(deterministic))
    env = make_host_env(env_id, count * num_episodes, seed, env_backend, env_kwargs)
    try:
        # Seed i's actions use key(seed + i * num_episodes): the same alone or stacked.
        keys = jnp.stack([jax.random.key(seed + i * num_episodes) for i in range(count)])
        returns = _run_evaluation(programs, env, state, normalizer, keys)
    finally:
        env.close()
    means = returns.mean(axis=1)
    return means if stacked else float(means[0])


def _evaluation_programs(agent: Agent, deterministic: bool) -> Callable:
    """The jitted evaluation policy of ``agent``, built once per agent and mode (not per
    evaluation), kept in the drivers' cache (:func:`jaxrl.training.programs.compiled`)."""

    def actions(state, stats, raw, keys, step):
        def one_seed(state, stats, raw, key):
            _, obs = normalize_observations(stats, raw, update=False)
            key = jax.random.fold_in(key, step)
            return agent.policy(state, obs, key, deterministic)

        return jax.vmap(one_seed)(state, stats, raw, keys)

    build = lambda: jax.jit(bucketed_keys(actions))  # noqa: E731
    return compiled(("host evaluation", agent, deterministic), build)[0]


def _run_evaluation(
    actions: Callable, env: HostVectorEnv, state: Any, stats: Any, keys: jax.Array
) -> np.ndarray:
    """Returns ``[S, E]`` of one episode per environment (environments laid out seed after
    seed)."""
    obs = env.reset()
    returns = np.zeros(env.num_envs)
    running = np.ones(env.num_envs, bool)
    num_seeds = keys.shape[0]
    step = 0
    while running.any():
        action = actions(state, stats, split_seeds(obs, num_seeds), keys, step)
        out = checked_step(env, step, join_seeds(action))
        returns += np.where(running, out.reward, 0.0)
        running &= ~(out.terminated | out.truncated)
        obs = out.obs
        step += 1
    return returns.reshape(num_seeds, -1)

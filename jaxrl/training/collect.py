"""Collecting on-policy rollouts with an agent's own policy: the drivers' collection, for
research code that owns its training loop.

``make_collector(agent, env, num_steps)`` returns a collector with
``init(...) -> env_state`` and ``collect(agent_state, env_state, key) -> (rollout, env_state)``;
``rollout`` is a :class:`jaxrl.Rollout` ``[num_steps, num_envs, ...]`` that
``agent.update(agent_state, rollout, key)`` learns from::

    collector = make_collector(agent, env, num_steps=128)
    env_state = collector.init(...)            # key (JAX envs) or seed (host envs)
    for _ in range(100):
        key, collect_key, update_key = jax.random.split(key, 3)
        rollout, env_state = collector.collect(agent_state, env_state, collect_key)
        agent_state, stats = update(agent_state, rollout, update_key)

What a collected rollout holds (Tianshou's semantics, the same as both training drivers
give their agents, from the same functions below):

- ``action`` is the policy's raw sample (``agent.explore(...).action``, before bounding and
  scaling); the environment received the bounded, scaled ``env_action``;
- ``terminated`` (no bootstrap) and ``truncated`` (time limit, bootstrap kept) as the
  environment reported them;
- ``next_obs`` is the observation the step reached: for a step that ended an episode, the
  final observation of that episode (not the first one of the next, which is the next
  step's ``obs``).

Environments:

- JAX-native (:func:`jaxrl.envs.make_env`: a gymnax id such as ``"Pendulum-v1"``, a Brax id
  ``"brax:NAME"``, or an object with the gymnax interface): a :class:`JaxCollector` of pure
  functions; ``collect`` is jittable (``jax.jit(collector.collect)``, or inside a jitted
  training step) and vmappable. ``num_envs`` environments are stepped as one vmapped batch.
- Host (a gymnasium vector env, an EnvPool env, or :func:`jaxrl.envs.make_host_env`'s): a
  :class:`HostCollector`, a Python object with the same methods (the policy is one jitted
  call per step). gymnasium vector envs must auto-reset in the same step
  (``gym.make_vec(..., vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})``);
  any other mode is refused, since it would hand the policy a step without a transition.
  EnvPool resets on the next step; the collector resets ended environments itself at once.
  Both are adopted by :func:`jaxrl.envs.host_vector_env`.

Observation normalization (``normalize_obs=True``, off by default) is Tianshou's running
normalization (:func:`jaxrl.core.normalize_observations`), as in the drivers: the statistics
live in ``env_state.obs_stats``, are updated with every observation as it arrives, and the
rollout's ``obs`` and ``next_obs`` are normalized (so the agent learns on what it acted on).
Acting outside the collector (evaluation, deployment) must normalize the same way, with the
statistics frozen: ``normalize_observations(env_state.obs_stats, obs, update=False)[1]``.

Episode returns: ``env_state.last_return [N]`` is the return of the last episode each
environment finished (NaN until it has finished one); ``env_state.episode_return`` is the
running one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxrl.algorithms.protocol import Agent, learns_from_replay
from jaxrl.core._checks import check_bool, check_int
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.envs.host import EnvPoolVectorEnv, GymnasiumVectorEnv, host_vector_env, is_envpool
from jaxrl.envs.jax_envs import make_env
from jaxrl.rollout import Rollout
from jaxrl.spaces import SpaceSpec, describe_space
from jaxrl.training.env_step import (
    host_step,
    make_jax_step,
    observe,
    observe_and_act,
    reset_jax_envs,
    stack_steps,
)

Array = jax.Array

__all__ = [
    "CollectorState",
    "HostCollector",
    "JaxCollector",
    "make_collector",
]


class CollectorState(NamedTuple):
    """Where collection stands between ``collect`` calls (a pytree).

    Attributes:
      obs: ``[N, *obs_shape]`` float32, what the policy acts on next (normalized when the
        collector normalizes observations).
      env_state: the environments' state (JAX envs: the vmapped gymnax state; host envs:
        None, the environments keep their own state).
      obs_stats: the observation statistics (:class:`jaxrl.core.RunningMeanStd`) when the
        collector normalizes observations, else None.
      episode_return: ``[N]`` float32, the return of each environment's running episode.
      last_return: ``[N]`` float32, the return of the last episode each environment
        finished, NaN until it has finished one.
      env_steps: int32 scalar, env steps collected so far (``num_envs`` per vector step).
    """

    obs: Array
    env_state: Any
    obs_stats: RunningMeanStd | None
    episode_return: Array
    last_return: Array
    env_steps: Array


def _initial_state(
    obs: Array, env_state: Any, obs_stats: RunningMeanStd | None, num_envs: int
) -> CollectorState:
    return CollectorState(
        obs=obs,
        env_state=env_state,
        obs_stats=obs_stats,
        episode_return=jnp.zeros(num_envs, jnp.float32),
        last_return=jnp.full(num_envs, jnp.nan, jnp.float32),
        env_steps=jnp.zeros((), jnp.int32),
    )


def _check_agent_state(agent_state: Any, observation: SpaceSpec, action: SpaceSpec) -> None:
    """The agent state must be built for the collector's spaces (checked at trace time)."""
    for name, spec in (("observation_space", observation), ("action_space", action)):
        got = getattr(agent_state, name, None)
        if isinstance(got, SpaceSpec) and got != spec:
            raise ValueError(
                f"agent_state was initialized for {name} {got}, but the collector's "
                f"environment has {spec}: agent.init(key, collector.observation_space, "
                "collector.action_space)"
            )


def _check_env_state(env_state: Any, num_envs: int, obs_shape: tuple[int, ...]) -> None:
    if not isinstance(env_state, CollectorState):
        raise TypeError(
            "env_state must be the CollectorState that collector.init or the last "
            f"collector.collect returned, got {type(env_state).__name__}"
        )
    expected = (num_envs, *obs_shape)
    if tuple(np.shape(env_state.obs)) != expected:
        raise ValueError(
            f"env_state.obs must have shape {list(expected)} (num_envs, *obs_shape), got "
            f"{list(np.shape(env_state.obs))}: an env_state of another collector?"
        )


class JaxCollector(NamedTuple):
    """A collector of JAX-native environments: pure, jittable functions.

    Attributes:
      init: ``key -> CollectorState``: reset the ``num_envs`` environments (environment
        ``j`` with ``jax.random.split(key, num_envs)[j]``).
      collect: ``(agent_state, env_state, key) -> (rollout, env_state)``: ``num_steps``
        vector steps with the agent's exploration (step ``t`` with
        ``jax.random.split(key, num_steps)[t]``) as one ``lax.scan``; ``rollout`` is a
        :class:`jaxrl.Rollout` ``[num_steps, num_envs, ...]``. Pure: jit it, or call it
        inside a jitted training step.
      num_envs: the rollout's environments ``N``.
      num_steps: the rollout's steps ``T``.
      observation_space: the environment's observation space (a gymnax one), for
        ``agent.init(key, observation_space, action_space)``.
      action_space: its action space.
      env: the environment (for :func:`jaxrl.training.evaluation.evaluate`).
      env_params: its parameters.
    """

    init: Callable[[Array], CollectorState]
    collect: Callable[[Any, CollectorState, Array], tuple[Rollout, CollectorState]]
    num_envs: int
    num_steps: int
    observation_space: Any
    action_space: Any
    env: Any
    env_params: Any


def _make_jax_collector(
    agent: Agent, env: Any, num_steps: int, num_envs: int, env_params: Any, normalize_obs: bool
) -> JaxCollector:
    env, env_params = make_env(env, env_params)
    with jax.ensure_compile_time_eval():
        observation_space = env.observation_space(env_params)
        action_space = env.action_space(env_params)
        observation_spec = describe_space(observation_space, "observation_space")
        action_spec = describe_space(action_space, "action_space")
    step = make_jax_step(agent, env, env_params, num_envs)

    def init(key: Array) -> CollectorState:
        stats = RunningMeanStd.create(observation_spec.shape) if normalize_obs else None
        obs, env_state, obs_stats = reset_jax_envs(env, env_params, key, num_envs, stats)
        return _initial_state(obs, env_state, obs_stats, num_envs)

    def collect(
        agent_state: Any, env_state: CollectorState, key: Array
    ) -> tuple[Rollout, CollectorState]:
        _check_agent_state(agent_state, observation_spec, action_spec)
        _check_env_state(env_state, num_envs, observation_spec.shape)

        def one_step(state: CollectorState, step_key: Array) -> tuple[CollectorState, Rollout]:
            out = step(
                agent_state,
                state.obs,
                state.env_state,
                state.obs_stats,
                state.episode_return,
                state.env_steps,
                step_key,
            )
            state = CollectorState(
                obs=out.obs,
                env_state=out.env_state,
                obs_stats=out.obs_stats,
                episode_return=out.episode_return,
                last_return=jnp.where(out.done, out.ended_return, state.last_return),
                env_steps=out.env_steps,
            )
            return state, out.transition

        env_state, rollout = lax.scan(one_step, env_state, jax.random.split(key, num_steps))
        return rollout, env_state

    return JaxCollector(
        init, collect, num_envs, num_steps, observation_space, action_space, env, env_params
    )


class HostCollector:
    """A collector of host environments (gymnasium vector envs, EnvPool): the methods of
    :class:`JaxCollector` on a Python object, the policy one jitted call per vector step.

    The environments keep their own state, so an ``env_state`` is good for one ``collect``:
    pass the one the last call returned (an older one is refused). The caller owns ``env``
    and closes it.

    Attributes:
      env: the environments (:func:`~jaxrl.envs.host.host_vector_env`).
      num_envs: the rollout's environments ``N``.
      num_steps: the rollout's steps ``T``.
      observation_space: one environment's observation space (a gymnasium one).
      action_space: its action space.
    """

    def __init__(self, agent: Agent, env: Any, num_steps: int, normalize_obs: bool) -> None:
        self.env = host_vector_env(env)
        self.agent, self.num_steps, self.normalize_obs = agent, num_steps, normalize_obs
        self.num_envs = self.env.num_envs
        self.observation_space = self.env.single_observation_space
        self.action_space = self.env.single_action_space
        self._observation_spec = describe_space(self.observation_space, "observation_space")
        self._action_spec = describe_space(self.action_space, "action_space")
        self._env_steps: int | None = None  # since init; None before it

        def first_action(agent_state: Any, obs: Array, key: Array, env_steps: Array) -> Any:
            return agent.explore(agent_state, obs, jax.random.fold_in(key, env_steps), env_steps)

        def act(carry: tuple, raw_obs: Array, raw_final: Array, env_steps: Array) -> tuple:
            agent_state, obs_stats, key = carry
            agent_state, obs_stats, sample, obs, final = observe_and_act(
                agent, agent_state, obs_stats, raw_obs, raw_final, key, env_steps
            )
            return (agent_state, obs_stats, key), sample, obs, final

        self._first_action = jax.jit(first_action)
        self._act = jax.jit(act)
        self._observe = jax.jit(observe)

    def init(self, seed: int | None = None) -> CollectorState:
        """Reset the environments and start collecting.

        Args:
          seed: gymnasium envs: environment ``j`` is reset with seed ``seed + j`` (None: a
            gymnasium env made by the caller resets unseeded, one of
            :func:`jaxrl.envs.make_host_env` with the seed it was made with). EnvPool envs
            are seeded when made (``envpool.make(..., seed=...)``) and take None here.
        """
        if isinstance(self.env, EnvPoolVectorEnv):
            if seed is not None:
                raise ValueError(
                    f"seed: EnvPool environments are seeded when made (envpool.make(..., "
                    f"seed=...)); pass seed=None, got {seed!r}"
                )
        elif seed is not None:
            self.env._seed = seed
        raw = self.env.reset()
        stats = RunningMeanStd.create(self._observation_spec.shape) if self.normalize_obs else None
        obs_stats, obs, _ = self._observe(stats, raw, raw)
        self._env_steps = 0
        return _initial_state(obs, None, obs_stats, self.num_envs)

    def collect(
        self, agent_state: Any, env_state: CollectorState, key: Array
    ) -> tuple[Rollout, CollectorState]:
        """``num_steps`` vector steps with the agent's exploration; the action for the
        observation after ``n`` env steps uses the key ``jax.random.fold_in(key, n)``.

        Returns ``(rollout, env_state)``: a :class:`jaxrl.Rollout`
        ``[num_steps, num_envs, ...]`` of device arrays, and the state to pass next.
        """
        if self._env_steps is None:
            raise RuntimeError("collector.init() must be called before collector.collect()")
        _check_agent_state(agent_state, self._observation_spec, self._action_spec)
        _check_env_state(env_state, self.num_envs, self._observation_spec.shape)
        if int(env_state.env_steps) != self._env_steps:
            raise ValueError(
                f"env_state is from env step {int(env_state.env_steps)} but the host "
                f"environments are at env step {self._env_steps}: they cannot go back, so "
                "pass the env_state the last collect (or init) returned"
            )
        env_steps, obs = self._env_steps, env_state.obs
        _, sample = self._first_action(agent_state, obs, key, env_steps)
        carry = (agent_state, env_state.obs_stats, key)
        episode_return = np.asarray(env_state.episode_return).copy()
        last_return = np.asarray(env_state.last_return).copy()
        steps = []
        for _ in range(self.num_steps):
            carry, sample, obs, transition = host_step(
                self.env, self._act, carry, sample, obs, env_steps, self.num_envs
            )
            env_steps += self.num_envs
            steps.append(transition)
            episode_return += transition.reward
            done = transition.terminated | transition.truncated
            last_return[done] = episode_return[done]
            episode_return[done] = 0.0
        self._env_steps = env_steps
        rollout = Rollout(*(jnp.asarray(stack_steps(f)) for f in zip(*steps, strict=True)))
        env_state = CollectorState(
            obs=obs,
            env_state=None,
            obs_stats=carry[1],
            episode_return=jnp.asarray(episode_return, jnp.float32),
            last_return=jnp.asarray(last_return, jnp.float32),
            env_steps=jnp.asarray(env_steps, jnp.int32),
        )
        return rollout, env_state


def make_collector(
    agent: Agent,
    env: Any,
    num_steps: int,
    *,
    num_envs: int | None = None,
    env_params: Any = None,
    normalize_obs: bool = False,
) -> JaxCollector | HostCollector:
    """A collector of on-policy :class:`jaxrl.Rollout` s with ``agent``'s own policy.

    Args:
      agent: an on-policy algorithm, one that does not learn from replay (NPG, TRPO:
        :func:`jaxrl.algorithms.protocol.learns_from_replay` is False).
      env: a gymnax id (``"Pendulum-v1"``), a Brax id (``"brax:hopper"``) or an object with
        the gymnax interface (-> :class:`JaxCollector`); or a gymnasium vector env made with
        same-step auto-reset, an EnvPool env, or :func:`jaxrl.envs.make_host_env`'s
        (-> :class:`HostCollector`; see :func:`~jaxrl.envs.host.host_vector_env`).
      num_steps: vector steps per rollout (``T``).
      num_envs: JAX environments stepped together (``N``; required for JAX envs). Host envs
        have their own count; if given it must match.
      env_params: the JAX environment's parameters (default: its defaults).
      normalize_obs: Tianshou's running observation normalization (module docstring).

    Raises:
      TypeError: an off-policy agent, an environment of an unknown kind, or a
        ``normalize_obs`` that is no bool.
      ValueError: bad ``num_steps``/``num_envs``, or a gymnasium vector env without
        same-step auto-reset.
    """
    if learns_from_replay(agent):
        raise TypeError(
            f"agent: make_collector collects on-policy rollouts (learning_mode 'on_policy', "
            f"NPG/TRPO), got {type(agent).__name__} with learning_mode 'off_policy', whose "
            "exploration state (noise) changes as it acts: use its training drivers"
        )
    check_int("num_steps", num_steps, low=1)
    check_int("num_envs", num_envs, low=1, optional=True)
    check_bool("normalize_obs", normalize_obs)
    if isinstance(env, gym.Env | gym.vector.VectorEnv | GymnasiumVectorEnv | EnvPoolVectorEnv) or (
        is_envpool(env)
    ):
        if env_params is not None:
            raise ValueError("env_params is for JAX environments (gymnax, Brax); env is a host env")
        collector = HostCollector(agent, env, num_steps, normalize_obs)
        if num_envs is not None and num_envs != collector.num_envs:
            raise ValueError(
                f"num_envs={num_envs}, but the host env has {collector.num_envs} environments"
            )
        return collector
    if num_envs is None:
        raise ValueError("num_envs must be given for a JAX environment (how many to step together)")
    return _make_jax_collector(agent, env, num_steps, num_envs, env_params, normalize_obs)

"""A training run on JAX-native (gymnax-interface) environments as one pure function.

``make_train(agent, env)`` returns ``train(key) -> (final_state, metrics)``: collection from
``num_envs`` vectorized environments, learning after every ``num_steps`` vector steps
(on-policy: an update on the fresh rollout; off-policy: the transitions go to a replay buffer
and ``update_per_step`` updates per collected env step follow), and periodic evaluation, all
inside one ``lax.scan`` (PureJaxRL's design). Because ``train`` is
pure, ``jax.jit(jax.vmap(train))(keys)`` trains many seeds in one program
(:func:`jaxrl.training.over_seeds` picks ``jax.vmap`` or ``lax.map`` for the backend).

Environments: any gymnax id, a Brax id (``"brax:hopper"``, :mod:`jaxrl.envs.brax_env`), or
any object with the gymnax interface (:func:`jaxrl.envs.jax_envs.make_env` resolves them)::

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
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import checkify

from jaxrl.algorithms.protocol import Agent, check_agent, learns_from_replay
from jaxrl.config.settings import RunLayout, RunSettings
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.envs.jax_envs import make_env
from jaxrl.replay import Transition
from jaxrl.spaces import describe_space
from jaxrl.training.agent_steps import (
    mean_stats,
    off_policy_updates,
    updates_per_collect,
)
from jaxrl.training.env_step import make_jax_step, reset_jax_envs
from jaxrl.training.evaluation import evaluate, start_episodes, step_episodes
from jaxrl.training.seeds import split_seed_key

Array = jax.Array


TrainConfig = RunSettings
"""The run's settings as the drivers take them: :class:`jaxrl.config.settings.RunSettings`
(the one class that declares, validates and counts a run's settings)."""


def checked_call(train: Callable[[Array], Any], keys: Array) -> Any:
    """Run ``train`` jitted under ``checkify`` and raise its first failed check.

    Use it with a train function made with ``TrainConfig(check_finite=True)``: a non-finite
    observation or reward raises ``checkify.JaxRuntimeError`` naming the field and the env
    step, instead of a NaN that spreads through the run. With several ``keys`` the seeds run
    one after another (``lax.map``): checkify cannot check the batched ``while_loop`` s of a
    vmapped run, and the checked mode is for finding faults, not for speed.
    """
    fn = (lambda ks: lax.map(train, ks)) if keys.ndim > 0 else train
    error, out = jax.jit(checkify.checkify(fn))(keys)
    error.throw()
    return out


class TrainCarry(NamedTuple):
    """Everything a run carries between evaluation periods (a pytree: checkpoint it to
    resume a run exactly)."""

    state: Any
    buffer: Any  # the replay buffer (off-policy) or None
    obs: Array
    env_state: Any
    episode_return: Array
    env_steps: Array
    key: Array
    obs_stats: Any = None  # RunningMeanStd with TrainConfig(normalize_obs=True), else None


class TrainLoop(NamedTuple):
    """A run cut at its evaluations, for drivers that report, checkpoint or resume.

    Attributes:
      init: ``key -> carry``, the start of a run.
      run_period: ``carry -> (carry, metrics)``: a whole period (``collections_per_period``
        collections with their learning), then one evaluation; ``metrics`` has
        per-collection arrays and scalar ``eval/env_steps``, ``eval/return``.
      num_periods: evaluation periods in the whole run.
      train: ``key -> (final_state, metrics)``, the whole run as one ``lax.scan`` over
        periods (and the shorter last period, where the layout has one).
      agent: the algorithm the loop trains, and env: its environment (together they pick
        how seeds run together: :func:`jaxrl.training.over_seeds`).
      layout: the run's collections and periods (:class:`jaxrl.config.settings.RunLayout`).
      period: ``collections -> run_period`` of that many collections (a static length; the
        shorter last period of a run uses it).
      config: the run's settings, and env_params: the environment's parameters.
    """

    init: Callable[[Array], TrainCarry]
    run_period: Callable[[TrainCarry], tuple[TrainCarry, dict[str, Array]]]
    num_periods: int
    train: Callable[[Array], tuple[Any, dict[str, Array]]]
    agent: Agent | None = None
    env: Any = None
    layout: RunLayout | None = None
    period: Callable[[int], Callable[[TrainCarry], tuple[TrainCarry, dict[str, Array]]]] | None = (
        None
    )
    config: RunSettings | None = None
    env_params: Any = None


def make_train(
    agent: Agent,
    env: Any,
    config: TrainConfig = RunSettings(),
    env_params: Any = None,
    progress: Callable[[dict], None] | None = None,
) -> Callable[[Array], tuple[Any, dict[str, Array]]]:
    """Build ``train(key) -> (final_state, metrics)`` for NPG, TRPO or DDPG.

    ``make_train_loop(...).train``; see :func:`make_train_loop` for the arguments and
    :class:`TrainLoop` to run a training period by period.
    """
    return make_train_loop(agent, env, config, env_params, progress).train


def make_train_loop(
    agent: Agent,
    env: Any,
    config: TrainConfig = RunSettings(),
    env_params: Any = None,
    progress: Callable[[dict], None] | None = None,
) -> TrainLoop:
    """Build the :class:`TrainLoop` of a run of NPG, TRPO or DDPG.

    Args:
      agent: the algorithm object (its numeric fields may be traced: vmap over stacked agents
        to sweep hyperparameters).
      env: a gymnax id, a Brax id (``"brax:NAME"``, Brax's default ``generalized`` backend;
        pass ``jaxrl.envs.BraxEnv(name, backend=...)`` for another) or an environment with
        the gymnax interface.
      config: the run's shape.
      env_params: environment parameters (default: the environment's defaults).
      progress: optional host callback, called after every evaluation with a dict of
        ``env_steps`` and ``eval_return`` (via ``jax.debug.callback``; under ``vmap`` it is
        called once per seed).

    Returns:
      A :class:`TrainLoop`. The metrics of ``train(key)`` hold per-collection arrays
      ``[num_collections]`` (``env_steps``; ``train_return``: mean return of the episodes
      that finished during the collection, NaN if none; the means of the agent's stats,
      averaged over the updates of the collection for off-policy agents) and per-evaluation
      arrays ``eval/env_steps`` and ``eval/return``.
    """
    check_agent(agent)
    if not isinstance(config, RunSettings):
        raise TypeError(f"config must be a TrainConfig(num_envs=..., ...), got {config!r:.60}")
    env, env_params = make_env(env, env_params)
    run = _JittedRun.build(agent, env, env_params, config, progress)
    return TrainLoop(
        init=run.init,
        run_period=run.period(run.layout.collections_per_period),
        num_periods=run.layout.num_periods,
        train=run.train,
        agent=agent,
        env=env,
        layout=run.layout,
        period=run.period,
        config=config,
        env_params=env_params,
    )


# Metrics of a collection are scalars, ``[num_collections]`` arrays once a run stacks them;
# those of an evaluation (``eval/...``) are scalars per period, ``[num_periods]`` over a run.
Metrics = dict[str, Array]
RunPeriod = Callable[[TrainCarry], tuple[TrainCarry, Metrics]]


@dataclasses.dataclass(frozen=True, eq=False)
class _JittedRun:
    """One seed's run (:func:`make_train_loop`), read top to bottom as PureJaxRL's shape::

        train(key)                   init, then lax.scan of run_period over the periods
          run_period(carry)          lax.scan of update_step over a period's collections,
                                     then evaluate
            update_step(carry, key)  lax.scan of env_step (nested) over a collection's
                                     vector steps, then learn
              env_step(carry, key)   one vector step of the num_envs environments

    ``eq=False``: it compares and hashes by identity (``env_params`` may hold arrays).

    Attributes:
      agent, env, env_params, config, progress: as :func:`make_train_loop` received them
        (``env`` resolved by :func:`jaxrl.envs.jax_envs.make_env`).
      layout: the run's collections and periods (``config.layout``).
      observation_space, action_space: the environment's spaces, described eagerly.
      step: one vector step of the environments with the agent's exploration
        (:func:`jaxrl.training.env_step.make_jax_step`, as the collectors take it).
      num_updates: off-policy updates per collection; None for an on-policy agent.
    """

    agent: Agent
    env: Any
    env_params: Any
    config: TrainConfig
    progress: Callable[[dict], None] | None
    layout: RunLayout
    observation_space: Any
    action_space: Any
    step: Callable[..., Any]
    num_updates: int | None

    @classmethod
    def build(
        cls,
        agent: Agent,
        env: Any,
        env_params: Any,
        config: TrainConfig,
        progress: Callable[[dict], None] | None,
    ) -> _JittedRun:
        """Check the run's shape and the agent's update ratio, describe the spaces and make
        the env step: a bad config raises here, before anything is traced."""
        num_updates = None
        if learns_from_replay(agent):
            num_updates = updates_per_collect(agent, config.steps_per_collect)
        # Described eagerly: gymnax builds space bounds with jnp ops, which would be traced.
        # (make_train may itself be called under a trace: vmapped hyperparameter sweeps.)
        with jax.ensure_compile_time_eval():
            observation_space = describe_space(
                env.observation_space(env_params), "observation_space"
            )
            action_space = describe_space(env.action_space(env_params), "action_space")
        step = make_jax_step(agent, env, env_params, config.num_envs, config.check_finite)
        spaces = (observation_space, action_space)
        return cls(
            agent, env, env_params, config, progress, config.layout, *spaces, step, num_updates
        )

    def train(self, key: Array) -> tuple[Any, Metrics]:
        """A whole run from one seed's ``key``: :meth:`init`, a ``lax.scan`` over the whole
        periods, then the shorter last period where the layout has one. Returns the agent's
        final state and the run's metrics: ``[num_collections]`` per collection,
        ``[num_periods]`` per evaluation (``eval/...``)."""
        layout = self.layout
        last = layout.period_collections[-1]
        whole = layout.num_periods - (last != layout.collections_per_period)
        run_period = self.period(layout.collections_per_period)
        carry, metrics = lax.scan(lambda carry, _: run_period(carry), self.init(key), None, whole)
        metrics = _flatten_periods(metrics)
        if whole < layout.num_periods:  # the shorter last period
            carry, tail = self.period(last)(carry)
            metrics = _append_period(metrics, tail)
        return carry.state, metrics

    def init(self, key: Array) -> TrainCarry:
        """The start of a run: one seed's ``key`` split into the agent's initialization, the
        environments' reset and the run's own key; the agent's state (and replay buffer),
        ``N = num_envs`` freshly reset environments, zero returns ``[N]`` and env steps."""
        num_envs = self.config.num_envs
        init_key, reset_key, run_key = split_seed_key(key)
        state, buffer = self.agent.init_training(
            init_key, self.observation_space, self.action_space, num_envs
        )
        stats = None
        if self.config.normalize_obs:
            stats = RunningMeanStd.create(self.observation_space.shape)
        obs, env_state, stats = reset_jax_envs(
            self.env, self.env_params, reset_key, num_envs, stats
        )
        returns, env_steps = jnp.zeros(num_envs), jnp.zeros((), jnp.int32)
        return TrainCarry(state, buffer, obs, env_state, returns, env_steps, run_key, stats)

    def period(self, collections: int) -> RunPeriod:
        """``run_period(carry) -> (carry, metrics)``: ``collections`` (static) of
        :meth:`update_step`, then one evaluation of the agent, reported to ``progress``
        (with ``eval_alongside``, the evaluation of the policy the period started with,
        stepped along with the training steps, :meth:`update_alongside`, and on its own for
        the steps an episode has left after a period shorter than it). The metrics: the
        collections', ``[collections]`` each, and the scalars ``eval/env_steps`` (the env
        steps of the policy evaluated) and ``eval/return``."""

        def run_period(carry: TrainCarry) -> tuple[TrainCarry, Metrics]:
            next_key, learn_key, eval_key = jax.random.split(carry.key, 3)
            learn_keys = jax.random.split(learn_key, collections)
            carry = carry._replace(key=next_key)
            if self.config.eval_alongside:
                evaluated, episodes = carry.env_steps, self.config.eval_episodes
                evaluated_state, evaluated_stats = carry.state, carry.obs_stats
                episodes, step_keys = start_episodes(self.env, self.env_params, eval_key, episodes)
                update = functools.partial(
                    self.update_alongside, evaluated_state, evaluated_stats, step_keys
                )
                both = (carry, (episodes, jnp.zeros((), jnp.int32)))
                (carry, (episodes, _)), metrics = lax.scan(update, both, learn_keys)
                # A period shorter than an episode: the episodes' steps left, on their own.
                step = self.episode_step(evaluated_state, evaluated_stats)
                left = step_keys[collections * self.config.num_steps :]
                episodes, _ = lax.scan(lambda e, k: (step(e, k), None), episodes, left)
                eval_return = jnp.mean(episodes.returns)
            else:
                carry, metrics = lax.scan(self.update_step, carry, learn_keys)
                evaluated = carry.env_steps
                eval_return = evaluate(
                    self.agent,
                    carry.state,
                    self.env,
                    self.env_params,
                    eval_key,
                    self.config.eval_episodes,
                    carry.obs_stats,
                )
            if self.progress is not None:
                _report_progress(self.progress, evaluated, eval_return)
            return carry, {**metrics, "eval/env_steps": evaluated, "eval/return": eval_return}

        return run_period

    def env_step(self, carry: TrainCarry, step_key: Array) -> tuple[TrainCarry, tuple]:
        """One vector step: the carry moved on by one step of the ``N`` environments, and
        ``(transition, (return_sum, episodes))``: the step's transition (leaves ``[N, ...]``)
        and the summed return and count (scalars) of the episodes that ended."""
        out = self.step(
            carry.state,
            carry.obs,
            carry.env_state,
            carry.obs_stats,
            carry.episode_return,
            carry.env_steps,
            step_key,
        )
        finished = (jnp.sum(jnp.where(out.done, out.ended_return, 0.0)), jnp.sum(out.done))
        carry = carry._replace(
            state=out.agent_state,
            obs=out.obs,
            env_state=out.env_state,
            episode_return=out.episode_return,
            env_steps=out.env_steps,
            obs_stats=out.obs_stats,
        )
        return carry, (out.transition, finished)

    def update_step(self, carry: TrainCarry, key: Array) -> tuple[TrainCarry, Metrics]:
        """One collection and its learning (a ``lax.scan`` body): ``num_steps`` of
        :meth:`env_step`, then :meth:`learn`. Returns the carry and the collection's scalar
        metrics (:func:`_collection_metrics`)."""
        collect_key, learn_key = jax.random.split(key)
        step_keys = jax.random.split(collect_key, self.config.num_steps)
        carry, (rollout, finished) = lax.scan(self.env_step, carry, step_keys)
        carry, stats = self.learn(carry, rollout, learn_key)
        return carry, _collection_metrics(carry.env_steps, finished, stats)

    def update_alongside(
        self, state: Any, obs_stats: Any, step_keys: Array, both: tuple, key: Array
    ) -> tuple[tuple, Metrics]:
        """:meth:`update_step` with evaluation episodes of the policy ``state`` (its
        observation statistics ``obs_stats`` frozen) alongside: ``both = (carry, (episodes,
        t))``, the episodes (:class:`jaxrl.training.evaluation.Episodes`) taking their step
        ``t`` with each vector step of training, with key ``step_keys[t]`` as
        :func:`jaxrl.training.evaluation.evaluate` would (past the last key, every episode
        has ended)."""
        step, last = self.episode_step(state, obs_stats), step_keys.shape[0] - 1

        def env_step(both: tuple, step_key: Array) -> tuple[tuple, tuple]:
            carry, (episodes, t) = both
            carry, out = self.env_step(carry, step_key)
            episodes = step(episodes, step_keys[jnp.minimum(t, last)])
            return (carry, (episodes, t + 1)), out

        collect_key, learn_key = jax.random.split(key)
        step_keys_now = jax.random.split(collect_key, self.config.num_steps)
        (carry, watched), (rollout, finished) = lax.scan(env_step, both, step_keys_now)
        carry, stats = self.learn(carry, rollout, learn_key)
        return (carry, watched), _collection_metrics(carry.env_steps, finished, stats)

    def episode_step(self, state: Any, obs_stats: Any) -> Callable[[Any, Array], Any]:
        """``(episodes, key) -> episodes``: evaluation episodes one step on with the policy
        ``state`` as it evaluates (:func:`jaxrl.training.evaluation.step_episodes`)."""
        deterministic = self.agent.evaluates_deterministically
        policy = (self.agent, state, self.env, self.env_params, obs_stats, deterministic)
        return functools.partial(step_episodes, *policy)

    def learn(self, carry: TrainCarry, rollout: Any, key: Array) -> tuple[TrainCarry, Any]:
        """Learning after a collection (``rollout``: its transitions, leaves ``[T, N, ...]``
        for ``T = num_steps``): on-policy, one ``agent.update`` on it; off-policy, it joins
        the replay buffer and ``num_updates`` updates follow. Returns the carry with the new
        agent state (and buffer) and the updates' stats."""
        if self.num_updates is None:
            state, stats = self.agent.update(carry.state, rollout, key)
            return carry._replace(state=state), stats
        buffer = carry.buffer.extend(Transition(*rollout))
        # Updates take effect after a collection that starts past the warm-up, as on the host
        # driver (and in Tianshou, which collects its warm-up before training).
        start = carry.env_steps - self.layout.steps_per_collect
        agent, updates = self.agent, self.num_updates
        state, stats = off_policy_updates(agent, carry.state, buffer, key, updates, start)
        return carry._replace(state=state, buffer=buffer), stats


def _collection_metrics(env_steps: Array, finished: tuple[Array, Array], stats: Any) -> Metrics:
    """A collection's scalar metrics: ``env_steps`` at its end, ``train_return`` (the mean
    return of the episodes that ended during it, from ``finished = (return_sums [T],
    episode_counts [T])`` of its vector steps; NaN if none ended) and the means of the agent's
    ``stats`` (:func:`jaxrl.training.agent_steps.mean_stats`)."""
    return_sum, episodes = jnp.sum(finished[0]), jnp.sum(finished[1])
    return {
        "env_steps": env_steps,
        "train_return": jnp.where(episodes > 0, return_sum / jnp.maximum(episodes, 1), jnp.nan),
        **mean_stats(stats),
    }


def _report_progress(
    progress: Callable[[dict], None], env_steps: Array, eval_return: Array
) -> None:
    """Call ``progress({"env_steps", "eval_return"})`` on the host (``jax.debug.callback``)."""
    jax.debug.callback(
        lambda steps, ret: progress({"env_steps": int(steps), "eval_return": float(ret)}),
        env_steps,
        eval_return,
    )


def _flatten_periods(metrics: Metrics) -> Metrics:
    """Metrics of ``P`` whole periods, ``[P, C, ...]`` per collection (``C`` collections a
    period), as ``[P * C, ...]``; per evaluation (``eval/...``) they stay ``[P]``."""
    return {
        name: value if name.startswith("eval/") else value.reshape(-1, *value.shape[2:])
        for name, value in metrics.items()
    }


def _append_period(metrics: Metrics, tail: Metrics) -> Metrics:
    """A run's metrics (:func:`_flatten_periods`) with one more period's appended: its
    collections' ``[C', ...]`` after the run's, its evaluation's scalars as one more entry of
    each ``eval/...``."""
    return {
        name: jnp.concatenate([value, tail[name][None] if name.startswith("eval/") else tail[name]])
        for name, value in metrics.items()
    }

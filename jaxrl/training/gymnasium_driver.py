"""Host driver: environments stepped on the host (gymnasium or EnvPool), the agent's jitted
functions on the accelerator (CleanRL/sbx style), for any number of seeds at once.

``train_gymnasium(agent, env_id, num_seeds=S)`` trains ``S`` seeds in one process: seed ``i``
has its own ``num_envs`` environments and its own PRNG key, and all seeds act and learn in
one jitted, vmapped call (one compilation; one dispatch per env step for acting, one per
collection for learning). Every action comes from the policy as the last update left it, as in
Tianshou and the jitted driver: a collection's last step only observes, and the learning call
acts on its observations after the updates. Seed ``i`` of a run with base ``seed`` is the
single-seed run with seed ``seed + i`` (to float rounding). NPG/TRPO update on each fresh
rollout; DDPG keeps one jittable replay buffer per seed on the device and runs
``update_per_step`` updates per collected env step.

Environments come from :func:`jaxrl.envs.make_host_env` (EnvPool or gymnasium).

Observation normalization (Tianshou's MuJoCo setting) is :func:`jaxrl.core.normalize_observations`
inside the jitted acting call, its statistics per seed in the :class:`HostCarry` (with the agent
state and the replay buffer); evaluation uses them without updating them.

:class:`HostLoop` is the driver cut at its evaluations; :func:`train_gymnasium` runs it to
the end.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algorithms.protocol import Agent, check_agent, learns_from_replay
from jaxrl.config.settings import RunSettings, SettingError
from jaxrl.core._checks import check_int
from jaxrl.core.normalization import RunningMeanStd
from jaxrl.core.prng import bucketed_keys
from jaxrl.envs.host import EnvironmentError_, make_host_env, seed_block
from jaxrl.replay import ReplayBuffer, Transition
from jaxrl.rollout import Rollout
from jaxrl.spaces import describe_space
from jaxrl.training.agent_steps import (
    mean_stats,
    off_policy_updates,
    updates_per_collect,
    updates_take_effect,
)
from jaxrl.training.env_step import host_step, observe, observe_and_act, stack_steps
from jaxrl.training.evaluation import ObservationNormalizer, evaluate_gymnasium, split_seeds
from jaxrl.training.jax_driver import TrainConfig
from jaxrl.training.programs import compiled
from jaxrl.training.run import Watch, join_periods, train_periods
from jaxrl.training.seeds import host_seed_keys
from jaxrl.training.sharding import SeedPlacement

__all__ = [
    "EnvironmentError_",
    "HostCarry",
    "HostLoop",
    "ObservationNormalizer",
    "init_host_carry",
    "train_gymnasium",
]

# Environment seeds: training environments use stream 0, evaluation k uses stream k + 1.
_TRAIN_STREAM = 0


class HostCarry(NamedTuple):
    """What the host driver carries on the device between env steps; every leaf has a
    leading seed axis ``[S]``. Checkpoint it to resume a run's learning state.

    Attributes:
      state: the agent state.
      buffer: the replay buffer (off-policy agents) or None.
      obs_stats: the observation statistics (``normalize_obs``) or None.
    """

    state: Any
    buffer: Any
    obs_stats: RunningMeanStd | None


def init_host_carry(
    agent: Agent,
    seeds: list[int],
    observation_space: Any,
    action_space: Any,
    num_envs: int,
    normalize_obs: bool,
) -> HostCarry:
    """The fresh :class:`HostCarry` of seeds ``seeds`` (what :func:`train_gymnasium` starts
    from unless given ``initial``); wrap it in ``jax.eval_shape`` for a checkpoint template."""
    observation_spec = describe_space(observation_space, "observation_space")
    action_spec = describe_space(action_space, "action_space")

    def init(keys: jax.Array) -> HostCarry:
        state, buffer = jax.vmap(
            lambda key: agent.init_training(key, observation_spec, action_spec, num_envs)
        )(keys)
        stats = None
        if normalize_obs:
            stats = jax.vmap(lambda _: RunningMeanStd.create(observation_spec.shape))(keys)
        return HostCarry(state, buffer, stats)

    # One program (run op by op, the initializers compiled a program each: seconds), built
    # once per process for what it closes over (the drivers' cache).
    key = ("host init", agent, observation_spec, action_spec, num_envs, normalize_obs)
    return compiled(key, lambda: jax.jit(init))[0](host_seed_keys(seeds)[0])


# A collection of more vector steps than this reaches the learning program stacked on the host,
# one argument per field (:func:`~jaxrl.training.env_step.stack_steps`); a shorter one (DDPG's:
# one step) goes as its steps, not waited for (stacked, it cost 0.1-0.3 ms more per env step).
STACK_ON_HOST_AFTER = 8


class _Programs:
    """The jitted, seed-vmapped programs of one run, for collections of ``num_steps`` vector
    steps: ``observe_and_act`` after each env step but the last, ``observe`` after the last,
    then ``learn``, which updates and acts on the last observations with the updated policy
    (as in Tianshou and the jitted driver). Keys are arguments and arrays are placed alike in
    every call; the programs are built once per process for what ``_jitted`` reads (the
    drivers' cache), so later runs of the agent, other seeds or resumed, compile nothing."""

    def __init__(self, agent: Agent, seeds: list[int], num_updates: int, num_steps: int) -> None:
        _, explore_keys, learn_keys = host_seed_keys(seeds)
        self.agent, self.num_updates = agent, num_updates
        self.stack_on_host = num_steps > STACK_ON_HOST_AFTER
        key = ("host programs", agent, num_updates, self.stack_on_host)
        act, self._observe_seeds, learn = compiled(key, self._jitted)[0]
        self.observe_and_act = functools.partial(act, explore_keys)
        self.learn = functools.partial(learn, (explore_keys, learn_keys))

    def _jitted(self) -> tuple[Callable, Callable, Callable]:
        """``observe_and_act``, ``observe``, ``learn``: jitted, reading only what the key names."""
        # Random numbers through bucketed keys: Threefry's numbers, fewer kernels on a CPU.
        act = jax.jit(bucketed_keys(self._observe_and_act), donate_argnums=1)
        on_device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])  # SeedPlacement's
        observe_seeds = jax.jit(jax.vmap(observe), out_shardings=on_device)
        learn = self._add_and_learn if learns_from_replay(self.agent) else self._update
        learn = jax.jit(bucketed_keys(learn), donate_argnums=1, static_argnums=4)
        return act, observe_seeds, learn

    def _segment(self, field: Any) -> Any:
        """A field as ``collection`` passed it: ``[S, T, N, ...]``, or its steps to stack."""
        return field if self.stack_on_host else jnp.stack(list(field), axis=1)

    def _observe_and_act(self, explore_keys, carry: HostCarry, raw, raw_final, steps) -> tuple:
        """Normalize what the last env step returned, then act on it (one dispatch):
        :func:`jaxrl.training.env_step.observe_and_act` of every seed."""
        state, stats, sample, obs, final = jax.vmap(
            functools.partial(observe_and_act, self.agent),
            in_axes=(0, 0, 0, 0, 0, None),
        )(carry.state, carry.obs_stats, raw, raw_final, explore_keys, steps)
        return carry._replace(state=state, obs_stats=stats), sample, obs, final

    def observe(self, carry: HostCarry, raw, raw_final, steps) -> tuple:
        """What a collection's last env step returned, normalized: ``observe_and_act``
        without the action (``learn`` takes it, after the updates), placed as its are."""
        stats, obs, final = self._observe_seeds(carry.obs_stats, raw, raw_final)
        return carry._replace(obs_stats=stats), None, obs, final

    def _act(self, explore_keys, state: Any, obs: jax.Array, steps) -> tuple[Any, Any]:
        """Every seed's training actions on ``obs`` after ``steps`` env steps, with the key
        ``fold_in(explore_key, steps)`` (``observe_and_act``'s)."""

        def one_seed(state, obs, explore_key):
            key = jax.random.fold_in(explore_key, steps)
            return self.agent.explore(state, obs, key, steps)

        return jax.vmap(one_seed)(state, obs, explore_keys)

    def _add_and_learn(self, keys, carry: HostCarry, fields: tuple, start, learn: bool, obs, steps):
        """Off-policy: add the collection (started at ``start`` env steps) to the replay
        buffer, run its updates (none when ``learn`` is False: inside the warm-up), then act
        on ``obs`` after ``steps`` env steps with the updated policy."""
        transitions = Transition(*(self._segment(f) for f in fields))
        buffer = jax.vmap(ReplayBuffer.extend)(carry.buffer, transitions)
        state, stats = carry.state, {}
        if learn:

            def one_seed(state, buffer, learn_key):
                key = jax.random.fold_in(learn_key, start)
                agent, updates = self.agent, self.num_updates
                state, stats = off_policy_updates(agent, state, buffer, key, updates)
                return state, mean_stats(stats)

            state, stats = jax.vmap(one_seed)(state, buffer, keys[1])
        state, sample = self._act(keys[0], state, obs, steps)
        return carry._replace(state=state, buffer=buffer), stats, sample

    def _update(self, keys, carry: HostCarry, fields: tuple, steps, _: bool, obs) -> tuple:
        """On-policy: update on the rollout, then act on ``obs`` with the updated policy (the
        next rollout must be on-policy)."""
        rollout = Rollout(*(self._segment(f) for f in fields))

        def one_seed(state, rollout, learn_key):
            return self.agent.update(state, rollout, jax.random.fold_in(learn_key, steps))

        state, stats = jax.vmap(one_seed)(carry.state, rollout, keys[1])
        state, sample = self._act(keys[0], state, obs, steps)
        return carry._replace(state=state), mean_stats(stats), sample

    def collection(self, fields: tuple[list, ...]) -> tuple:
        """A collection's fields (a list of ``[S, N, ...]`` steps each) as ``learn`` takes them:
        stacked on the host into ``[S, T, N, ...]`` past :data:`STACK_ON_HOST_AFTER` steps."""
        if self.stack_on_host:
            return tuple(stack_steps(field, axis=1) for field in fields)
        return fields


_SHAPE_FIELDS = tuple(f.name for f in dataclasses.fields(TrainConfig))


def train_gymnasium(
    agent: Agent,
    env_id: str,
    config: TrainConfig | None = None,
    *,
    seed: int = 0,
    num_seeds: int | None = None,
    env_backend: str = "auto",
    env_kwargs: dict[str, Any] | None = None,
    initial: HostCarry | None = None,
    progress: Callable[[dict], None] | None = None,
    stop: Callable[[Any], bool] | None = None,
    **shape: Any,
) -> tuple[Any, dict[str, np.ndarray]]:
    """Train NPG, TRPO or DDPG on host environments (gymnasium ids; EnvPool where it helps).

    Collects ``num_steps`` vector steps from ``num_envs`` environments per seed with the
    agent's jitted exploration, then learns: NPG/TRPO call ``agent.update`` on the rollout;
    DDPG adds the transitions to its replay buffer and runs ``update_per_step * num_envs *
    num_steps`` updates. Evaluates after every evaluation period
    (:class:`~jaxrl.config.settings.RunLayout`: whole collections; the last period may be
    shorter).

    Args:
      config: the run's shape, the jitted driver's :class:`~jaxrl.training.TrainConfig` (its
        defaults when None; ``check_finite`` is always on here: every env step is checked on
        the host).
      shape: :class:`~jaxrl.training.TrainConfig` fields given as keywords (``num_envs=``,
        ``num_steps=``, ``total_steps=``, ``eval_every=``, ``eval_episodes=``,
        ``normalize_obs=``); they replace ``config``'s.
      num_seeds: ``None`` (one seed, ``seed``; unstacked state and 1-D metrics) or
        ``S >= 1``: seeds ``seed, ..., seed + S - 1`` trained together; the state and every
        metric get a leading seed axis, as ``jax.vmap(make_train(...))`` gives them.
      env_backend: ``"auto"`` (EnvPool for the ids it has when installed), ``"gymnasium"``
        or ``"envpool"``.
      initial: a :class:`HostCarry` (seed axis first) to start from instead of a fresh
        initialization: a resumed run's agent state, replay buffer and statistics.
      progress: optional callback after each evaluation, with the payload of
        :class:`jaxrl.training.run.Watch` (as :func:`jaxrl.training.train_until`):
        ``env_steps``, ``eval_return`` (mean over seeds), ``eval_returns`` (``[S]``),
        ``seconds``, ``state`` (as returned), ``carry`` (the :class:`HostCarry`) and
        ``metrics`` (the period's per-collection metrics, ``[S, collections]``).
      stop: optional Tianshou ``stop_fn``: the run ends after the first evaluation for which
        it returns True. Given the evaluation return (a float) when ``num_seeds`` is None,
        else the evaluation returns so far ``[S, periods]`` (as
        :func:`~jaxrl.training.jax_loop.train_until`).

    Returns:
      ``(state, metrics)`` with per-collection arrays (``env_steps``, ``train_return``, the
      agent's stats means; NaN for collections inside DDPG's warm-up, which run no update)
      and per-evaluation arrays ``eval/env_steps``, ``eval/return``.
    """
    check_agent(agent)
    check_int("num_seeds", num_seeds, low=1, optional=True)
    unknown = sorted(set(shape) - set(_SHAPE_FIELDS))
    if unknown:
        raise TypeError(
            f"train_gymnasium got unknown keyword {unknown[0]!r}: the run's shape takes "
            f"{', '.join(_SHAPE_FIELDS)}"
        )
    settings = dataclasses.replace(
        config or TrainConfig(), **shape, seed=seed, num_seeds=num_seeds or 1,
        env_backend=env_backend,
    )  # fmt: skip
    if initial is not None and not isinstance(initial, HostCarry):
        raise TypeError(f"initial must be a HostCarry (progress's 'carry'), got {initial!r:.60}")
    with HostLoop(agent, env_id, settings, env_kwargs) as loop:
        carry = loop.start(loop.init() if initial is None else initial, 0)
        watch = Watch(loop, stop, progress, single=num_seeds is None)
        carry = train_periods(loop, [watch], carry, 0, on_period=watch.stops)
    state, metrics = carry.state, watch.metrics()
    if num_seeds is None:
        state = jax.tree_util.tree_map(lambda x: x[0], state)
        metrics = {name: value[0] for name, value in metrics.items()}
    return state, metrics


class HostLoop:
    """The host driver's :class:`jaxrl.training.loop.Loop`: a run of one setting on gymnasium
    or EnvPool environments, cut at its evaluations. The environments are open from ``start``
    to ``close`` (or the ``with`` block), so periods run in order; the carry passed to
    ``run_period`` stays valid (the loop works on a copy).

    The checkpoint is ``{"carry": HostCarry}`` (agent states, observation statistics and,
    unless ``settings.checkpoint_buffer`` is off, the replay buffers); a resumed run
    continues on fresh environments and keys, seeded ``seed + start_steps + i``, and counts on
    from ``start_steps`` (a warm-up already done is not run again).

    Args:
      agent: the algorithm object.
      env_id: a gymnasium id (or one EnvPool has).
      settings: the run's settings (its seeds, shape, evaluation, environment backend); seed
        ``i``'s environments, keys and evaluations are those of a single-seed run with
        ``settings.seed + i``.
      env_kwargs: keyword arguments of the environments (as
        :func:`jaxrl.training.gymnasium_driver.train_gymnasium`).
    """

    num_settings = 1
    evaluates_alongside = False

    def __init__(
        self, agent: Agent, env_id: str, settings: RunSettings, env_kwargs: dict | None = None
    ) -> None:
        if settings.eval_alongside:
            expected = "False on host environments (it is for gymnax and brax: ids)"
            raise SettingError("RunSettings", "eval_alongside", expected, True)
        self.agent, self.env_id, self.settings = agent, env_id, settings
        self.env_kwargs = env_kwargs
        self.layout = settings.driver_settings.layout
        self.off_policy = learns_from_replay(agent)
        self.env: Any = None  # open between start and close

    def _seeds(self, offset: int = 0) -> list[int]:
        return [self.settings.seed + offset + i for i in range(self.settings.num_seeds)]

    def _carry(self, abstract: bool) -> HostCarry:
        """A fresh carry (its shapes when ``abstract``), for the spaces of the environments
        the run uses (EnvPool's and gymnasium's may differ in dtype)."""
        settings = self.settings
        env = make_host_env(self.env_id, 1, settings.seed, settings.env_backend, self.env_kwargs)
        spaces = env.single_observation_space, env.single_action_space
        env.close()

        def make() -> HostCarry:
            return init_host_carry(
                self.agent, self._seeds(), *spaces, settings.num_envs, settings.normalize_obs
            )

        return jax.eval_shape(make) if abstract else make()

    def check(self) -> None:
        self.checkpoint_template()

    def checkpoint_template(self) -> Any:
        return self.to_checkpoint(self._carry(abstract=True))

    def init(self) -> HostCarry:
        return SeedPlacement().put(self._carry(abstract=False))

    def to_checkpoint(self, carry: HostCarry) -> Any:
        if not self.settings.checkpoint_buffer:
            carry = carry._replace(buffer=None)
        return {"carry": carry}

    def from_checkpoint(self, tree: Any) -> HostCarry:
        return tree["carry"]

    def start(self, carry: HostCarry, start_steps: int) -> HostCarry:
        if carry.buffer is None and self.off_policy:
            # A checkpoint without its replay buffer (``checkpoint_buffer`` off).
            carry = carry._replace(buffer=self._carry(abstract=False).buffer)
        carry = SeedPlacement().put(carry)
        remaining = self.layout.total_steps - start_steps
        if remaining <= 0:
            return carry
        settings = self.settings
        self._left = dataclasses.replace(settings.driver_settings, total_steps=remaining).layout
        self._train_seeds = self._seeds(offset=start_steps)
        num_envs = settings.num_envs
        first = seed_block(self._train_seeds, num_envs, _TRAIN_STREAM)
        count = len(self._train_seeds) * num_envs
        self.env = make_host_env(self.env_id, count, first, settings.env_backend, self.env_kwargs)
        steps_per_collect = self.layout.steps_per_collect
        num_updates = updates_per_collect(self.agent, steps_per_collect) if self.off_policy else 1
        self._programs = _Programs(self.agent, self._train_seeds, num_updates, settings.num_steps)
        # Between periods: the policy's latest action, its observation, the running
        # episode returns, env steps and periods so far (None before the first reset).
        self._sample: Any = None
        self._obs: Any = None
        self._episode_return = np.zeros((settings.num_seeds, num_envs))
        self._env_steps, self._collections, self._period = start_steps, 0, 0
        return carry

    def run_period(
        self, carry: HostCarry, collections: int | None = None
    ) -> tuple[HostCarry, dict[str, np.ndarray]]:
        """One evaluation period from ``carry`` (the carry after the previous period):
        ``collections`` collections (None: to the layout's next period boundary)."""
        if self.env is None:
            raise RuntimeError("the run has no evaluation period left (or was not started)")
        left = self._left.num_collections - self._collections
        if left <= 0:
            raise RuntimeError(f"the run's {self._left.num_periods} evaluation periods are done")
        if collections is None:
            collections = self._left.collections_in(self._collections)
        if not 1 <= collections <= left:
            raise ValueError(f"collections must be in [1, {left}], got {collections!r}")
        count = self.settings.num_seeds
        programs = self._programs
        carry = jax.tree_util.tree_map(jnp.copy, carry)  # the calls donate their carry
        if self._sample is None:
            raw_obs = split_seeds(self.env.reset(), count)
            carry, self._sample, self._obs, _ = programs.observe_and_act(carry, raw_obs, raw_obs, 0)
        rows = []
        for _ in range(collections):
            carry, row = self._collect_and_learn(carry)
            rows.append(row)
        self._collections += collections
        self._period += 1
        episodes = self.settings.eval_episodes
        seed = seed_block(self._train_seeds, episodes, self._period)
        metrics = _per_collection(rows, count)
        metrics["eval/env_steps"] = np.full(count, self._env_steps)
        metrics["eval/return"] = self.evaluate(
            carry.state, carry.obs_stats, episodes, seed, self.agent.evaluates_deterministically
        )
        return carry, metrics

    def _collect_and_learn(self, carry: HostCarry) -> tuple[HostCarry, dict[str, Any]]:
        """One collection of ``num_steps`` vector steps, then its learning."""
        count, num_envs = self.settings.num_seeds, self.settings.num_envs
        programs, sample, obs = self._programs, self._sample, self._obs
        episode_return = self._episode_return
        fields: tuple[list, ...] = tuple([] for _ in Rollout._fields)
        finished = [[] for _ in range(count)]
        for step in range(self.settings.num_steps):
            # The last step only observes: its next action comes from learn, after the updates.
            last = step == self.settings.num_steps - 1
            carry, sample, obs, transition = host_step(
                self.env, programs.observe if last else programs.observe_and_act, carry,
                sample, obs, self._env_steps, num_envs, count,
            )  # fmt: skip
            self._env_steps += num_envs
            for field, value in zip(fields, transition, strict=True):
                field.append(value)
            episode_return += transition.reward
            done = transition.terminated | transition.truncated
            for i in range(count):
                finished[i].extend(episode_return[i][done[i]].tolist())
            episode_return[done] = 0.0
        self._obs = obs
        fields = programs.collection(fields)
        env_steps = self._env_steps
        collection_start = env_steps - self.layout.steps_per_collect
        if self.off_policy:
            # The updates of a collection that starts inside DDPG's random warm-up would be
            # discarded, so only the transitions are stored.
            learn = bool(updates_take_effect(self.agent, collection_start))
            carry, stats, self._sample = programs.learn(
                carry, fields, collection_start, learn, obs, env_steps
            )
        else:
            carry, stats, self._sample = programs.learn(carry, fields, env_steps, True, obs)
        train_return = np.asarray([np.mean(f) if f else np.nan for f in finished])
        return carry, {"env_steps": env_steps, "train_return": train_return, **stats}

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        returns = evaluate_gymnasium(
            self.agent, state, self.env_id, obs_stats, episodes, seed, self.env_kwargs,
            env_backend=self.settings.env_backend, num_seeds=self.settings.num_seeds,
            deterministic=bool(deterministic),
        )  # fmt: skip
        return np.asarray(returns, np.float64)

    def part(self, tree: Any, g: int) -> Any:
        del g
        return tree

    def close(self) -> None:
        """Close the environments."""
        if self.env is not None:
            self.env.close()
            self.env = None

    def __enter__(self) -> HostLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _per_collection(rows: list[dict[str, Any]], count: int) -> dict[str, np.ndarray]:
    """Per-seed metrics ``[S, C]`` of a period's collections: each collection joined as a
    one-collection period (:func:`join_periods`: stats NaN for collections that ran no
    update, DDPG's warm-up)."""

    def per_seed(row: dict[str, Any]) -> dict[str, np.ndarray]:
        return {name: np.broadcast_to(np.asarray(v), (count,))[:, None] for name, v in row.items()}

    return join_periods([per_seed(row) for row in jax.device_get(rows)])

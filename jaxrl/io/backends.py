"""The two ways a run trains, behind one interface for :mod:`jaxrl.io.runner`.

- :class:`JaxBackend`: JAX environments (gymnax ids, Brax's ``brax:NAME``) in the jitted
  driver. All seeds run in one program (:func:`jaxrl.training.over_seeds`: batched, or on a CPU
  NPG/TRPO seeds one after another); ``run_period`` is one compiled call; the
  checkpoint is the whole ``TrainCarry`` (agent state, replay buffer, environment states,
  PRNG key), so a resumed run is bit-identical to an uninterrupted one. In a job of several
  processes (:func:`jaxrl.training.initialize_distributed`) the seeds are split over every
  process's devices (:class:`jaxrl.training.sharding.SeedPlacement`), and metrics,
  evaluations and checkpoints are gathered whole to every process (the runner's process 0
  writes them); a checkpoint holds whole arrays, so a run resumes with any process layout.
- :class:`HostBackend`: other gymnasium ids (gymnasium or EnvPool environments) in the host
  driver (:class:`jaxrl.training.gymnasium_driver.HostTrainLoop`). The checkpoint is the
  ``HostCarry`` (agent states, observation statistics and, unless ``checkpoint_buffer`` is
  off, the replay buffers); a resumed run continues on fresh environments with a seed offset.

Both give the runner the same members: checkpoint ``template``, ``fresh`` carry,
``to_checkpoint``/``from_checkpoint``, ``periods`` (a context giving ``run_period``),
``gather`` (a period's metrics to NumPy on every process) and ``evaluate``; :func:`run_backend`
picks one for a configuration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes, learns_from_replay
from jaxrl.core.prng import bucketed_keys
from jaxrl.io.config import Backend, RunConfig

if TYPE_CHECKING:
    from jaxrl.training.settings import RunLayout


def resolve_backend(env: str, backend: str = "auto") -> Backend:
    """``"jax"`` for gymnax and Brax (``brax:NAME``) ids, ``"gymnasium"`` for other registered
    gymnasium ids (or any id when ``backend="gymnasium"``).

    Raises:
      ValueError: an id neither library knows, naming the closest known ids, or a Brax id
        with ``backend="gymnasium"``.
    """
    import gymnasium as gym
    import gymnax

    from jaxrl.envs import is_brax_id

    if is_brax_id(env):
        if backend == "gymnasium":
            raise ValueError(f"{env} is a Brax environment: it runs in the jitted driver (jax)")
        return "jax"

    jax_ids = list(gymnax.registered_envs)
    gym_ids = list(gym.envs.registry)
    if backend == "jax":
        if env not in jax_ids:
            close = difflib.get_close_matches(env, jax_ids, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ValueError(f"unknown gymnax environment id {env!r}{hint}")
        return "jax"
    if backend == "auto" and env in jax_ids:
        return "jax"
    if env in gym_ids or ":" in env:  # "module:EnvId" ids register on import
        return "gymnasium"
    known = list(dict.fromkeys(jax_ids + gym_ids))  # ids both libraries have, once
    close = difflib.get_close_matches(env, known, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(
        f"unknown environment id {env!r}: neither a gymnax nor a registered gymnasium id{hint}"
    )


def train_config(config: RunConfig) -> Any:
    """The run settings the drivers take (:class:`jaxrl.training.TrainConfig`:
    :attr:`jaxrl.training.settings.RunSettings.driver_settings`): hashable, without the
    algorithm's hyperparameters, the same for runs that can share compiled programs."""
    return config.driver_settings


def seed_keys(config: RunConfig) -> jax.Array:
    """The PRNG keys of the run's seeds, ``key(seed + i)`` each
    (:func:`jaxrl.training.seeds.seed_keys`: one rule for both drivers)."""
    from jaxrl.training.seeds import seed_keys as keys_of

    return keys_of(config.seed, config.num_seeds)


class RunBackend(Protocol):
    """What the runner needs from a driver.

    Attributes:
      layout: the run's collections and evaluation periods
        (:class:`jaxrl.training.periods.RunLayout`).
    """

    layout: RunLayout

    def check(self) -> None:
        """Build what the run needs (raising on a bad configuration) without training."""

    def template(self) -> Any:
        """The checkpoint's shapes (``jax.ShapeDtypeStruct`` leaves), to restore into."""

    def fresh(self) -> Any:
        """The carry of a run at period 0."""

    def to_checkpoint(self, carry: Any) -> Any:
        """What a checkpoint of ``carry`` holds (whole arrays; every process calls it)."""

    def from_checkpoint(self, tree: Any) -> Any:
        """The carry a restored checkpoint ``tree`` stands for (for loading a policy)."""

    def periods(
        self, carry: Any, start_steps: int
    ) -> contextlib.AbstractContextManager[tuple[Any, Callable]]:
        """A context giving ``(carry, run_period)`` to train from ``carry`` after
        ``start_steps`` env steps per seed; ``run_period(carry, collections) -> (carry,
        metrics)`` with ``[S, collections]`` per-collection metrics (``env_steps`` counted
        from the run's start) and ``eval/env_steps``, ``eval/return`` ``[S]``."""

    def gather(self, metrics: Any) -> Any:
        """``run_period``'s metrics as NumPy arrays holding every seed, on every process."""

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        """Mean return ``[S]`` of each seed's policy over ``episodes`` episodes."""


def run_backend(config: RunConfig, agent: Any) -> RunBackend:
    """The backend that trains ``config`` (``config.backend``) with ``agent``.

    Raises:
      ValueError: a host-driver run in a job of several processes.
    """
    if config.backend != "jax":
        from jaxrl.training.sharding import several_processes

        if several_processes():
            raise ValueError(
                f"several processes need the jitted driver (a gymnax or Brax id): {config.env} "
                "runs on the host driver"
            )
    cls = JaxBackend if config.backend == "jax" else HostBackend
    return cls(config, agent)


# ---------------------------------------------------------------------------------------------
# The jitted driver
# ---------------------------------------------------------------------------------------------


def _jax_env(env_id: str, brax_backend: str | None) -> tuple[Any, Any]:
    from jaxrl.envs import make_env

    return make_env(env_id, brax_backend=brax_backend)


def jax_loop(config: RunConfig, agent: Any) -> Any:
    """The run's :class:`jaxrl.training.TrainLoop`."""
    from jaxrl.training import make_train_loop

    env, env_params = _jax_env(config.env, config.brax_backend)
    return make_train_loop(agent, env, train_config(config), env_params)


def _canonical(tree: Any) -> Any:
    """Strongly typed leaves committed to this process's first device, so fresh, continued
    and restored carries all call the same compiled ``run_period``."""
    from jaxrl.training.sharding import SeedPlacement

    return SeedPlacement().put(tree)


@dataclasses.dataclass
class _Backend:
    """The run both backends train: its configuration, agent and periods."""

    config: RunConfig
    agent: Any

    def __post_init__(self) -> None:
        self.layout = train_config(self.config).layout


class JaxBackend(_Backend):
    """A run of the jitted driver (gymnax and Brax environments): a sweep group of one
    setting (:class:`JaxGroupBackend`), so a run's numbers are those of the same setting in
    a sweep."""

    @functools.cached_property
    def placement(self) -> Any:
        """Where the seeds live (:class:`jaxrl.training.sharding.SeedPlacement`): split over
        every device of a job of several processes, else on one device."""
        from jaxrl.training.sharding import SeedPlacement

        return SeedPlacement.for_job()

    @functools.cached_property
    def group(self) -> JaxGroupBackend:
        return JaxGroupBackend([self.config], [self.agent], self.placement)

    def check(self) -> None:
        self.placement.check(self.config.num_seeds)
        loop = jax_loop(self.config, self.agent)
        jax.eval_shape(loop.init, jax.random.key(self.config.seed))  # it accepts the spaces

    def template(self) -> Any:
        group = self.group
        return jax.eval_shape(group.init_program, group.leaves, seed_keys(self.config))

    def fresh(self) -> Any:
        return self.group.fresh()

    def to_checkpoint(self, carry: Any) -> Any:
        return carry if self.placement.mesh is None else self.placement.gather(carry)

    def from_checkpoint(self, tree: Any) -> Any:
        return self.placement.put(tree)

    @contextlib.contextmanager
    def periods(self, carry: Any, start_steps: int) -> Iterator[tuple[Any, Callable]]:
        del start_steps  # the carry holds the env steps, states and keys
        yield carry, self.group.run_period

    def gather(self, metrics: Any) -> Any:
        return self.placement.gather(metrics)

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        # On-policy agents evaluate in both modes (a traced flag: one compiled program);
        # DDPG only without noise (its OU noise state cannot take a traced flag).
        static = None if evaluates_both_modes(self.agent) else bool(deterministic)
        config = self.config
        leaves, structure = jax.tree_util.tree_flatten(self.agent)
        placement = self.placement if self.placement.mesh is not None else None
        program = jax_evaluation_program(
            structure, config.env, config.brax_backend, episodes, static, placement
        )
        from jaxrl.training.seeds import seed_keys as keys_of

        keys = self.placement.put(keys_of(seed, config.num_seeds))
        returns = program(leaves, state, obs_stats, keys, np.asarray(bool(deterministic)))
        return np.asarray(self.placement.gather(returns), np.float64)


@functools.lru_cache(maxsize=8)
def jax_evaluation_program(
    structure: Any,
    env_id: str,
    brax_backend: str | None,
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
    of a job of several processes."""
    from jaxrl.training import evaluate

    env, env_params = _jax_env(env_id, brax_backend)

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


class JaxGroupBackend:
    """The settings of one sweep group x their seeds, trained by one jitted program.

    The agents of a group differ only in their leaves (numeric hyperparameters: their
    pytree definitions, static fields included, are equal), and their runs share every
    setting the drivers' programs depend on. The leaves become arguments over a flattened
    ``[G * S]`` axis (setting ``g``, seed ``s`` at ``g * S + s``) that the group's period
    programs map or vmap like a seed axis (:func:`jaxrl.training.over_seeds`); seed ``s`` of
    every setting has the key of seed ``s`` of its own run (:func:`seed_keys`).

    With a ``placement`` that splits seeds over the devices of a job of several processes
    (:class:`jaxrl.training.sharding.SeedPlacement`), the ``[G * S]`` axis is split over
    them, each device running the group's programs on its block (their compile time is then
    not measured).

    Attributes:
      configs: the settings' run configurations; agents: their algorithm objects.
      layout: the runs' collections and periods (one for all).
    """

    def __init__(self, configs: list[RunConfig], agents: list[Any], placement: Any = None) -> None:
        from jaxrl.training.seeds import resolve_seed_axis
        from jaxrl.training.sharding import SeedPlacement

        self.placement = SeedPlacement() if placement is None else placement

        self.configs, self.agents = list(configs), list(agents)
        first = self.configs[0]
        self.num_seeds = first.num_seeds
        self.layout = train_config(first).layout
        flat = [jax.tree_util.tree_flatten(agent) for agent in self.agents]
        self.structure = flat[0][1]
        for config, (_, structure) in zip(self.configs, flat, strict=True):
            if structure != self.structure or train_config(config) != train_config(first):
                raise ValueError("the runs of a group must differ only in numeric hyperparameters")
        # [G * S] per leaf: every setting's value, once per seed.
        self.leaves = [
            jnp.repeat(
                jnp.asarray(np.stack([np.asarray(leaf) for leaf in values])), first.num_seeds, 0
            )
            for values in zip(*(leaves for leaves, _ in flat), strict=True)
        ]
        if self.placement.mesh is not None:
            self.leaves = self.placement.put(self.leaves)
        self.env, self.env_params = _jax_env(first.env, first.brax_backend)
        self.how = resolve_seed_axis("auto", self.agents[0], self.env)
        self.init_program = self._jit(self._over(lambda loop, key: loop.init(key)))
        self._periods: dict[int, Callable] = {}
        self.compile_seconds = 0.0  # lowering and compiling the period programs

    def _over(self, fn: Callable[[Any, Any], Any]) -> Callable:
        """``fn(loop, x)`` over the ``[G * S]`` axis of ``(leaves, xs)``, each element with
        the loop of its own agent."""
        from jaxrl.training import make_train_loop, over_seeds

        settings = train_config(self.configs[0])

        def one(leaves: list, x: Any) -> Any:
            agent = jax.tree_util.tree_unflatten(self.structure, leaves)
            return fn(make_train_loop(agent, self.env, settings, self.env_params), x)

        return over_seeds(one, self.how)

    def _jit(self, fn: Callable) -> Callable:
        """``fn`` jitted, or run per device on its block of a split ``[G * S]`` axis."""
        return jax.jit(fn) if self.placement.mesh is None else self.placement.jit(fn)

    def fresh(self) -> Any:
        keys = jnp.concatenate([seed_keys(config) for config in self.configs])
        keys = self.placement.put(keys) if self.placement.mesh is not None else keys
        return self.placement.put(self.init_program(self.leaves, keys))

    def period_program(self, collections: int) -> Callable:
        """The jitted ``(leaves, carry) -> (carry, metrics)`` of a period of ``collections``
        collections."""
        return self._jit(self._over(lambda loop, c: loop.period(collections)(c)))

    def run_period(self, carry: Any, collections: int) -> tuple[Any, dict[str, Any]]:
        """One period of ``collections`` collections of every setting and seed (its program
        compiled at its first call, the time added to :attr:`compile_seconds`)."""
        if collections not in self._periods:
            start = time.perf_counter()
            program = self.period_program(collections)
            if self.placement.mesh is None:
                program = program.lower(self.leaves, carry).compile()
                self.compile_seconds += time.perf_counter() - start
            self._periods[collections] = program
        carry, metrics = self._periods[collections](self.leaves, carry)
        return self.placement.put(carry), metrics

    def part(self, tree: Any, g: int) -> Any:
        """Setting ``g``'s share of a ``[G * S]`` tree (its seeds)."""
        size = self.num_seeds
        return jax.tree_util.tree_map(lambda x: x[g * size : (g + 1) * size], tree)


# ---------------------------------------------------------------------------------------------
# The host driver
# ---------------------------------------------------------------------------------------------


class HostBackend(_Backend):
    """A run of the host driver (gymnasium and EnvPool environments)."""

    def _seeds(self, offset: int = 0) -> list[int]:
        return [self.config.seed + offset + i for i in range(self.config.num_seeds)]

    def _spaces(self) -> tuple[Any, Any]:
        """The observation and action spaces of the run's environments (of the backend it
        uses: EnvPool's and gymnasium's may differ in dtype)."""
        from jaxrl.envs import make_host_env

        config = self.config
        env = make_host_env(config.env, 1, config.seed, config.env_backend)
        spaces = env.single_observation_space, env.single_action_space
        env.close()
        return spaces

    def _carry(self, abstract: bool) -> Any:
        from jaxrl.training.gymnasium_driver import init_host_carry

        observation_space, action_space = self._spaces()

        def make() -> Any:
            return init_host_carry(
                self.agent,
                self._seeds(),
                observation_space,
                action_space,
                self.config.num_envs,
                self.config.normalize_obs,
            )

        return jax.eval_shape(make) if abstract else make()

    def check(self) -> None:
        self.template()

    def template(self) -> Any:
        return self.to_checkpoint(self._carry(abstract=True))

    def fresh(self) -> Any:
        return _canonical(self._carry(abstract=False))

    def to_checkpoint(self, carry: Any) -> Any:
        if not self.config.checkpoint_buffer:
            carry = carry._replace(buffer=None)
        return {"carry": carry}

    def from_checkpoint(self, tree: Any) -> Any:
        return tree["carry"]

    def gather(self, metrics: Any) -> Any:
        return jax.device_get(metrics)

    @contextlib.contextmanager
    def periods(self, carry: Any, start_steps: int) -> Iterator[tuple[Any, Callable]]:
        from jaxrl.training.gymnasium_driver import HostTrainLoop

        if carry.buffer is None and learns_from_replay(self.agent):
            # A checkpoint without its replay buffer (``checkpoint_buffer`` off).
            carry = carry._replace(buffer=self._carry(abstract=False).buffer)
        carry = _canonical(carry)
        remaining = self.layout.total_steps - start_steps
        if remaining <= 0:
            yield carry, _finished
            return
        config = dataclasses.replace(train_config(self.config), total_steps=remaining)
        # A resumed run continues on fresh environments and keys.
        seeds = self._seeds(offset=start_steps)
        # The loop counts on from start_steps: a warm-up already done is not run again.
        with HostTrainLoop(
            self.agent,
            self.config.env,
            config,
            seeds,
            self.config.env_backend,
            start_steps=start_steps,
        ) as loop:
            yield carry, loop.run_period

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        from jaxrl.training.gymnasium_driver import evaluate_gymnasium

        returns = evaluate_gymnasium(
            self.agent,
            state,
            self.config.env,
            obs_stats,
            episodes,
            seed,
            env_backend=self.config.env_backend,
            num_seeds=self.config.num_seeds,
            deterministic=bool(deterministic),
        )
        return np.asarray(returns, np.float64)


def _finished(carry: Any, collections: int) -> tuple[Any, dict[str, Any]]:
    raise RuntimeError("the run has no evaluation period left")

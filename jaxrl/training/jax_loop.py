"""The jitted driver's :class:`jaxrl.training.loop.Loop`: a run, or the settings of a sweep
group, on JAX environments (gymnax ids, Brax's ``brax:NAME``) in one program.

A run is a group of one setting, so its numbers are those of the same setting in a sweep.
All seeds (and settings) run in one program (:func:`jaxrl.training.over_seeds`: batched, or
on a CPU NPG/TRPO seeds one after another); ``run_period`` is one compiled call of the
per-seed period of :func:`jaxrl.training.make_train_loop`; the checkpoint is the whole
:class:`jaxrl.training.TrainCarry` (agent state, replay buffer, environment states, PRNG
key), so a resumed run is bit-identical to an uninterrupted one. In a job of several
processes (:func:`jaxrl.training.initialize_distributed`) the seeds are split over every
process's devices (:class:`jaxrl.training.sharding.SeedPlacement`), and metrics,
evaluations and checkpoints are gathered whole to every process; a checkpoint holds whole
arrays, so a run resumes with any process layout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algorithms.protocol import evaluates_both_modes
from jaxrl.config.settings import RunSettings
from jaxrl.envs.brax_env import Solver
from jaxrl.envs.jax_envs import make_env
from jaxrl.training.evaluation import jax_evaluation_program
from jaxrl.training.jax_driver import TrainLoop, make_train_loop
from jaxrl.training.programs import Same, compiled
from jaxrl.training.run import Watch, train_periods
from jaxrl.training.seeds import over_seeds, resolve_seed_axis, seed_keys
from jaxrl.training.sharding import SeedPlacement


class JaxLoop:
    """The settings of one sweep group x their seeds (a run: one setting), trained by one
    jitted program.

    The agents of a group differ only in their leaves (numeric hyperparameters: their
    pytree definitions, static fields included, are equal), and their runs share every
    setting the drivers' programs depend on
    (:attr:`~jaxrl.config.settings.RunSettings.driver_settings`). The
    leaves become arguments over a flattened ``[G * S]`` axis (setting ``g``, seed ``s`` at
    ``g * S + s``) that the period programs map or vmap like a seed axis
    (:func:`jaxrl.training.over_seeds`); seed ``s`` of every setting has the key of seed
    ``s`` of its own run (:func:`jaxrl.training.seeds.seed_keys`).

    With a ``placement`` that splits seeds over the devices of a job of several processes,
    the ``[G * S]`` axis is split over them, each device running the programs on its block
    (their compile time is then not measured); the evaluations split each setting's ``S``
    seeds over them as a run's (so ``S`` must be a multiple of the devices).

    Args:
      agents: the settings' algorithm objects.
      env_id: the environment id (every setting's), or an environment with the gymnax
        interface (:func:`jaxrl.envs.jax_envs.make_env`).
      settings: the settings' run settings (their seeds, seed counts, evaluation, shape).
      placement: where the seeds live (default: this process's first device).
      env_params: the environment's parameters (default: its own).
      keys: ``[S]`` PRNG keys of the seeds (default: each setting's
        :func:`~jaxrl.training.seeds.seed_keys`; with several settings, each setting's seed
        ``s`` takes key ``s``).
      seed_axis: how the ``[G * S]`` axis runs: ``"vmap"``, ``"map"`` or ``"auto"``
        (:func:`jaxrl.training.resolve_seed_axis`).

    Attributes:
      layout: the runs' collections and periods (one for all).
      compile_seconds: time spent lowering and compiling the programs (0 for those another
        loop of the same programs compiled in this process: they are shared).
    """

    def __init__(
        self,
        agents: Sequence[Any],
        env_id: str | Any,
        settings: Sequence[RunSettings],
        placement: SeedPlacement | None = None,
        *,
        env_params: Any = None,
        keys: jax.Array | None = None,
        seed_axis: str = "auto",
    ) -> None:
        self.placement = SeedPlacement() if placement is None else placement
        self.agents, self.settings, self.env_id = list(agents), list(settings), env_id
        self.env_params, self.given_keys, self.seed_axis = env_params, keys, seed_axis
        self.agent, first = self.agents[0], self.settings[0]
        self.num_settings = len(self.agents)
        self.num_seeds = first.num_seeds if keys is None else int(keys.shape[0])
        self.driver_settings = first.driver_settings
        self.layout = self.driver_settings.layout
        self.evaluates_alongside = self.driver_settings.eval_alongside
        self.structure = jax.tree_util.tree_structure(self.agent)
        for setting, agent in zip(self.settings, self.agents, strict=True):
            same = setting.driver_settings == self.driver_settings
            if jax.tree_util.tree_structure(agent) != self.structure or not same:
                raise ValueError("the runs of a group must differ only in numeric hyperparameters")
        self.compile_seconds = 0.0

    # -- what the programs are built from ------------------------------------------------------

    @functools.cached_property
    def env(self) -> tuple[Any, Any]:
        """``(env, env_params)`` of the run's environment."""
        if not isinstance(self.env_id, str):  # built already (a make_train_loop run's)
            return make_env(self.env_id, self.env_params)
        brax_backend = self.settings[0].brax_backend
        return make_env(self.env_id, brax_backend=brax_backend, brax_solver=self.solver)

    @functools.cached_property
    def solver(self) -> Solver:
        """MJX's solver settings of the run (:class:`jaxrl.envs.Solver`)."""
        first = self.settings[0]
        return Solver(first.solver, first.solver_iterations, first.solver_ls_iterations)

    @functools.cached_property
    def leaves(self) -> list[jax.Array]:
        """``[G * S]`` per leaf of the agents: every setting's value, once per seed."""
        flat = [jax.tree_util.tree_leaves(agent) for agent in self.agents]
        leaves = [
            jnp.repeat(
                jnp.asarray(np.stack([np.asarray(leaf) for leaf in values])), self.num_seeds, 0
            )
            for values in zip(*flat, strict=True)
        ]
        return leaves if self.placement.mesh is None else self.placement.put(leaves)

    @functools.cached_property
    def how(self) -> str:
        """How the ``[G * S]`` axis runs: ``"vmap"`` or ``"map"``."""
        return resolve_seed_axis(self.seed_axis, self.agent, self.env[0])

    @functools.cached_property
    def init_program(self) -> Callable:
        """The jitted ``(leaves, keys [G * S]) -> carry``."""
        return self._jit(self._over(lambda loop, key: loop.init(key)))

    def _over(self, fn: Callable[[Any, Any], Any]) -> Callable:
        """``fn(loop, x)`` over the ``[G * S]`` axis of ``(leaves, xs)``, each element with
        the per-seed loop (:func:`jaxrl.training.make_train_loop`) of its own agent."""
        env, env_params = self.env

        def one(leaves: list, x: Any) -> Any:
            agent = jax.tree_util.tree_unflatten(self.structure, leaves)
            return fn(make_train_loop(agent, env, self.driver_settings, env_params), x)

        return over_seeds(one, self.how)

    def _jit(self, fn: Callable) -> Callable:
        """``fn`` jitted, or run per device on its block of a split ``[G * S]`` axis."""
        return jax.jit(fn) if self.placement.mesh is None else self.placement.jit(fn)

    def keys(self) -> jax.Array:
        """``[G * S]`` keys: each setting's seeds (:func:`jaxrl.training.seeds.seed_keys`)."""
        if self.given_keys is not None:
            return jnp.concatenate([self.given_keys] * self.num_settings)
        return jnp.concatenate([seed_keys(s.seed, s.num_seeds) for s in self.settings])

    # -- the Loop ------------------------------------------------------------------------------

    def seed_loop(self) -> TrainLoop:
        """The per-seed :class:`jaxrl.training.TrainLoop` of the first setting, its
        hyperparameters constants (for ``jax.vmap(loop.train)(keys)``)."""
        env, env_params = self.env
        return make_train_loop(self.agent, env, self.driver_settings, env_params)

    def check(self) -> None:
        self.placement.check(self.num_seeds)
        loop = self.seed_loop()
        jax.eval_shape(loop.init, jax.random.key(self.settings[0].seed))  # it accepts the spaces

    def checkpoint_template(self) -> Any:
        return jax.eval_shape(self.init_program, self.leaves, self.keys())

    def init(self) -> Any:
        keys = self.keys()
        keys = self.placement.put(keys) if self.placement.mesh is not None else keys
        program = self._compiled("init", lambda: self.init_program, (self.leaves, keys))
        return self.placement.put(program(self.leaves, keys))

    def to_checkpoint(self, carry: Any) -> Any:
        return carry if self.placement.mesh is None else self.placement.gather(carry)

    def from_checkpoint(self, tree: Any) -> Any:
        return self.placement.put(tree)

    def start(self, carry: Any, start_steps: int) -> Any:
        del start_steps  # the carry holds the env steps, states and keys
        return carry

    def period_program(self, collections: int) -> Callable:
        """The jitted ``(leaves, carry) -> (carry, metrics)`` of a period of ``collections``
        collections."""
        return self._jit(self._over(lambda loop, c: loop.period(collections)(c)))

    def run_period(self, carry: Any, collections: int) -> tuple[Any, dict[str, Any]]:
        """One period of ``collections`` collections of every setting and seed."""
        build = functools.partial(self.period_program, collections)
        program = self._compiled(("period", collections), build, (self.leaves, carry))
        carry, metrics = program(self.leaves, carry)
        return self.placement.put(carry), self.placement.gather(metrics)

    def _compiled(self, name: Any, build: Callable[[], Any], args: Any) -> Callable:
        """The program ``name`` (``build()`` jitted) compiled for ``args``, from the jitted
        driver's cache (:func:`jaxrl.training.programs.compiled`: shared with every loop
        of the same agent structure, environment and driver settings in this process), its
        compile time added to ``compile_seconds``. Split over several processes' devices,
        the jitted program (each device compiles its block at the first call)."""
        first = self.settings[0]
        env = self.env_id if isinstance(self.env_id, str) else tuple(map(Same, self.env))
        key = (
            name, self.structure, env, self.driver_settings, first.brax_backend, self.solver,
            self.how,
        )  # fmt: skip
        if self.placement.mesh is not None:
            return compiled((key, self.placement), build)[0]
        program, seconds = compiled(key, build, args)
        self.compile_seconds += seconds
        return program

    def evaluate(
        self, state: Any, obs_stats: Any, episodes: int, seed: int, deterministic: bool
    ) -> np.ndarray:
        # On-policy agents evaluate in both modes (a traced flag: one compiled program);
        # DDPG only without noise (its OU noise state cannot take a traced flag).
        static = None if evaluates_both_modes(self.agent) else bool(deterministic)
        placement = self.placement if self.placement.mesh is not None else None
        build = functools.partial(
            jax_evaluation_program, self.structure, *self.env, episodes, static, placement
        )
        keys = self.placement.put(seed_keys(seed, self.num_seeds))
        part = self.part
        if placement is not None and self.num_settings > 1:
            # A setting's seeds are split over every device as a run's are: the [G * S]
            # axis gathered, each setting's block placed anew.
            state, obs_stats = self.placement.gather((state, obs_stats))
            part = lambda tree, g: self.placement.put(self.part(tree, g))  # noqa: E731
        returns = []
        for g, agent in enumerate(self.agents):
            args = (
                jax.tree_util.tree_leaves(agent),
                part(state, g),
                part(obs_stats, g),
                keys,
                np.asarray(bool(deterministic)),
            )
            own = self._compiled(("evaluate", episodes, static), build, args)(*args)
            returns.append(np.asarray(self.placement.gather(own), np.float64))
        return returns[0] if self.num_settings == 1 else np.concatenate(returns)

    def part(self, tree: Any, g: int) -> Any:
        if self.num_settings == 1:
            return tree
        size = self.num_seeds
        return jax.tree_util.tree_map(lambda x: x[g * size : (g + 1) * size], tree)

    def close(self) -> None:
        pass


def train_until(
    loop: TrainLoop,
    keys: jax.Array,
    stop: Callable[[np.ndarray], bool] | None,
    progress: Callable[[dict], None] | None = None,
    seed_axis: str = "auto",
) -> tuple[Any, dict[str, np.ndarray]]:
    """Train the seeds ``keys [S]`` together, period by period, until ``stop`` says so.

    Tianshou's trainers end a run as soon as ``stop_fn(test reward)`` holds. This is the same
    for a batch of seeds: after every evaluation, ``stop(eval_returns)`` is called with the
    evaluation returns so far, ``[S, periods_so_far]``; the run ends when it returns True or
    the budget (``loop.num_periods``) is spent. The periods run as the command's do: one
    :class:`JaxLoop` over the seeds, driven by :func:`jaxrl.training.run.train_periods`. The
    host driver (:func:`jaxrl.training.gymnasium_driver.train_gymnasium`) takes the same
    ``stop`` and ``progress``.

    Args:
      loop: from :func:`jaxrl.training.make_train_loop`.
      keys: one PRNG key per seed, ``[S]``.
      stop: ``eval_returns [S, P] -> bool``, e.g. "7 of 8 seeds have reached -250":
        ``lambda r: (r.max(axis=1) >= -250).sum() >= 7``; None trains the whole budget.
      progress: optional callback after each evaluation (the payload of
        :class:`jaxrl.training.run.Watch`: ``env_steps``, ``eval_return``, ``eval_returns``,
        ``seconds``, ``state``, ``carry``, ``metrics``).
      seed_axis: how the seeds run together in each program: ``"vmap"``, ``"map"`` or
        ``"auto"`` (:func:`jaxrl.training.over_seeds`).

    Returns:
      ``(final_states, metrics)`` as ``over_seeds(loop.train)(keys)`` returns them (seed axis
      first), cut after the period at which ``stop`` returned True.
    """
    typed = jax.dtypes.issubdtype(jnp.result_type(keys), jax.dtypes.prng_key)
    if np.ndim(keys) != (1 if typed else 2) or (not typed and np.shape(keys)[1] != 2):
        raise TypeError(
            f"train_until: keys must be one PRNG key per seed, [S] (seed_keys(seed, S)), got "
            f"{type(keys).__name__} {list(np.shape(keys))}"
        )
    seeds = JaxLoop(
        [loop.agent], loop.env, [loop.config], env_params=loop.env_params, keys=keys,
        seed_axis=seed_axis,
    )  # fmt: skip
    watch = Watch(seeds, stop, progress)
    carry = train_periods(seeds, [watch], seeds.init(), 0, on_period=watch.stops)
    return carry.state, watch.metrics()

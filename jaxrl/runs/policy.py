"""A trained policy in your hands: :func:`jaxrl.load` a run directory's checkpoint as a
:class:`jaxrl.Policy` that acts on plain NumPy observations, and
:func:`jaxrl.evaluate_policy` it (the one evaluation of ``jaxrl evaluate``, for gymnax, Brax
and gymnasium environments alike).

A :class:`Policy` folds in what the run's evaluations do around the network: the run's
observation normalization (its statistics, frozen at the checkpoint) before the network,
the agent's action bounding and scaling after it, so its actions are in the environment's
units. :mod:`jaxrl.runs.export` writes the same function as a file that runs without jaxrl.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.algorithms.protocol import Agent
from jaxrl.config.run_config import RunConfig
from jaxrl.core._checks import check_bool, check_int, check_key
from jaxrl.core.normalization import RunningMeanStd, normalize_observations
from jaxrl.runs.bookkeeping import checkpoint_env_steps
from jaxrl.runs.build import make_loop
from jaxrl.runs.checkpoints import CheckpointError, CheckpointStore
from jaxrl.runs.metrics import best_evaluation
from jaxrl.runs.run_dir import RunDir, RunDirError, nested_runs
from jaxrl.runs.runner import load_run
from jaxrl.spaces import SpaceSpec, describe_space

Checkpoint = Literal["last", "best"] | int


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Policy:
    """A run's trained policy (:func:`load`): ``policy(obs)`` is its deterministic action.

    Attributes:
      agent: the algorithm object (:class:`jaxrl.NPG`, :class:`jaxrl.TRPO`, :class:`jaxrl.DDPG`).
      state: the agent state of the checkpoint; with ``seed=None`` every leaf has a leading
        seed axis ``[S]``.
      obs_stats: the observation statistics the run normalized with (frozen at the
        checkpoint; same seed axis), or None for a run without observation normalization.
      config: the run's :class:`~jaxrl.config.RunConfig`.
      seed: the index of the run's seed this policy is (``0 .. num_seeds - 1``), or None for
        every seed.
      step: the checkpoint's step (the evaluation period it was written after).
      metadata: the checkpoint's metadata (``period``, ``env_steps``, ...).
      observation_shape: the shape of one observation of the run's environment.
    """

    agent: Agent
    state: Any
    obs_stats: RunningMeanStd | None
    config: RunConfig
    seed: int | None
    step: int
    metadata: dict[str, Any]
    observation_shape: tuple[int, ...]

    def __repr__(self) -> str:
        seeds = f"seed {self.seed}" if self.seed is not None else f"{self.config.num_seeds} seeds"
        steps = self.metadata.get("env_steps")
        per_seed = f" ({steps:,} env steps per seed)" if isinstance(steps, int) else ""
        return (
            f"Policy({self.config.algo.upper()} on {self.config.env}, {seeds}, checkpoint "
            f"{self.step}{per_seed}, obs {list(self.observation_shape)})"
        )

    def __call__(self, obs: Any) -> np.ndarray:
        """:meth:`act` with the deterministic action."""
        return self.act(obs)

    def act(self, obs: Any, *, deterministic: bool = True, key: Any = None) -> np.ndarray:
        """Actions in the environment's units for ``obs``: one observation
        ``[*observation_shape]`` or a batch ``[B, *observation_shape]`` (NumPy or JAX
        arrays); the result has the same leading batch axis, if any, and for ``seed=None``
        a leading seed axis ``[S]`` before it. Jitted (compiled once per agent, mode and
        input shape).

        ``deterministic`` (default): the policy's mode (NPG/TRPO: the distribution's mean,
        bounded and scaled, or the most likely discrete action; DDPG: ``mu(s)`` without
        noise). ``deterministic=False`` samples (NPG/TRPO) or adds the exploration noise
        (DDPG) with the PRNG ``key``, which it then needs: a new key for each call, as JAX
        draws the same numbers from the same key."""
        obs = obs if isinstance(obs, jax.Array) else np.asarray(obs)
        if obs.dtype.kind not in "biuf":
            raise TypeError(f"observations must be numbers, got {obs.dtype} {obs!r:.60}")
        obs = jnp.asarray(obs)
        single = obs.shape == self.observation_shape
        if not single and obs.shape[1:] != self.observation_shape:
            raise ValueError(
                f"observations must have shape {list(self.observation_shape)} or [B, "
                f"{', '.join(map(str, self.observation_shape))}] ({self.config.env}), got "
                f"{list(obs.shape)}"
            )
        check_bool("Policy.act: deterministic", deterministic)
        if key is not None:
            check_key("Policy.act: key", key)
        elif not deterministic:
            raise TypeError(
                "Policy.act(deterministic=False) samples: give it key=, a new PRNG key each "
                "call (jax.random.key(seed), then jax.random.split)"
            )
        key = jax.random.key(0) if key is None else key
        batch = obs[None] if single else obs
        if self.seed is None:
            actions = _act_seeds(self.agent, deterministic, self.state, self.obs_stats, batch, key)
            return np.asarray(actions[:, 0] if single else actions)
        actions = _act(self.agent, deterministic, self.state, self.obs_stats, batch, key)
        return np.asarray(actions[0] if single else actions)

    def action_function(self) -> Any:
        """``obs [B, *observation_shape] -> actions [B, ...]``: this seed's deterministic
        action as a pure JAX function, its parameters and statistics closed over as
        constants (what :mod:`jaxrl.runs.export` serializes).

        Raises:
          ValueError: a policy of every seed (``seed=None``): choose one.
        """
        if self.seed is None:
            raise ValueError("a policy of every seed has no single action function: load(seed=i)")
        return functools.partial(_actions, self.agent, True, self.state, self.obs_stats)


def _actions(
    agent: Agent, deterministic: bool, state: Any, stats: Any, obs: jax.Array, key: Any = None
) -> jax.Array:
    _, obs = normalize_observations(stats, obs, update=False)
    key = jax.random.key(0) if key is None else key
    return agent.policy(state, obs, key, deterministic)


_act = jax.jit(_actions, static_argnums=(0, 1))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _act_seeds(
    agent: Agent, deterministic: bool, state: Any, stats: Any, obs: jax.Array, key: Any
) -> jax.Array:
    def one(state: Any, stats: Any) -> jax.Array:
        return _actions(agent, deterministic, state, stats, obs, key)

    return jax.vmap(one)(state, stats)


def _open(run_dir: str | Path | RunDir) -> RunDir:
    """The run directory ``run_dir``; for a sweep's or a tune's directory (its runs one or
    two levels below), an error naming some of its runs."""
    if isinstance(run_dir, RunDir):
        return run_dir
    if not isinstance(run_dir, str | os.PathLike):
        raise TypeError(
            f"a run directory must be a path, got {type(run_dir).__name__} {run_dir!r:.60}"
        )
    runs = nested_runs(run_dir)
    if runs:
        shown = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise RunDirError(
            f"{str(run_dir)!r} holds {len(runs)} run{'s' if len(runs) != 1 else ''} (a sweep "
            f"or a tune): load one of them, {shown}"
        )
    return RunDir.open(run_dir)


def _checkpoint_step(run_dir: RunDir, store: CheckpointStore, checkpoint: Checkpoint) -> int:
    steps = store.steps()
    if not steps:
        raise CheckpointError(f"run {str(run_dir.path)!r} has no finished checkpoint yet")
    kept = ", ".join(map(str, steps))
    if checkpoint == "last":
        return steps[-1]
    if checkpoint == "best":
        best = best_evaluation(run_dir.evals_csv)
        if best is None:
            raise CheckpointError(f"run {str(run_dir.path)!r} has no evaluations (evals.csv)")
        period, mean, env_steps = best
        # The checkpoint of the policy evaluated: the one of the evaluation's env steps (the
        # period's own, or the one before when evaluated alongside training).
        holding = [s for s, e in checkpoint_env_steps(store, steps).items() if e == env_steps]
        if not holding:
            raise CheckpointError(
                f"the best evaluation of {str(run_dir.path)!r} (mean {mean:.1f} after "
                f"{env_steps:,} env steps, period {period}) has no checkpoint: a run writes "
                f"one every --checkpoint-every periods and keeps the newest two and the best "
                f"evaluated (here of periods {kept}); load checkpoint='last' or one of those "
                "periods"
            )
        return holding[0]
    if isinstance(checkpoint, (int, np.integer)) and not isinstance(checkpoint, bool):
        if int(checkpoint) not in steps:
            raise CheckpointError(
                f"run {str(run_dir.path)!r} has no finished checkpoint at period {checkpoint} "
                f"(its checkpoints: {kept})"
            )
        return int(checkpoint)
    raise ValueError(f"checkpoint must be 'last', 'best' or a period, got {checkpoint!r}")


def load(
    run_dir: str | Path | RunDir, seed: int | None = 0, checkpoint: Checkpoint = "last"
) -> Policy:
    """The trained policy of the run in ``run_dir`` (a run directory of ``jaxrl train``, or
    one run of a sweep's or a tune's directory).

    Args:
      run_dir: the run's directory.
      seed: which of the run's seeds (an index, ``0 .. num_seeds - 1``); None: every seed,
        the state and statistics with a leading seed axis ``[S]``.
      checkpoint: ``"last"``: the newest finished checkpoint; ``"best"``: the checkpoint of
        the policy with the best evaluation during training (the best mean return across
        seeds in ``evals.csv``); a run keeps its newest two checkpoints and its
        best-evaluated one, so ``"best"`` raises only when that evaluation's policy was not
        checkpointed (``checkpoint_every``; the initial policy); an int: the checkpoint of
        that period.

    The arrays are placed on this process's default device, whatever device wrote them (a
    run trained on a GPU loads on a CPU).

    Raises:
      RunDirError: ``run_dir`` is not a run directory.
      CheckpointError: no finished checkpoint (or none of the period asked for), or one that
        does not restore.
      ValueError, TypeError: ``seed`` outside the run's seeds, or no int.
    """
    check_int("seed", seed, optional=True)
    run_dir = _open(run_dir)
    config = RunConfig.load(run_dir.config)
    if seed is not None and not 0 <= seed < config.num_seeds:
        raise ValueError(
            f"seed {seed} is not one of the run's {config.num_seeds} seeds "
            f"(0 to {config.num_seeds - 1})"
        )
    step = _checkpoint_step(run_dir, CheckpointStore(run_dir.checkpoints), checkpoint)
    loaded = load_run(run_dir, step)
    state, stats = loaded.state, loaded.carry.obs_stats
    if seed is not None:
        state, stats = jax.tree_util.tree_map(lambda x: x[seed], (state, stats))
    shape = _spaces(config)[0].shape
    return Policy(loaded.agent, state, stats, config, seed, step, loaded.metadata, shape)


def _spaces(config: RunConfig) -> tuple[SpaceSpec, SpaceSpec]:
    """The observation and action spaces of ``config`` 's environment."""
    if config.backend == "jax":
        from jaxrl.envs import make_env

        env, params = make_env(config.env, brax_backend=config.brax_backend)
        spaces = env.observation_space(params), env.action_space(params)
    else:
        from jaxrl.envs.host import make_host_env

        env = make_host_env(config.env, 1, config.seed, config.env_backend)
        try:
            spaces = env.single_observation_space, env.single_action_space
        finally:
            env.close()
    return describe_space(spaces[0], "observation_space"), describe_space(spaces[1], "action_space")


def evaluate_policy(
    policy: Policy | str | Path,
    episodes: int = 10,
    seed: int = 0,
    *,
    env: str | None = None,
    deterministic: bool | None = None,
) -> np.ndarray:
    """Mean undiscounted return of ``episodes`` fresh episodes of each of the policy's seeds:
    ``[S]`` for a policy of every seed, ``[1]`` for one seed's. The numbers of
    ``jaxrl evaluate RUN_DIR --episodes E --seed K``: seed ``i``'s episodes are the same
    whether it is evaluated alone (``load(run_dir, seed=i)``) or with the others.

    Args:
      policy: a :class:`Policy`, or a run directory (its last checkpoint, every seed).
      episodes: episodes per seed, run in parallel; each counts until its first end.
      seed: the evaluation's seed (environment resets, and sampled actions).
      env: another environment id with the same observation and action spaces (default:
        the run's); a gymnax or Brax id runs in one jitted program, another id on
        gymnasium or EnvPool environments.
      deterministic: act with the policy's mode (default: as the agent evaluates,
        ``agent.evaluates_deterministically``: DDPG always, NPG/TRPO with
        ``deterministic_eval``).

    Raises:
      ValueError, TypeError: ``episodes`` not a positive int, ``seed`` no int,
        ``deterministic`` no bool (or None); ``policy`` neither a policy nor a path.
    """
    check_int("episodes", episodes, low=1)
    check_int("seed", seed)
    check_bool("deterministic", deterministic, optional=True)
    if not isinstance(policy, Policy):
        policy = load(policy, seed=None)
    config, state, stats = policy.config, policy.state, policy.obs_stats
    if env is not None and env != config.env:
        from jaxrl.envs import resolve_backend

        config = dataclasses.replace(config, env=env, backend=resolve_backend(env))
        ran, other = (
            " and ".join(s.describe() for s in _spaces(c)) for c in (policy.config, config)
        )
        if ran != other:
            raise ValueError(
                f"env {env} has the spaces {other}, the policy's ({policy.config.env}) are {ran}"
            )
    if policy.seed is not None:
        # Seed i evaluated alone as in the run's evaluation of every seed (the drivers'
        # seeding rule: seed s + i of the jitted driver, environments seeded from
        # s + i * episodes on the host).
        state, stats = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], (state, stats))
        seed += policy.seed * (1 if config.backend == "jax" else episodes)
        config = dataclasses.replace(config, num_seeds=1)
    if deterministic is None:
        deterministic = policy.agent.evaluates_deterministically
    loop = make_loop(config, policy.agent)
    try:
        returns = loop.evaluate(state, stats, episodes, seed, bool(deterministic))
    finally:
        loop.close()
    return np.asarray(returns, np.float64)

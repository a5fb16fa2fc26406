"""Training, resuming and evaluating runs kept in a run directory (:mod:`jaxrl.io.run_dir`).

JAX (gymnax) environments run in the jitted driver: ``loop = make_train_loop(...)``, all
seeds vmapped in one program, and the host calls ``run_period`` once per evaluation period.
After each period it writes the metrics, updates the progress bar and, every
``checkpoint_every`` periods and at the end, checkpoints the whole ``TrainCarry`` (agent
state, replay buffer, environment states, PRNG key). A resumed run restores the carry and the
period index and calls the same compiled ``run_period``, so it ends with exactly the
parameters of an uninterrupted run.

Other gymnasium ids run in the host driver
(:func:`jaxrl.training.gymnasium_driver.train_gymnasium`; EnvPool or gymnasium environments),
all seeds vmapped in one process. Metrics, evaluations and checkpoints are written as the
driver reports each evaluation period. Checkpoints hold the driver's ``HostCarry``: agent
states, observation statistics and (unless ``checkpoint_buffer`` is off) the replay buffers.
A resumed host run restores them and trains the remaining periods with fresh environments
and a seed offset, so it is not bit-identical to an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.io.checkpoints import CheckpointError, CheckpointStore
from jaxrl.io.config import Backend, RunConfig
from jaxrl.io.metrics import MetricsLogger
from jaxrl.io.plots import plot_runs
from jaxrl.io.progress import RunProgress
from jaxrl.io.report import FinalEvaluation
from jaxrl.io.run_dir import RunDir


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What a call of :func:`train_run` did.

    Attributes:
      run_dir: the run directory.
      config: the run's configuration.
      period: evaluation periods completed (in total, over all resumes).
      num_periods: evaluation periods of the whole run.
      env_steps: env steps per seed completed.
      eval_returns: the latest evaluation return of each seed.
      checkpoint: the newest checkpoint directory (None if none was written).
      plot: the learning-curve image.
      seconds: wall time of this call.
      final: evaluations of the final policy (when this call finished the run), else None.
    """

    run_dir: RunDir
    config: RunConfig
    period: int
    num_periods: int
    env_steps: int
    eval_returns: np.ndarray
    checkpoint: Path | None
    plot: Path
    seconds: float
    final: FinalEvaluation | None = None

    @property
    def finished(self) -> bool:
        """Whether the run reached its last period."""
        return self.period >= self.num_periods


@dataclasses.dataclass(frozen=True)
class LoadedRun:
    """A run's policy loaded from a checkpoint (:func:`load_run`).

    Attributes:
      config: the run's configuration.
      agent: the algorithm object.
      state: the agent state; on JAX runs every leaf has a leading seed axis.
      carry: the whole ``TrainCarry`` of a JAX run (None for gymnasium runs).
      metadata: the checkpoint's metadata (``period``, ``env_steps``, ...).
      step: the checkpoint step (the period it was written after).
    """

    config: RunConfig
    agent: Any
    state: Any
    carry: Any
    metadata: dict[str, Any]
    step: int


# ---------------------------------------------------------------------------------------------
# Environments
# ---------------------------------------------------------------------------------------------


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
    close = difflib.get_close_matches(env, jax_ids + gym_ids, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(
        f"unknown environment id {env!r}: neither a gymnax nor a registered gymnasium id{hint}"
    )


def _host_spaces(config: RunConfig) -> tuple[Any, Any]:
    """The observation and action spaces of the run's host environments (the backend it
    uses: EnvPool's and gymnasium's may differ in dtype)."""
    from jaxrl.envs import make_host_env

    env = make_host_env(config.env, 1, config.seed, config.env_backend)
    spaces = env.single_observation_space, env.single_action_space
    env.close()
    return spaces


def _host_seeds(config: RunConfig, offset: int = 0) -> list[int]:
    return [config.seed + offset + i for i in range(config.num_seeds)]


def _host_carry(config: RunConfig, agent: Any, abstract: bool) -> Any:
    """The fresh ``HostCarry`` of a host run (shapes only with ``abstract``)."""
    from jaxrl.training.gymnasium_driver import init_host_carry

    observation_space, action_space = _host_spaces(config)

    def make() -> Any:
        return init_host_carry(
            agent,
            _host_seeds(config),
            observation_space,
            action_space,
            config.num_envs,
            config.normalize_obs,
        )

    return jax.eval_shape(make) if abstract else make()


def _checkpointed(config: RunConfig, carry: Any) -> dict[str, Any]:
    """What a host run's checkpoint holds: the carry, without the buffer if so configured."""
    if not config.checkpoint_buffer:
        carry = carry._replace(buffer=None)
    return {"carry": carry}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def seed_keys(config: RunConfig) -> jax.Array:
    """The PRNG keys of the run's seeds: ``jax.random.split(key(seed), num_seeds)``."""
    return jax.random.split(jax.random.key(config.seed), config.num_seeds)


def _canonical(tree: Any) -> Any:
    """Strongly typed leaves committed to the default device, so fresh, continued and
    restored carries all call the same compiled ``run_period``."""
    tree = jax.tree_util.tree_map(
        lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, tree
    )
    return jax.device_put(tree, jax.devices()[0])


def _train_config(config: RunConfig) -> Any:
    from jaxrl.training import TrainConfig

    return TrainConfig(
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=config.total_steps,
        eval_every=config.eval_every,
        eval_episodes=config.eval_episodes,
        normalize_obs=config.normalize_obs,
    )


def _layout(config: RunConfig) -> Any:
    from jaxrl.training.periods import RunLayout

    return RunLayout.of(config.num_envs, config.num_steps, config.total_steps, config.eval_every)


class _Run:
    """Shared bookkeeping of a training call: metrics, checkpoints, progress, plot."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: RunDir,
        store: CheckpointStore,
        start_period: int,
        start_steps: int,
        elapsed: float,
        resumed: bool,
        num_periods: int,
        total_steps: int,
        progress: bool,
    ) -> None:
        self.config, self.run_dir, self.store = config, run_dir, store
        self.period, self.env_steps = start_period, start_steps
        self.num_periods = num_periods
        self.elapsed0, self.started = elapsed, time.perf_counter()
        # A run resumed without a checkpoint starts over: its files are cleared (period -1),
        # and every run that starts at period 0 first logs the initial policy's evaluation.
        self.metrics = MetricsLogger(
            run_dir.path,
            config.num_seeds,
            resume_period=(start_period if start_period > 0 else -1) if resumed else None,
            resume_steps=start_steps,
        )
        if start_period == 0:
            run_dir.final_eval.unlink(missing_ok=True)
        self.final: FinalEvaluation | None = None
        self.eval_returns = np.full(config.num_seeds, np.nan)
        self.checkpoint: Path | None = (
            run_dir.checkpoints / str(start_period) if start_period in store.steps() else None
        )
        self.saved_period = start_period if self.checkpoint is not None else -1
        description = f"{config.algo.upper()} {config.env}" + (
            f" x{config.num_seeds}" if config.num_seeds > 1 else ""
        )
        self.progress = RunProgress(
            description, total_steps, config.num_seeds, start_steps=start_steps
        )
        if not progress:
            self.progress.console.quiet = True

    def wall_time(self) -> float:
        return self.elapsed0 + time.perf_counter() - self.started

    def start(self, agent: Any, state: Any, obs_stats: Any) -> None:
        """At period 0, evaluate the initial policy: the learning curve's first point."""
        if self.period == 0:
            returns = evaluate_policy(
                self.config, agent, state, obs_stats, self.config.eval_episodes
            )
            self._log_evals(returns, 0)

    def finish(self, agent: Any, state: Any, obs_stats: Any) -> None:
        """After the last period: evaluate the final policy (``final_eval.json``)."""
        if self.period >= self.num_periods:
            self.final = final_evaluation(self.config, agent, state, obs_stats, self.env_steps)
            self.final.save(self.run_dir.final_eval)

    def end_period(
        self, update_rows: list[dict[str, Any]], eval_returns: np.ndarray, env_steps: int
    ) -> None:
        """Log one evaluation period (``self.period`` already advanced)."""
        self.env_steps = env_steps
        self.eval_returns = np.asarray(eval_returns, np.float64)
        self.metrics.log_updates(update_rows)
        self._log_evals(self.eval_returns, env_steps)
        per_seed = jnp.asarray(self.eval_returns)
        self.progress.update(env_steps, float(jnp.mean(per_seed)), float(jnp.std(per_seed)))

    def _log_evals(self, returns: np.ndarray, env_steps: int) -> None:
        wall = self.wall_time()
        self.metrics.log_evals(
            [
                {
                    "seed": seed,
                    "period": self.period,
                    "env_steps": env_steps,
                    "eval_return": float(value),
                    "wall_time": round(wall, 3),
                }
                for seed, value in enumerate(returns)
            ]
        )

    def checkpoint_due(self) -> bool:
        every = self.config.checkpoint_every
        return self.period >= self.num_periods or (every > 0 and self.period % every == 0)

    def save(self, tree: Any) -> None:
        """Checkpoint ``tree`` as this period (in the background) and redraw the plot."""
        self.store.save(
            self.period,
            tree,
            {
                "period": self.period,
                "env_steps": self.env_steps,
                "elapsed": self.wall_time(),
                "algo": self.config.algo,
                "env": self.config.env,
                "backend": self.config.backend,
            },
        )
        self.checkpoint = self.run_dir.checkpoints / str(self.period)
        self.saved_period = self.period
        self.plot()

    def plot(self) -> Path:
        return plot_runs([self.run_dir.path], self.run_dir.plot)

    def close(self) -> None:
        self.store.close()
        self.metrics.close()

    def result(self) -> TrainResult:
        return TrainResult(
            run_dir=self.run_dir,
            config=self.config,
            period=self.period,
            num_periods=self.num_periods,
            env_steps=self.env_steps,
            eval_returns=self.eval_returns,
            checkpoint=self.checkpoint,
            plot=self.run_dir.plot,
            seconds=time.perf_counter() - self.started,
            final=self.final,
        )


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def train_run(
    config: RunConfig,
    run_dir: RunDir,
    *,
    resume: bool = False,
    stop_after_periods: int | None = None,
    progress: bool = True,
    on_setup: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train (or resume) the run ``config`` in ``run_dir``.

    Args:
      config: the run's configuration (saved to ``config.json`` first).
      run_dir: its directory.
      resume: continue from the newest finalized checkpoint (from scratch if there is none).
      stop_after_periods: end after this many evaluation periods of this call, as an
        interruption would (the run stays resumable from its last checkpoint).
      progress: show the progress bar / progress lines on stderr.
      on_setup: called with a message once the run is set up (before compiling).

    Raises:
      ValueError, TypeError: invalid configuration (before anything is trained).
      KeyboardInterrupt: after finishing pending checkpoint writes.
    """
    agent = config.make_agent()
    config.save(run_dir.config)
    if config.backend == "jax":
        return _train_jax(config, agent, run_dir, resume, stop_after_periods, progress, on_setup)
    return _train_gymnasium(config, agent, run_dir, resume, stop_after_periods, progress, on_setup)


def check_config(config: RunConfig) -> None:
    """Build what the run needs (agent, environment, driver) without training.

    Raises:
      ValueError, TypeError: the problem, naming the field or setting.
    """
    agent = config.make_agent()
    if config.backend == "jax":
        loop = _jax_loop(config, agent)
        jax.eval_shape(loop.init, jax.random.key(config.seed))  # the agent accepts the spaces
    else:
        _layout(config)
        _host_carry(config, agent, abstract=True)


def _jax_env(env_id: str, brax_backend: str | None) -> tuple[Any, Any]:
    from jaxrl.envs import make_env

    return make_env(env_id, brax_backend=brax_backend)


def _jax_loop(config: RunConfig, agent: Any) -> Any:
    from jaxrl.training import make_train_loop

    env, env_params = _jax_env(config.env, config.brax_backend)
    return make_train_loop(agent, env, _train_config(config), env_params)


def _resume_point(
    store: CheckpointStore, like: Any, resume: bool
) -> tuple[Any, dict[str, Any] | None]:
    if not resume or store.latest_step() is None:
        store.prune_after(0)
        return None, None
    tree, meta = store.restore(like)
    store.prune_after(meta["period"])
    return tree, meta


def _train_jax(
    config: RunConfig,
    agent: Any,
    run_dir: RunDir,
    resume: bool,
    stop_after_periods: int | None,
    progress: bool,
    on_setup: Callable[[str], None] | None,
) -> TrainResult:
    from jaxrl.training.jax_driver import vmapped_programs

    loop = _jax_loop(config, agent)
    train_config = _train_config(config)
    keys = seed_keys(config)
    init, run_period = vmapped_programs(loop)
    store = CheckpointStore(run_dir.checkpoints)
    restored, meta = _resume_point(store, jax.eval_shape(init, keys), resume)
    carry = _canonical(init(keys) if restored is None else restored)
    run = _Run(
        config,
        run_dir,
        store,
        start_period=meta["period"] if meta else 0,
        start_steps=meta["env_steps"] if meta else 0,
        elapsed=meta["elapsed"] if meta else 0.0,
        resumed=resume,
        num_periods=loop.num_periods,
        total_steps=loop.num_periods * train_config.updates_per_eval * config.steps_per_update,
        progress=progress,
    )
    if on_setup is not None:
        on_setup(_setup_message(run, train_config.updates_per_eval))
    periods_done = 0
    try:
        with run.progress:
            run.start(agent, carry.state, carry.obs_stats)
            while run.period < loop.num_periods:
                carry, metrics = run_period(carry)
                carry = _canonical(carry)
                run.period += 1
                periods_done += 1
                metrics = jax.device_get(metrics)
                run.end_period(
                    update_rows(metrics, run.period),
                    metrics["eval/return"],
                    int(metrics["eval/env_steps"][0]),
                )
                if run.checkpoint_due():
                    run.save(carry)
                if stop_after_periods is not None and periods_done >= stop_after_periods:
                    break
            run.finish(agent, carry.state, carry.obs_stats)
        run.plot()
    finally:
        run.close()
    return run.result()


def update_rows(
    metrics: dict[str, np.ndarray], period: int, steps_offset: int = 0
) -> list[dict[str, Any]]:
    """One row per seed and update of a period's per-update metrics ``[S, U]`` (both
    drivers); ``steps_offset`` is added to ``env_steps`` (a resumed host run counts from 0)."""
    per_update = {k: np.asarray(v) for k, v in metrics.items() if not k.startswith("eval/")}
    num_seeds, updates = per_update["env_steps"].shape
    rows = []
    for seed in range(num_seeds):
        for index in range(updates):
            row = {name: value[seed, index] for name, value in per_update.items()}
            row.update(seed=seed, period=period, update=(period - 1) * updates + index + 1)
            row["env_steps"] = int(row["env_steps"]) + steps_offset
            rows.append(row)
    return rows


def _setup_message(run: _Run, updates_per_eval: int) -> str:
    config = run.config
    where = (
        f"resuming at period {run.period}/{run.num_periods} ({run.env_steps:,} env steps)"
        if run.period
        else f"{run.num_periods} evaluation periods of {updates_per_eval} update(s)"
    )
    seeds = f"{config.num_seeds} seed{'s' if config.num_seeds != 1 else ''}"
    driver = "in one jitted program" if config.backend == "jax" else "on the host driver"
    return (
        f"{config.algo.upper()} on {config.env}: {seeds} {driver}, {where}; "
        f"run directory {run.run_dir.path}"
    )


def _train_gymnasium(
    config: RunConfig,
    agent: Any,
    run_dir: RunDir,
    resume: bool,
    stop_after_periods: int | None,
    progress: bool,
    on_setup: Callable[[str], None] | None,
) -> TrainResult:
    from jaxrl.training.gymnasium_driver import train_gymnasium

    layout = _layout(config)
    template = _host_carry(config, agent, abstract=True)
    store = CheckpointStore(run_dir.checkpoints)
    restored, meta = _resume_point(store, _checkpointed(config, template), resume)
    start_period = meta["period"] if meta else 0
    start_steps = start_period * layout.steps_per_period
    run = _Run(
        config,
        run_dir,
        store,
        start_period=start_period,
        start_steps=start_steps,
        elapsed=meta["elapsed"] if meta else 0.0,
        resumed=resume,
        num_periods=layout.num_periods,
        total_steps=layout.total_steps,
        progress=progress,
    )
    periods = layout.num_periods - start_period
    if stop_after_periods is not None:  # end early at a period boundary, as if interrupted
        periods = min(periods, stop_after_periods)
    if restored is None:
        initial = _host_carry(config, agent, abstract=False)
    else:
        initial = restored["carry"]
        if initial.buffer is None and not config.checkpoint_buffer:
            initial = initial._replace(buffer=_host_carry(config, agent, abstract=False).buffer)
    initial = _canonical(initial)
    last = {"carry": initial}

    def on_evaluation(info: dict[str, Any]) -> None:
        last["carry"] = info["carry"]
        run.period += 1
        run.end_period(
            update_rows(info["metrics"], run.period, start_steps),
            info["eval_returns"],
            start_steps + info["env_steps"],
        )
        if run.checkpoint_due():
            run.save(_checkpointed(config, info["carry"]))

    if on_setup is not None:
        on_setup(_setup_message(run, layout.collections_per_period))
    try:
        with run.progress:
            run.start(agent, initial.state, initial.obs_stats)
            if periods > 0:
                train_gymnasium(
                    agent,
                    config.env,
                    num_envs=config.num_envs,
                    num_steps=config.num_steps,
                    total_steps=periods * layout.steps_per_period,
                    eval_every=config.eval_every,
                    eval_episodes=config.eval_episodes,
                    # A resumed run continues on fresh environments and keys.
                    seed=config.seed + start_steps,
                    num_seeds=config.num_seeds,
                    normalize_obs=config.normalize_obs,
                    env_backend=config.env_backend,
                    initial=initial,
                    progress=on_evaluation,
                )
            run.finish(agent, last["carry"].state, last["carry"].obs_stats)
        run.plot()
    finally:
        run.close()
    return run.result()


# ---------------------------------------------------------------------------------------------
# Loading and evaluation
# ---------------------------------------------------------------------------------------------


def load_run(run_dir: str | Path | RunDir, step: int | None = None) -> LoadedRun:
    """Load a run's policy from its newest finalized checkpoint (or ``step``).

    Raises:
      CheckpointError: the run has no finalized checkpoint (or none at ``step``).
    """
    run_dir = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    config = RunConfig.load(run_dir.config)
    agent = config.make_agent()
    store = CheckpointStore(run_dir.checkpoints)
    if store.latest_step() is None:
        raise CheckpointError(f"run {str(run_dir.path)!r} has no finished checkpoint yet")
    if config.backend == "jax":
        loop = _jax_loop(config, agent)
        like = jax.eval_shape(jax.vmap(loop.init), seed_keys(config))
        carry, meta = store.restore(like, step)
        return LoadedRun(config, agent, carry.state, carry, meta, meta["step"])
    like = _checkpointed(config, _host_carry(config, agent, abstract=True))
    tree, meta = store.restore(like, step)
    carry = tree["carry"]
    return LoadedRun(config, agent, carry.state, carry, meta, meta["step"])


def evaluate_policy(
    config: RunConfig,
    agent: Any,
    state: Any,
    obs_stats: Any,
    episodes: int,
    seed: int = 0,
    deterministic: bool | None = None,
) -> np.ndarray:
    """Mean return per seed ``[S]`` of ``episodes`` episodes of each seed's policy (``state``
    and ``obs_stats`` with a leading seed axis), on the run's environments. The policy acts
    as the algorithm evaluates (``agent.evaluates_deterministically``) unless
    ``deterministic`` says otherwise. Compiled once per agent, environment, episode count and
    mode."""
    if deterministic is None:
        deterministic = agent.evaluates_deterministically
    if config.backend == "jax":
        # On-policy agents evaluate in both modes (a traced flag: one compiled program);
        # DDPG only without noise (its OU noise state cannot take a traced flag).
        static = None if agent.learning_mode == "on_policy" else bool(deterministic)
        program = _jax_evaluation_program(agent, config.env, config.brax_backend, episodes, static)
        keys = jax.random.split(jax.random.key(seed), config.num_seeds)
        returns = program(state, obs_stats, keys, jnp.asarray(bool(deterministic)))
        return np.asarray(jax.device_get(returns), np.float64)
    from jaxrl.training.gymnasium_driver import evaluate_gymnasium

    returns = evaluate_gymnasium(
        agent,
        state,
        config.env,
        obs_stats,
        episodes,
        seed,
        env_backend=config.env_backend,
        num_seeds=config.num_seeds,
        deterministic=bool(deterministic),
    )
    return np.asarray(returns, np.float64)


@functools.lru_cache(maxsize=8)
def _jax_evaluation_program(
    agent: Any, env_id: str, brax_backend: str | None, episodes: int, static: bool | None
) -> Callable:
    """``(state [S], obs_stats [S], keys [S], deterministic) -> returns [S]``, jitted.

    With ``static=None``, ``deterministic`` is a traced bool, so that the deterministic and
    the stochastic evaluations (the step-0 and the final ones) share one compiled program;
    otherwise the policy acts as ``static`` says and the argument is ignored."""
    from jaxrl.training import evaluate

    env, env_params = _jax_env(env_id, brax_backend)

    def one(state: Any, stats: Any, key: jax.Array, deterministic: jax.Array) -> jax.Array:
        mode = deterministic if static is None else static
        return evaluate(agent, state, env, env_params, key, episodes, stats, mode)

    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None)))


def final_evaluation(
    config: RunConfig, agent: Any, state: Any, obs_stats: Any, env_steps: int
) -> FinalEvaluation:
    """Evaluate the final policy deterministically and (NPG/TRPO) stochastically,
    ``eval_episodes`` episodes per seed and mode; the deterministic figure is what
    ``jaxrl evaluate RUN_DIR --episodes <eval_episodes>`` reproduces for a deterministic
    evaluator."""
    episodes = config.eval_episodes
    deterministic = evaluate_policy(config, agent, state, obs_stats, episodes, 0, True)
    stochastic = None
    if agent.learning_mode == "on_policy":
        stochastic = evaluate_policy(config, agent, state, obs_stats, episodes, 0, False)
    return FinalEvaluation(episodes, env_steps, deterministic, stochastic)


def evaluate_run(
    run_dir: str | Path | RunDir, episodes: int = 10, seed: int = 0, step: int | None = None
) -> tuple[LoadedRun, np.ndarray]:
    """Evaluate a run's checkpointed policy: ``(loaded run, mean return per seed)``.

    Each seed's policy plays ``episodes`` episodes (deterministically where the algorithm
    evaluates so: DDPG always, NPG/TRPO with ``deterministic_eval``).
    """
    loaded = load_run(run_dir, step)
    returns = evaluate_policy(
        loaded.config, loaded.agent, loaded.state, loaded.carry.obs_stats, episodes, seed
    )
    return loaded, returns

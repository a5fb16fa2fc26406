"""What a run is built from, before it trains: the run the command would train for an
algorithm, environment and preset (:func:`jaxrl.make_config`), its agent
(:func:`jaxrl.make_agent`), the :class:`~jaxrl.training.loop.Loop` that trains it
(:func:`jaxrl.runs.make_loop`) and the check that all of it builds
(:func:`jaxrl.runs.check_config`)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from jaxrl.algorithms.protocol import Agent
from jaxrl.config.run_config import RunConfig
from jaxrl.config.settings import RunSettings
from jaxrl.training.loop import Loop
from jaxrl.training.sharding import SeedPlacement, several_processes


def make_loop(config: RunConfig, agent: Agent) -> Loop:
    """The :class:`jaxrl.training.loop.Loop` that trains ``config`` (``config.backend``) with
    ``agent``: :class:`~jaxrl.training.jax_loop.JaxLoop` on JAX environments,
    :class:`~jaxrl.training.gymnasium_driver.HostLoop` on gymnasium and EnvPool.

    Raises:
      ValueError: a host-driver run in a job of several processes.
    """
    if config.backend == "jax":
        from jaxrl.training.jax_loop import JaxLoop

        return JaxLoop([agent], config.env, [config], SeedPlacement.for_job())
    if several_processes():
        raise ValueError(
            f"several processes need the jitted driver (a gymnax or Brax id): {config.env} "
            "runs on the host driver"
        )
    from jaxrl.training.gymnasium_driver import HostLoop

    return HostLoop(agent, config.env, config)


def check_config(config: RunConfig) -> None:
    """Build what the run needs (agent, environment, driver) without training.

    Raises:
      ValueError, TypeError: the problem, naming the field or setting.
    """
    make_loop(config, config.make_agent()).check()


def make_config(
    algo: str,
    env: str = "Pendulum-v1",
    preset: str | None = None,
    *,
    hyperparameters: dict[str, Any] | None = None,
    **run: Any,
) -> RunConfig:
    """The run ``jaxrl train ALGO --env ENV [--preset PRESET]`` would train, with the run
    settings ``run`` (``total_steps=``, ``num_envs=``, ``normalize_obs=``, ``num_seeds=``,
    ...: the command's options by field name) and the hyperparameters ``hyperparameters``
    (command-line values by field name, ``{"max_kl": 0.02, "lr_schedule": "linear"}``)
    written as on the command line: every other value is the command's default, the
    preset's (``preset``, default :func:`jaxrl.config.presets.preset_for_env`'s) where it
    has one; a budget given without ``eval_every`` evaluates as the command's does; the
    driver, the host environments' library and Brax's physics resolved from ``env`` as the
    command resolves them (``backend=``, ``env_backend=``, ``brax_backend=`` choose).

    Its :meth:`~jaxrl.config.RunConfig.make_agent` is the command's agent (a learning-rate
    schedule sized by the run's updates); :func:`jaxrl.runs.train_run` trains it.

    Raises:
      ValueError, TypeError: an unknown algorithm, preset, environment id, setting or
        hyperparameter, or a setting out of range, naming it (a hyperparameter's value is
        read, and checked, by ``make_agent()``).
    """
    from jaxrl.config.presets import preset_for_env
    from jaxrl.config.run_config import run_defaults
    from jaxrl.config.settings import DEFAULT_NUM_SEEDS
    from jaxrl.config.spellings import command_line_options
    from jaxrl.envs import resolve_backend, resolve_env_backend
    from jaxrl.envs.brax_env import DEFAULT_BRAX_BACKEND, is_brax_id

    for name, value, what in (("algo", algo, "an algorithm's name"), ("env", env, "an env id")):
        if not isinstance(value, str):
            hint = "; a RunConfig makes its agent itself: config.make_agent()"
            raise TypeError(
                f"{name} must be {what} (a str), got {type(value).__name__}"
                + (hint if isinstance(value, RunConfig) else "")
            )
    preset = preset or preset_for_env(env)
    defaults = run_defaults(algo, preset, env)
    options = {
        name: default for name, _, default, _ in command_line_options(RunConfig, defaults, preset)
    }
    unknown = set(run) - set(options) - {"backend"}
    if unknown:
        raise TypeError(f"make_config() got {_unknown('run setting', unknown, options)}")
    given = {name: value for name, value in run.items() if name != "backend"}
    RunConfig.validate(given)  # before a default or the budget's arithmetic reads them
    settings = {
        name: value for name, value in options.items() if name not in ("env", "backend", "preset")
    }
    settings.update(RunSettings.for_budget(defaults, given))
    env_backend, backend = settings["env_backend"], run.get("backend", "auto")
    if env_backend != "auto" and backend == "jax":
        raise ValueError(
            f"env_backend={env_backend!r} runs host environments: it cannot be combined with "
            "backend='jax'"
        )
    host = env_backend != "auto" and backend == "auto"  # naming a host library chooses it
    backend = resolve_backend(env, "gymnasium" if host else backend)
    settings.update(
        num_seeds=settings["num_seeds"] or DEFAULT_NUM_SEEDS[backend],
        env_backend=resolve_env_backend(env, env_backend) if backend == "gymnasium" else "auto",
    )
    if is_brax_id(env):
        settings["brax_backend"] = settings["brax_backend"] or DEFAULT_BRAX_BACKEND
    hyper = _hyperparameters(algo, preset, env, hyperparameters)
    return RunConfig(
        algo=algo, env=env, backend=backend, hyperparameters=hyper, preset=preset, **settings
    )


def _hyperparameters(
    algo: str, preset: str, env: str, given: dict[str, Any] | None
) -> dict[str, Any]:
    """The preset's hyperparameters of ``algo`` on ``env``, ``given`` over them; a ``given``
    that is no dict, or names a field ``algo`` lacks, is refused naming it."""
    from jaxrl.config.spellings import hyperparameters

    hyper = {spec.name: spec.default for spec in hyperparameters(algo, preset, env)}
    if not isinstance(given, Mapping | None):
        raise TypeError(
            "hyperparameters must be a dict of field name -> value ({'max_kl': 0.02}), got "
            f"{type(given).__name__} {given!r:.60}"
        )
    unknown = set(given or {}) - set(hyper)
    if unknown:
        raise TypeError(
            f"make_config() got {_unknown(f'{algo} hyperparameter', unknown, hyper)} "
            f"({algo} has {', '.join(sorted(hyper))})"
        )
    return {**hyper, **(given or {})}


def _unknown(kind: str, names: set[str], known: Any) -> str:
    """``unknown KIND(s) a, b; did you mean c?``: the closest known name of each, if any."""
    names = sorted(names)
    close = [match for name in names for match in difflib.get_close_matches(name, known, n=1)]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"unknown {kind}{'s' if len(names) > 1 else ''} {', '.join(names)}{hint}"


def make_agent(
    algo: str,
    env: str = "Pendulum-v1",
    preset: str | None = None,
    *,
    hyperparameters: dict[str, Any] | None = None,
    **run: Any,
) -> Any:
    """The agent ``jaxrl train`` would train: :func:`jaxrl.make_config`'s
    :meth:`~jaxrl.config.RunConfig.make_agent`. The agent alone is not the run: the run's
    settings (observation normalization: ``config.normalize_obs``; the budget a schedule is
    sized by) are :func:`jaxrl.make_config`'s."""
    return make_config(algo, env, preset, hyperparameters=hyperparameters, **run).make_agent()

"""JAX-native environments for the jitted driver: gymnax ids, Brax ids, or objects.

Every environment the jitted driver (:mod:`jaxrl.training.jax_driver`) steps has gymnax's
interface; :func:`make_env` resolves what a user names to one:

- a gymnax id (``"Pendulum-v1"``, ``"CartPole-v1"``): ``gymnax.make``;
- a Brax id (``"brax:hopper"``): :class:`jaxrl.envs.brax_env.BraxEnv` on the backend given
  (``generalized`` by default);
- an object that already has the interface (passed through).

:func:`resolve_backend` says which driver runs an id: the jitted one (``"jax"``) for gymnax
and Brax ids, the host one (``"gymnasium"``) for other registered gymnasium ids.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from jaxrl.envs.brax_env import (
    DEFAULT_BRAX_BACKEND,
    Solver,
    brax_name,
    check_brax_name,
    is_brax_id,
    make_brax_env,
)
from jaxrl.envs.gymnax_env import import_gymnax

_INTERFACE = ("reset", "step", "observation_space", "action_space")


def make_env(
    env: Any,
    env_params: Any = None,
    *,
    brax_backend: str | None = None,
    brax_solver: Solver | None = None,
) -> tuple[Any, Any]:
    """Resolve an environment id or object to ``(env, params)``.

    Args:
      env: a gymnax id, a ``"brax:NAME"`` id, or an object with the gymnax interface.
      env_params: environment parameters (default: the environment's ``default_params``).
      brax_backend: Brax's physics backend for a Brax id (default ``generalized``).
      brax_solver: MJX's solver settings for a Brax id on ``mjx`` (default: the task's).

    Raises:
      ValueError: an unknown id (or a ``brax_backend`` given for an environment that is not
        a Brax id); ``TypeError``: an object without the gymnax interface;
        ``ModuleNotFoundError``: a Brax id without Brax installed.
    """
    if brax_backend is not None and not is_brax_id(env):
        raise ValueError(f"brax_backend is for Brax ids (brax:NAME); env is {env!r}")
    if brax_solver is not None and not brax_solver.is_default and not is_brax_id(env):
        raise ValueError(f"solver settings are for Brax ids (brax:NAME); env is {env!r}")
    if is_brax_id(env):
        backend = brax_backend or DEFAULT_BRAX_BACKEND
        env = make_brax_env(brax_name(env), backend, solver=brax_solver)
    elif isinstance(env, str):
        gymnax = import_gymnax()
        if env not in gymnax.registered_envs:
            raise ValueError(f"env: {_unknown_gymnax_id(env, gymnax.registered_envs)}")
        try:
            env, default_params = gymnax.make(env)
        except (ValueError, KeyError) as error:
            raise ValueError(f"env: unknown gymnax environment id {env!r}") from error
        return env, env_params if env_params is not None else default_params
    for method in _INTERFACE:
        if not callable(getattr(env, method, None)):
            raise TypeError(
                f"env must have the gymnax interface (a gymnax or Brax environment; {_HOST} "
                f"takes gymnasium's, by id); it lacks {method}()"
            )
    return env, env_params if env_params is not None else env.default_params


_HOST = "the host driver (jaxrl.training.gymnasium_driver.train_gymnasium)"


def _unknown_gymnax_id(env: str, ids: Any) -> str:
    """The line for an id gymnax does not have: gymnasium's id, the driver that runs it;
    another, the closest ids gymnax has."""
    import gymnasium as gym

    if env in gym.envs.registry:
        return f"{env!r} is gymnasium's, not gymnax's: {_HOST} runs it (--backend gymnasium)"
    close = difflib.get_close_matches(env, list(ids), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"unknown gymnax environment id {env!r}{hint}"


def resolve_backend(env: str, backend: str = "auto") -> Literal["jax", "gymnasium"]:
    """``"jax"`` for gymnax and Brax (``brax:NAME``) ids, ``"gymnasium"`` for other registered
    gymnasium ids (or any id when ``backend="gymnasium"``).

    Raises:
      ValueError: a ``backend`` other than ``"auto"``, ``"jax"`` or ``"gymnasium"``; an id
        neither library knows, naming the closest known ids, a Brax id Brax does not
        register, or a Brax id with ``backend="gymnasium"``.
    """
    import gymnasium as gym

    if backend not in ("auto", "jax", "gymnasium"):
        raise ValueError(f"backend must be 'auto', 'jax' or 'gymnasium', got {backend!r}")

    gymnax = import_gymnax()
    if is_brax_id(env):
        if backend == "gymnasium":
            raise ValueError(f"{env} is a Brax environment: it runs in the jitted driver (jax)")
        check_brax_name(brax_name(env))
        return "jax"

    jax_ids = list(gymnax.registered_envs)
    gym_ids = list(gym.envs.registry)
    if backend == "jax":
        if env not in jax_ids:
            raise ValueError(_unknown_gymnax_id(env, jax_ids))
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

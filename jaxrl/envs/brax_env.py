"""Brax environments behind the jitted driver's (gymnax) environment interface.

``BraxEnv("hopper", backend="mjx")`` (or the id ``"brax:hopper"`` wherever the jitted
driver takes an environment) gives Brax's physics the interface of
:mod:`jaxrl.training.jax_driver`::

    reset(key, params) -> (obs, state)
    step(key, state, action, params)
        -> (obs, state, reward, terminated, truncated, info)

- ``terminated`` is Brax's ``done`` (a terminal state, e.g. Hopper falling: no bootstrap);
  ``truncated`` is the time limit, ``params.max_steps_in_episode`` steps (1000 by default,
  as Brax's training wrappers and gymnasium's MuJoCo tasks): bootstrap kept. Brax's own
  environments never truncate; its ``EpisodeWrapper`` marks a time limit as ``done`` plus
  ``info["truncation"]``, which is the same split.
- Auto-reset in the same step, with a *fresh* random initial state (gymnax and gymnasium
  semantics; Brax's ``AutoResetWrapper`` returns to the episode's first state instead):
  ``obs`` is the next episode's first observation and ``info["final_observation"]`` the
  observation the step reached, the one to bootstrap from.
- Spaces: observations a ``Box`` of ``observation_size`` unbounded floats; actions a
  ``Box`` in [-1, 1] (Brax environments scale actions to their actuators' ranges).

Brax is an optional dependency (``pip install 'jaxrl[brax]'``). Its physics backends are
``generalized`` (Brax's default), ``positional``, ``spring`` and ``mjx`` (MuJoCo XLA, the one
built for accelerators: slow to compile and to step on a CPU).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.util
import io
import warnings
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl.core.tree import strong_types

BRAX_PREFIX = "brax:"
BRAX_BACKENDS: tuple[str, ...] = ("generalized", "positional", "spring", "mjx")
DEFAULT_BRAX_BACKEND = "generalized"
DEFAULT_EPISODE_LENGTH = 1000


def is_brax_id(env_id: Any) -> bool:
    """Whether ``env_id`` is a ``"brax:NAME"`` id."""
    return isinstance(env_id, str) and env_id.startswith(BRAX_PREFIX)


def brax_name(env_id: str) -> str:
    """``"brax:hopper"`` -> ``"hopper"``."""
    return env_id[len(BRAX_PREFIX) :]


def brax_available() -> bool:
    """Whether Brax is installed (without importing it)."""
    return importlib.util.find_spec("brax") is not None


def _import_brax_envs() -> Any:
    if not brax_available():
        raise ModuleNotFoundError(
            "Brax environments need the optional dependency brax: pip install 'jaxrl[brax]'"
        )
    # mujoco's MJX prints a line per missing optional GPU backend (warp) on import, and
    # Brax warns that its own pipelines are unmaintained: neither concerns a jaxrl user,
    # and printed lines would corrupt the command line's JSON output.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from brax import envs
    return envs


def brax_env_names() -> list[str]:
    """The environment names Brax registers (``ant``, ``hopper``, ...)."""
    return sorted(_import_brax_envs()._envs)


def _gymnax_spaces() -> Any:
    from jaxrl.envs.jax_envs import import_gymnax

    return import_gymnax().environments.spaces


@struct.dataclass
class BraxParams:
    """Environment parameters: the time limit in steps."""

    max_steps_in_episode: int = DEFAULT_EPISODE_LENGTH


@struct.dataclass
class BraxEnvState:
    """Brax's ``State`` and the steps taken in the current episode."""

    brax_state: Any
    time: jax.Array


class BraxEnv:
    """A Brax environment with the gymnax interface (see the module docstring).

    ``batches_seeds``: a physics step is many small operations, whose per-call cost a batch
    of seeds amortizes, so seeds run batched on every backend (``jaxrl.training.over_seeds``;
    on a CPU, 16 TRPO seeds on inverted_pendulum ran 1.5x slower one after another).

    Args:
      name: a Brax environment name (``"hopper"``, ``"inverted_pendulum"``, ...).
      backend: Brax's physics backend: ``generalized``, ``positional``, ``spring`` or ``mjx``.
      episode_length: the time limit (``default_params.max_steps_in_episode``).
      **kwargs: passed to ``brax.envs.get_environment`` (e.g. ``terminate_when_unhealthy``).

    Raises:
      ModuleNotFoundError: Brax is not installed (names the extra to install).
      ValueError: an unknown environment name (with the closest known ones) or backend, a
        non-positive episode length, or an environment with dict observations.
    """

    batches_seeds = True

    def __init__(
        self,
        name: str,
        backend: str = DEFAULT_BRAX_BACKEND,
        episode_length: int = DEFAULT_EPISODE_LENGTH,
        **kwargs: Any,
    ) -> None:
        if backend not in BRAX_BACKENDS:
            raise ValueError(
                f"brax_backend must be one of {', '.join(BRAX_BACKENDS)}, got {backend!r}"
            )
        if isinstance(episode_length, bool) or not isinstance(episode_length, int):
            raise ValueError(f"episode_length must be a positive int, got {episode_length!r}")
        if episode_length < 1:
            raise ValueError(f"episode_length must be a positive int, got {episode_length!r}")
        envs = _import_brax_envs()
        names = brax_env_names()
        if name not in names:
            close = difflib.get_close_matches(name, names, n=3)
            hint = f" (did you mean {', '.join(BRAX_PREFIX + c for c in close)}?)" if close else ""
            raise ValueError(
                f"env: unknown Brax environment {BRAX_PREFIX + name!r}{hint}; "
                f"Brax has {', '.join(names)}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.env = envs.get_environment(name, backend=backend, **kwargs)
        obs_size = self.env.observation_size
        if not isinstance(obs_size, int):
            raise ValueError(
                f"env: Brax environment {name!r} has dict observations {obs_size}; jaxrl "
                "needs a flat observation vector"
            )
        self.name = name
        self.backend = backend
        self.obs_size = obs_size
        self.action_size = int(self.env.action_size)
        self.default_params = BraxParams(max_steps_in_episode=episode_length)

    def __repr__(self) -> str:
        return f"BraxEnv({self.name!r}, backend={self.backend!r})"

    @property
    def id(self) -> str:
        return BRAX_PREFIX + self.name

    def observation_space(self, params: BraxParams | None = None) -> Any:
        spaces = _gymnax_spaces()

        return spaces.Box(-jnp.inf, jnp.inf, (self.obs_size,), jnp.float32)

    def action_space(self, params: BraxParams | None = None) -> Any:
        spaces = _gymnax_spaces()

        return spaces.Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def reset(self, key: jax.Array, params: BraxParams | None = None) -> tuple[Any, Any]:
        """``(obs [obs_size], state)``: a random initial state (Brax's ``reset``)."""
        brax_state = strong_types(self.env.reset(key))
        return brax_state.obs, BraxEnvState(brax_state, jnp.zeros((), jnp.int32))

    def step_env(
        self, key: jax.Array, state: BraxEnvState, action: jax.Array, params: Any = None
    ) -> tuple[Any, BraxEnvState, jax.Array, jax.Array, dict]:
        """One step without reset: ``(obs, state, reward, terminated, info)``."""
        del key, params  # Brax's dynamics are deterministic
        brax_state = strong_types(self.env.step(state.brax_state, action))
        terminated = brax_state.done > 0.5
        reward = brax_state.reward.astype(jnp.float32)
        return brax_state.obs, BraxEnvState(brax_state, state.time + 1), reward, terminated, {}

    def is_truncated(self, state: BraxEnvState, params: BraxParams | None = None) -> jax.Array:
        """Whether the episode reached its time limit."""
        params = self.default_params if params is None else params
        return state.time >= params.max_steps_in_episode

    def step(
        self,
        key: jax.Array,
        state: BraxEnvState,
        action: jax.Array,
        params: BraxParams | None = None,
    ) -> tuple[Any, BraxEnvState, jax.Array, jax.Array, jax.Array, dict]:
        """One step with auto-reset (see the module docstring); the key splits as gymnax's
        ``step`` does: the first half for the step, the second for the reset."""
        params = self.default_params if params is None else params
        step_key, reset_key = jax.random.split(key)
        obs_st, state_st, reward, terminated, _ = self.step_env(step_key, state, action, params)
        truncated = self.is_truncated(state_st, params)
        done = terminated | truncated
        obs_re, state_re = self.reset(reset_key, params)
        state = jax.tree_util.tree_map(lambda r, s: jnp.where(done, r, s), state_re, state_st)
        obs = jnp.where(done, obs_re, obs_st)
        info = {"terminated": terminated, "truncated": truncated, "final_observation": obs_st}
        return obs, state, reward, terminated, truncated, info


@functools.lru_cache(maxsize=32)
def make_brax_env(
    name: str, backend: str = DEFAULT_BRAX_BACKEND, episode_length: int = DEFAULT_EPISODE_LENGTH
) -> BraxEnv:
    """The :class:`BraxEnv` for ``name`` (one object per arguments, so that programs built
    from the same id share jax's compilation caches)."""
    return BraxEnv(name, backend, episode_length)

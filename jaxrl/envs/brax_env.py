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
- Each environment holds its next episode's initial state, drawn ahead
  (:class:`BraxEnvState`), so that a step runs only the task's physics: under ``vmap`` a
  reset computed where it is needed is computed for every environment (a select of both
  branches), and on MJX a reset is a physics pass of its own. The used initial states are
  drawn again every ``starts_every`` steps, for the batch at once (a step where an
  environment ends a second episode before that draws at once).
- Solver settings (MJX only): ``solver``, ``iterations`` and ``ls_iterations`` replace the
  task's (:class:`Solver`); the control period (timestep x frames) stays the task's.
- Spaces: observations a ``Box`` of ``observation_size`` unbounded floats; actions a
  ``Box`` in [-1, 1] (Brax environments scale actions to their actuators' ranges).

Brax is an optional dependency (``pip install 'jaxrl[brax]'``). Its physics backends are
``generalized`` (Brax's default), ``positional``, ``spring`` and ``mjx`` (MuJoCo XLA, the one
built for accelerators: slow to compile and to step on a CPU).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import importlib.util
import io
import warnings
from typing import Any, Literal

import jax
import jax.numpy as jnp
from flax import struct

from jaxrl.core._checks import check_int
from jaxrl.core.tree import apply_if, strong_types

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


def check_brax_name(name: str, prefix: str = "") -> None:
    """``ValueError`` (``prefix`` first) unless Brax registers ``name``, with the closest
    names and the list of Brax's."""
    names = brax_env_names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (did you mean {', '.join(BRAX_PREFIX + c for c in close)}?)" if close else ""
        raise ValueError(
            f"{prefix}unknown Brax environment {BRAX_PREFIX + name!r}{hint}; "
            f"Brax has {', '.join(names)}"
        )


def _gymnax_spaces() -> Any:
    from jaxrl.envs.gymnax_env import import_gymnax

    return import_gymnax().environments.spaces


@struct.dataclass
class BraxParams:
    """Environment parameters: the time limit in steps."""

    max_steps_in_episode: int = DEFAULT_EPISODE_LENGTH


@dataclasses.dataclass(frozen=True)
class Solver:
    """MuJoCo solver settings of an MJX environment; None keeps the task's own.

    Attributes:
      kind: ``"cg"`` or ``"newton"`` (MuJoCo's conjugate-gradient and Newton solvers).
      iterations: the solver's iterations per physics step (its loop runs to this bound).
      ls_iterations: line-search iterations per solver iteration.

    Brax's ``hopper.xml`` sets ``iterations=4`` and leaves the solver and its line search
    at MuJoCo's defaults (Newton, 50); Brax's own ant and humanoid switch to
    ``Solver("newton", 1, 4)`` (``ACCELERATOR_SOLVER``).
    """

    kind: Literal["cg", "newton"] | None = None
    iterations: int | None = None
    ls_iterations: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in (None, *SOLVERS):
            raise ValueError(f"solver must be one of {', '.join(SOLVERS)}, got {self.kind!r}")
        for name in ("iterations", "ls_iterations"):
            check_int(f"solver_{name}", getattr(self, name), low=1, optional=True)

    @property
    def is_default(self) -> bool:
        """Whether every setting is the task's own."""
        return self == Solver()

    def replacements(self) -> dict[str, Any]:
        """The ``sys.tree_replace`` entries of the settings given."""
        import mujoco

        out: dict[str, Any] = {}
        if self.kind is not None:
            kinds = {"cg": mujoco.mjtSolver.mjSOL_CG, "newton": mujoco.mjtSolver.mjSOL_NEWTON}
            out["opt.solver"] = kinds[self.kind]
        if self.iterations is not None:
            out["opt.iterations"] = self.iterations
        if self.ls_iterations is not None:
            out["opt.ls_iterations"] = self.ls_iterations
        return out


SOLVERS: tuple[str, ...] = ("cg", "newton")
# The accelerator default (Brax's own ant and humanoid on MJX): Newton, 1 iteration, 4
# line-search iterations.
ACCELERATOR_SOLVER = Solver("newton", 1, 4)
# Steps between draws of the used initial states (BraxEnvState.next_start).
STARTS_EVERY = 16


@struct.dataclass
class BraxEnvState:
    """Brax's ``State``, the steps taken in the current episode, and the next episode's
    initial state drawn ahead.

    Attributes:
      brax_state: Brax's state of the current episode.
      time: steps taken in the current episode.
      next_start: Brax's initial state for the next episode (drawn with its own key).
      fresh: whether ``next_start`` is unused (an episode that starts takes it).
      tick: steps since the environment's first reset (never restarts): environments reset
        together draw their initial states together.
    """

    brax_state: Any
    time: jax.Array
    next_start: Any
    fresh: jax.Array
    tick: jax.Array


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
        solver: Solver | None = None,
        starts_every: int = STARTS_EVERY,
        **kwargs: Any,
    ) -> None:
        solver = Solver() if solver is None else solver
        if backend not in BRAX_BACKENDS:
            raise ValueError(
                f"brax_backend must be one of {', '.join(BRAX_BACKENDS)}, got {backend!r}"
            )
        check_int("episode_length", episode_length, low=1)
        check_int("starts_every", starts_every, low=1)
        if not solver.is_default and backend != "mjx":
            raise ValueError(
                "solver settings (solver, solver_iterations, solver_ls_iterations) are MJX's: "
                f"use brax_backend 'mjx', not {backend!r}"
            )
        envs = _import_brax_envs()
        check_brax_name(name, "env: ")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.env = envs.get_environment(name, backend=backend, **kwargs)
        if not solver.is_default:
            self.env.sys = self.env.sys.tree_replace(solver.replacements())
        # Brax's observation_size runs a reset op by op (MJX hopper: 30 s on a CPU); its
        # shape alone is traced here.
        obs = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0)).obs
        if not hasattr(obs, "shape"):
            shapes = jax.tree_util.tree_map(lambda x: tuple(x.shape), obs)
            raise ValueError(
                f"env: Brax environment {name!r} has dict observations {shapes}; jaxrl "
                "needs a flat observation vector"
            )
        obs_size = int(obs.shape[-1])
        self.name = name
        self.backend = backend
        self.obs_size = obs_size
        self.action_size = int(self.env.action_size)
        self.default_params = BraxParams(max_steps_in_episode=episode_length)
        self.solver = solver
        self.starts_every = starts_every

    def __repr__(self) -> str:
        solver = "" if self.solver.is_default else f", solver={self.solver}"
        return f"BraxEnv({self.name!r}, backend={self.backend!r}{solver})"

    @property
    def frames(self) -> int:
        """Physics steps per env step (the task's ``n_frames``)."""
        return int(getattr(self.env, "_n_frames", 1))

    @property
    def solver_settings(self) -> dict[str, Any]:
        """The solver settings the physics runs with, ``solver``, ``iterations`` and
        ``ls_iterations`` on MJX (empty on Brax's own pipelines)."""
        if self.backend != "mjx":
            return {}
        opt = self.env.sys.opt
        return {
            "solver": {0: "pgs", 1: "cg", 2: "newton"}.get(int(opt.solver), str(opt.solver)),
            "iterations": int(opt.iterations),
            "ls_iterations": int(opt.ls_iterations),
        }

    @property
    def id(self) -> str:
        return BRAX_PREFIX + self.name

    def observation_space(self, params: BraxParams | None = None) -> Any:
        spaces = _gymnax_spaces()

        return spaces.Box(-jnp.inf, jnp.inf, (self.obs_size,), jnp.float32)

    def action_space(self, params: BraxParams | None = None) -> Any:
        spaces = _gymnax_spaces()

        return spaces.Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def _start(self, key: jax.Array) -> Any:
        return strong_types(self.env.reset(key))

    def reset(self, key: jax.Array, params: BraxParams | None = None) -> tuple[Any, Any]:
        """``(obs [obs_size], state)``: a random initial state (Brax's ``reset`` with ``key``)
        and the next episode's, drawn with ``fold_in(key, 1)``."""
        brax_state = self._start(key)
        next_start = self._start(jax.random.fold_in(key, 1))
        zero = jnp.zeros((), jnp.int32)
        state = BraxEnvState(brax_state, zero, next_start, jnp.ones((), bool), zero)
        return brax_state.obs, state

    def step_env(
        self, key: jax.Array, state: BraxEnvState, action: jax.Array, params: Any = None
    ) -> tuple[Any, BraxEnvState, jax.Array, jax.Array, dict]:
        """One step without reset: ``(obs, state, reward, terminated, info)``."""
        del key, params  # Brax's dynamics are deterministic
        brax_state = strong_types(self.env.step(state.brax_state, action))
        terminated = brax_state.done > 0.5
        reward = brax_state.reward.astype(jnp.float32)
        state = state.replace(brax_state=brax_state, time=state.time + 1, tick=state.tick + 1)
        return brax_state.obs, state, reward, terminated, {}

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
        ``step`` does: the first half for the step, the second for drawing initial states.

        An episode that ends starts its successor from ``state.next_start``. A used
        ``next_start`` is drawn again (with the second half of the key) on the steps where
        ``tick`` reaches a multiple of ``starts_every``, or at once when its environment
        ends another episode before then; under ``vmap`` the draw runs for the batch only
        on those steps (:func:`jaxrl.core.apply_if`).
        """
        params = self.default_params if params is None else params
        step_key, reset_key = jax.random.split(key)
        obs_st, state_st, reward, terminated, _ = self.step_env(step_key, state, action, params)
        truncated = self.is_truncated(state_st, params)
        done = terminated | truncated
        due = state_st.tick % self.starts_every == 0
        draw = ~state.fresh & (due | done)
        next_start, fresh = apply_if(
            draw,
            lambda start, fresh: (self._start(reset_key), jnp.ones_like(fresh)),
            state.next_start,
            state.fresh,
        )
        brax_state = jax.tree_util.tree_map(
            lambda r, s: jnp.where(done, r, s), next_start, state_st.brax_state
        )
        state = state_st.replace(
            brax_state=brax_state,
            time=jnp.where(done, 0, state_st.time),
            next_start=next_start,
            fresh=fresh & ~done,
        )
        info = {"terminated": terminated, "truncated": truncated, "final_observation": obs_st}
        return brax_state.obs, state, reward, terminated, truncated, info


def make_brax_env(
    name: str,
    backend: str = DEFAULT_BRAX_BACKEND,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    solver: Solver | None = None,
) -> BraxEnv:
    """The :class:`BraxEnv` for ``name`` (one object per arguments, so that programs built
    from the same id share jax's compilation caches)."""
    return _brax_env(name, backend, episode_length, Solver() if solver is None else solver)


@functools.lru_cache(maxsize=32)
def _brax_env(name: str, backend: str, episode_length: int, solver: Solver) -> BraxEnv:
    return BraxEnv(name, backend, episode_length, solver)

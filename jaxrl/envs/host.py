"""Host environments behind one interface: gymnasium's vector env and EnvPool.

Both give the host driver (:mod:`jaxrl.training.gymnasium_driver`) the same semantics:

- ``reset() -> obs [num_envs, *obs_shape]``, environment ``j`` seeded with ``seed + j``;
- ``step(action) -> HostStep``: ``obs`` is what the agent acts on next (for an environment
  whose episode just ended, the first observation of its next episode: auto-reset in the
  same step), ``final_obs`` the observation the step reached (equal to ``obs`` except where
  the episode ended, where it is that episode's last observation, the one to bootstrap
  from), ``terminated`` (no bootstrap) and ``truncated`` (time limit, bootstrap kept).

gymnasium's vector env does this with ``AutoresetMode.SAME_STEP``. EnvPool resets an ended
episode on the *next* step (ignoring that step's action), so its adapter resets the ended
environments itself right away (``env.reset(env_ids)``), which gives the same transitions.

EnvPool (``pip install envpool``, the ``envpool`` extra) steps MuJoCo tasks in C++ threads,
several times faster than gymnasium's Python loop; :func:`resolve_env_backend` picks it for
the ids it has when it is installed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import itertools
import os
import warnings
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import gymnasium as gym
import numpy as np

from jaxrl.tasks import is_mujoco_id

EnvBackend = Literal["gymnasium", "envpool"]
ENV_BACKENDS: tuple[str, ...] = ("auto", "gymnasium", "envpool")


class EnvironmentError_(RuntimeError):
    """An environment raised or returned malformed data; names the environment and step."""


@dataclasses.dataclass(frozen=True)
class HostStep:
    """One vector step (arrays over ``num_envs``); see the module docstring."""

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: np.ndarray


class HostVectorEnv(Protocol):
    """What the host driver needs of a batch of environments."""

    env_id: str
    num_envs: int
    single_observation_space: gym.Space
    single_action_space: gym.Space

    def reset(self) -> np.ndarray: ...

    def step(self, action: np.ndarray) -> HostStep: ...

    def close(self) -> None: ...


class GymnasiumVectorEnv:
    """gymnasium's synchronous vector env with same-step auto-reset."""

    def __init__(
        self, env_id: str, num_envs: int, seed: int, env_kwargs: dict[str, Any] | None = None
    ) -> None:
        try:
            self._envs = gym.make_vec(
                env_id,
                num_envs=num_envs,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
                **(env_kwargs or {}),
            )
        except gym.error.DependencyNotInstalled as error:
            if is_mujoco_id(env_id):  # gymnasium names its own extra, not jaxrl's
                raise ValueError(
                    f"env: {env_id} needs MuJoCo: pip install 'jaxrl[mujoco]'"
                ) from None
            raise ValueError(
                f"env: cannot make gymnasium environment {env_id!r}: {error}"
            ) from error
        except gym.error.Error as error:
            brax = env_id.startswith("brax:")  # gymnasium's hint would be its MuJoCo task
            hint = (
                "a Brax id: the jitted driver (jaxrl.training.make_train) runs it"
                if brax
                else error
            )
            raise ValueError(
                f"env: cannot make gymnasium environment {env_id!r}: {hint}"
            ) from error
        self.env_id, self.num_envs, self._seed = env_id, num_envs, seed
        self.single_observation_space = self._envs.single_observation_space
        self.single_action_space = self._envs.single_action_space

    def reset(self) -> np.ndarray:
        obs, _ = self._envs.reset(seed=self._seed)
        return obs

    def step(self, action: np.ndarray) -> HostStep:
        obs, reward, terminated, truncated, info = self._envs.step(action)
        final_obs = obs.copy()
        if "_final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                final_obs[i] = info["final_obs"][i]
        return HostStep(obs, reward, terminated, truncated, final_obs)

    def close(self) -> None:
        self._envs.close()


def envpool_available() -> bool:
    """Whether EnvPool is installed (``pip install envpool``)."""
    return importlib.util.find_spec("envpool") is not None


@functools.cache
def envpool_ids() -> frozenset[str]:
    """The environment ids EnvPool has (empty if it is not installed)."""
    if not envpool_available():
        return frozenset()
    import envpool

    return frozenset(envpool.list_all_envs())


class EnvPoolVectorEnv:
    """EnvPool's synchronous pool, adapted to same-step auto-reset."""

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        seed: int,
        env_kwargs: dict[str, Any] | None = None,
        num_threads: int | None = None,
    ) -> None:
        if not envpool_available():
            raise ValueError(
                "env_backend: 'envpool' needs EnvPool: pip install envpool "
                "(or pip install -e '.[envpool]')"
            )
        if env_id not in envpool_ids():
            raise ValueError(
                f"env: EnvPool has no environment {env_id!r} (use env_backend 'gymnasium')"
            )
        import envpool

        threads = num_threads or min(num_envs, os.cpu_count() or 1)
        with warnings.catch_warnings():
            # EnvPool declares float64 Boxes; gymnasium warns when it casts their bounds.
            warnings.filterwarnings("ignore", message=".*precision lowered.*")
            self._pool = envpool.make(
                env_id,
                env_type="gymnasium",
                num_envs=num_envs,
                num_threads=threads,
                seed=seed,
                **(env_kwargs or {}),
            )
        self.env_id, self.num_envs = env_id, num_envs
        self.single_observation_space = self._pool.observation_space
        self.single_action_space = self._pool.action_space
        self._action_dtype = self.single_action_space.dtype

    def reset(self) -> np.ndarray:
        obs, _ = self._pool.reset()
        return obs

    def step(self, action: np.ndarray) -> HostStep:
        obs, reward, terminated, truncated, _ = self._pool.step(
            np.asarray(action, self._action_dtype)
        )
        ended = np.flatnonzero(terminated | truncated)
        final_obs = obs
        if ended.size:
            final_obs = obs.copy()
            reset_obs, _ = self._pool.reset(ended)
            obs = obs.copy()
            obs[ended] = reset_obs
        return HostStep(obs, reward, terminated, truncated, final_obs)

    def close(self) -> None:
        self._pool.close()


def resolve_env_backend(env_id: str, env_backend: str = "auto") -> EnvBackend:
    """``"auto"``: ``"envpool"`` for MuJoCo ids EnvPool has when it is installed,
    ``"gymnasium"`` otherwise; ``"envpool"`` or ``"gymnasium"`` when named.

    Raises:
      ValueError: an unknown backend, or ``"envpool"`` for an id it lacks (or without it).
    """
    if env_backend not in ENV_BACKENDS:
        raise ValueError(
            f"env_backend must be one of {', '.join(ENV_BACKENDS)}, got {env_backend!r}"
        )
    if env_backend == "envpool":
        if not envpool_available():
            raise ValueError(
                "env_backend 'envpool' needs EnvPool: pip install envpool "
                "(or pip install -e '.[envpool]')"
            )
        if env_id not in envpool_ids():
            raise ValueError(
                f"env: EnvPool has no environment {env_id!r} (use --env-backend gymnasium)"
            )
        return "envpool"
    if env_backend == "auto" and is_mujoco_id(env_id) and env_id in envpool_ids():
        return "envpool"
    return "gymnasium"


def make_host_env(
    env_id: str,
    num_envs: int,
    seed: int,
    env_backend: str = "auto",
    env_kwargs: dict[str, Any] | None = None,
) -> HostVectorEnv:
    """``num_envs`` environments of ``env_id`` (environment ``j`` seeded ``seed + j``)."""
    if not isinstance(env_id, str):
        raise TypeError(
            f"env_id must be a gymnasium id such as 'Hopper-v5', got {type(env_id).__name__}: the "
            "host driver makes its own environments (env_kwargs= passes arguments to them)"
        )
    backend = resolve_env_backend(env_id, env_backend)
    cls = EnvPoolVectorEnv if backend == "envpool" else GymnasiumVectorEnv
    return cls(env_id, num_envs, seed, env_kwargs)


def checked_step(env: HostVectorEnv, step: int, action: np.ndarray) -> HostStep:
    """``env.step(action)``, raising :class:`EnvironmentError_` naming the environment and
    the step when the environment raises or returns malformed or non-finite data."""
    env_id, num_envs = env.env_id, env.num_envs
    try:
        out = env.step(action)
    except Exception as error:  # re-raised with the environment and step named
        raise EnvironmentError_(
            f"environment {env_id!r} raised at step {step}: {error!r}"
        ) from error
    reward = np.asarray(out.reward, np.float32)
    expected = (num_envs, *env.single_observation_space.shape)
    if out.obs.shape != expected:
        raise EnvironmentError_(
            f"environment {env_id!r} returned observations of shape {out.obs.shape} at step "
            f"{step}, expected {expected}"
        )
    if reward.shape != (num_envs,) or not np.all(np.isfinite(reward)):
        raise EnvironmentError_(
            f"environment {env_id!r} returned malformed rewards at step {step}: {reward!r}"
        )
    if not (np.all(np.isfinite(out.obs)) and np.all(np.isfinite(out.final_obs))):
        raise EnvironmentError_(
            f"environment {env_id!r} returned non-finite observations at step {step}"
        )
    return HostStep(
        out.obs,
        reward,
        np.asarray(out.terminated, bool),
        np.asarray(out.truncated, bool),
        out.final_obs,
    )


def seed_block(seeds: Sequence[int], count: int, stream: int = 0) -> int:
    """The seed of the first of ``len(seeds) * count`` environments laid out seed after seed,
    so that seed ``s``'s environment ``j`` gets ``stream * 1_000_003 + s * count + j`` whether
    it runs alone or next to others (``seeds`` must be consecutive)."""
    if any(b != a + 1 for a, b in itertools.pairwise(seeds)):
        raise ValueError(f"seeds must be consecutive integers, got {list(seeds)}")
    return stream * 1_000_003 + seeds[0] * count


# Environments made by the caller (the collectors adopt them).


class _AdoptedGymnasiumVectorEnv(GymnasiumVectorEnv):
    """A gymnasium vector env made by the caller (same-step auto-reset checked), behind
    :class:`GymnasiumVectorEnv`'s step."""

    def __init__(self, envs: gym.vector.VectorEnv) -> None:
        self._envs, self._seed = envs, None
        self.env_id = envs.spec.id if envs.spec is not None else type(envs).__name__
        self.num_envs = envs.num_envs
        self.single_observation_space = envs.single_observation_space
        self.single_action_space = envs.single_action_space


class _AdoptedEnvPool(EnvPoolVectorEnv):
    """An EnvPool env made by the caller, behind :class:`EnvPoolVectorEnv`'s step
    (ended environments reset at once: same-step auto-reset)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.env_id = type(pool).__name__
        self.num_envs = pool.num_envs
        self.single_observation_space = pool.observation_space
        self.single_action_space = pool.action_space
        self._action_dtype = self.single_action_space.dtype


def is_envpool(env: Any) -> bool:
    """Whether ``env`` is an EnvPool environment (False when EnvPool is not installed)."""
    if importlib.util.find_spec("envpool") is None:
        return False
    from envpool.python.envpool import EnvPoolMixin

    return isinstance(env, EnvPoolMixin)


def host_vector_env(env: Any) -> HostVectorEnv:
    """A host environment the collector can step with same-step auto-reset semantics.

    Args:
      env: a gymnasium vector env (``gym.make_vec``, possibly wrapped) made with
        ``autoreset_mode=gym.vector.AutoresetMode.SAME_STEP``; an EnvPool env
        (``envpool.make(..., env_type="gymnasium")``); or one of
        :func:`jaxrl.envs.make_host_env`'s.

    Raises:
      ValueError: a gymnasium vector env with another (or no) autoreset mode: with
        next-step auto-reset the step after an episode's end is a reset, not a transition,
        and the final observation of the ended episode is not the one a rollout needs.
      TypeError: a single (not vector) environment or anything else.
    """
    if isinstance(env, GymnasiumVectorEnv | EnvPoolVectorEnv):
        return env
    if is_envpool(env):
        return _AdoptedEnvPool(env)
    if isinstance(env, gym.vector.VectorEnv):
        # The instance's own mode: gymnasium's vector envs share one metadata dict per class,
        # which the last one made sets for all.
        mode = getattr(env.unwrapped, "autoreset_mode", None) or env.metadata.get("autoreset_mode")
        if mode != gym.vector.AutoresetMode.SAME_STEP:
            raise ValueError(
                f"env: this gymnasium vector env auto-resets with autoreset_mode={mode}, but a "
                "rollout needs same-step auto-reset (the final observation of an ended "
                "episode in the step that ends it): make it with gym.make_vec(..., "
                "vector_kwargs={'autoreset_mode': gym.vector.AutoresetMode.SAME_STEP})"
            )
        return _AdoptedGymnasiumVectorEnv(env)
    if isinstance(env, gym.Env):
        raise TypeError(
            f"env: got a single gymnasium environment ({env.spec.id if env.spec else env}); "
            "collect from a vector env: gym.make_vec(ID, num_envs=N, vector_kwargs="
            "{'autoreset_mode': gym.vector.AutoresetMode.SAME_STEP})"
        )
    raise TypeError(
        "env must be a gymnax/Brax id or environment, a gymnasium vector env or an EnvPool "
        f"env, got {type(env).__name__}"
    )

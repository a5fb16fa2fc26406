"""Videos of a run's policy: ``jaxrl evaluate RUN_DIR --video FILE.gif`` (or ``.mp4``).

Episodes of one seed's policy from a checkpoint (the final one by default), acting through
its :class:`jaxrl.Policy` as the run's evaluations act (deterministically where the algorithm
evaluates so), rendered one frame per step:

- gymnasium and MuJoCo ids (the host driver): the environment's own ``rgb_array`` rendering.
  MuJoCo renders with the OpenGL backend ``MUJOCO_GL`` names; unset on a machine without a
  display (no ``DISPLAY`` or ``WAYLAND_DISPLAY``), with EGL (``MUJOCO_GL=egl``);
- gymnax ``Pendulum-v1`` and ``CartPole-v1`` (the jitted driver): the episode runs in gymnax,
  and each state is drawn by gymnasium's renderer of the same task.

gymnasium draws its classic-control tasks (Pendulum, CartPole, ...) with pygame, and imageio
writes the file (``imageio-ffmpeg`` an MP4): ``pip install 'jaxrl[video]'`` installs the
three. A MuJoCo GIF needs imageio alone. What is missing is named in one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.core._checks import check_int
from jaxrl.runs.policy import Checkpoint, load

# gymnax task -> how a gymnax state is drawn by gymnasium's renderer of the same task.
_GYMNAX_DRAWINGS: dict[str, Callable[[Any, Any, Any], None]] = {
    "Pendulum-v1": lambda env, state, action: _set(
        env, state=np.asarray([state.theta, state.theta_dot]), last_u=float(np.ravel(action)[0])
    ),
    "CartPole-v1": lambda env, state, action: _set(
        env, state=np.asarray([state.x, state.x_dot, state.theta, state.theta_dot])
    ),
}


def _set(env: Any, **attributes: Any) -> None:
    for name, value in attributes.items():
        setattr(env, name, value)


@dataclasses.dataclass(frozen=True)
class Video:
    """A written video.

    Attributes:
      path: the file.
      frames: frames written (one per step of every episode).
      returns: each episode's return.
      step: the checkpoint (evaluation period) the policy came from.
    """

    path: Path
    frames: int
    returns: list[float]
    step: int


def record_video(
    run_dir: str | Path,
    path: str | Path,
    *,
    seed_index: int = 0,
    episodes: int = 1,
    checkpoint: Checkpoint = "last",
    step: int | None = None,
    seed: int = 0,
    fps: int = 30,
) -> Video:
    """Render ``episodes`` episodes of seed ``seed_index``'s policy of ``checkpoint``
    (:func:`jaxrl.load`'s: ``"last"``, ``"best"`` or an evaluation period; ``step=N``,
    its earlier name, is ``checkpoint=N``) to ``path``.

    Raises:
      ValueError: a path that is not ``.gif`` or ``.mp4``, a seed index the run does not
        have, an environment with no renderer here, or a missing package (named); the
        messages start ``record_video`` (the command's read ``--video``).
    """
    path = Path(path)
    if path.suffix.lower() not in (".gif", ".mp4"):
        raise ValueError(f"record_video path {path}: write a .gif or an .mp4 file")
    check_int("record_video: episodes", episodes, low=1)
    policy = load(run_dir, seed=seed_index, checkpoint=checkpoint if step is None else step)
    config = policy.config
    deterministic = bool(policy.agent.evaluates_deterministically)  # as the run's evaluations

    def act(obs: Any, key: Any) -> np.ndarray:
        return policy.act(obs, deterministic=deterministic, key=key)

    import gymnasium

    _have_imageio()  # before the episodes are rendered
    try:
        if config.backend == "gymnasium":
            frames, returns = _gymnasium_episodes(config.env, act, episodes, seed)
        elif config.env in _GYMNAX_DRAWINGS:
            frames, returns = _gymnax_episodes(config.env, act, episodes, seed)
        else:
            frames = []
    except gymnasium.error.DependencyNotInstalled as error:
        # gymnasium names its own extra (gymnasium[classic_control]): the video extra has it.
        from jaxrl.tasks import is_mujoco_id

        missing = "pygame" if "pygame" in str(error) else str(error).split(" is not")[0]
        extra = "mujoco" if is_mujoco_id(config.env) else "video"
        raise ValueError(
            f"record_video: drawing {config.env} needs {missing}: pip install 'jaxrl[{extra}]'"
        ) from None
    if not frames:
        raise ValueError(
            f"record_video: no renderer for {config.env} here (gymnasium and MuJoCo ids, gymnax "
            f"{' and '.join(_GYMNAX_DRAWINGS)})"
        )
    _write(path, frames, fps)
    return Video(path, len(frames), returns, policy.step)


def _have_imageio() -> None:
    try:
        import imageio  # noqa: F401
    except ImportError:
        raise ValueError(
            "record_video: writing a video needs imageio: pip install 'jaxrl[video]'"
        ) from None


def _mujoco_gl_here() -> str | None:
    """The OpenGL backend MuJoCo renders with here: ``MUJOCO_GL`` if set, else ``"egl"`` on
    Linux without a display (gymnasium would try GLFW first, which needs one), else None
    (gymnasium's own choice)."""
    import os
    import sys

    if "MUJOCO_GL" in os.environ:
        return os.environ["MUJOCO_GL"]
    displayed = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    return "egl" if sys.platform.startswith("linux") and not displayed else None


def _gymnasium_env(env_id: str) -> Any:
    import os
    import warnings

    import gymnasium

    from jaxrl.tasks import is_mujoco_id

    # pygame (gymnasium's classic-control drawings) draws off screen here: no audio device,
    # no display, and none of SDL's complaints about their absence.
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    backend = _mujoco_gl_here() if is_mujoco_id(env_id) else None
    if backend is not None:
        os.environ["MUJOCO_GL"] = backend  # read when gymnasium makes its renderer
    env = gymnasium.make(env_id, render_mode="rgb_array")
    if backend is None:
        return env
    try:
        with warnings.catch_warnings():  # GLFW warns of each failed call, then it fails
            warnings.simplefilter("ignore")
            env.reset(seed=0)
            env.render()  # the OpenGL context is made here: fail before the episodes
    except Exception as error:  # GLFWError, mujoco.FatalError, ImportError of PyOpenGL, ...
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env.close()
        reason = " ".join(str(error).split())[:160] or type(error).__name__
        raise ValueError(
            f"record_video: MuJoCo cannot render with MUJOCO_GL={backend} here ({reason}); without "
            "a display use MUJOCO_GL=egl (a GPU driver's or Mesa's EGL) or MUJOCO_GL=osmesa"
        ) from None
    return env


def _gymnasium_episodes(
    env_id: str, act: Callable, episodes: int, seed: int
) -> tuple[list[np.ndarray], list[float]]:
    env = _gymnasium_env(env_id)
    frames, returns = [], []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            total, done, t = 0.0, False, 0
            while not done:
                frames.append(np.asarray(env.render()))
                key = jax.random.fold_in(jax.random.key(seed + episode), t)
                obs, reward, terminated, truncated, _ = env.step(np.asarray(act(obs, key)))
                total, done, t = total + float(reward), terminated or truncated, t + 1
            returns.append(total)
    finally:
        env.close()
    return frames, returns


def _gymnax_episodes(
    env_id: str, act: Callable, episodes: int, seed: int
) -> tuple[list[np.ndarray], list[float]]:
    from jaxrl.envs import make_env

    env, params = make_env(env_id)
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    drawing = _gymnasium_env(env_id)
    drawing.reset(seed=seed)
    screen = drawing.unwrapped
    frames, returns = [], []
    try:
        for episode in range(episodes):
            reset_key, act_key, step_key = jax.random.split(jax.random.key(seed + episode), 3)
            obs, env_state = reset(reset_key, params)
            total, done, t = 0.0, False, 0
            while not done:
                action = act(obs, jax.random.fold_in(act_key, t))
                _GYMNAX_DRAWINGS[env_id](screen, env_state, action)
                frames.append(np.asarray(screen.render()))
                out = step(jax.random.fold_in(step_key, t), env_state, action, params)
                obs, env_state, reward, terminated, truncated = out[:5]
                total, done, t = total + float(reward), bool(terminated | truncated), t + 1
            returns.append(total)
    finally:
        drawing.close()
    return frames, returns


def _write(path: Path, frames: list[np.ndarray], fps: int) -> None:
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        imageio.mimsave(path, frames, duration=1000 / fps, loop=0)
        return
    try:
        imageio.mimsave(path, frames, fps=fps, macro_block_size=1)
    except (ImportError, ValueError, RuntimeError) as error:
        if "ffmpeg" not in str(error).lower():
            raise
        raise ValueError(
            f"record_video path {path}: an .mp4 needs imageio-ffmpeg (pip install "
            "jaxrl[video]), or write a .gif"
        ) from None


__all__ = ["Video", "record_video"]

"""Host environment backends: EnvPool and gymnasium give the same transitions (same-step
auto-reset, final observations, terminated vs truncated), and bad backends are named."""

from __future__ import annotations

import numpy as np
import pytest

from jaxrl.envs import make_host_env, resolve_env_backend
from jaxrl.envs.host import seed_block

pytest.importorskip("mujoco", reason="needs the mujoco extra")
pytest.importorskip("envpool", reason="needs the envpool extra: pip install -e '.[envpool]'")

# No reset noise: both backends then start every episode in the same state, so their
# transitions must agree step for step (MuJoCo in both, to float rounding).
KWARGS = {"reset_noise_scale": 0.0, "max_episode_steps": 10}


def rollout(backend: str, steps: int = 40) -> tuple[np.ndarray, list]:
    env = make_host_env("Hopper-v5", 3, 0, backend, KWARGS)
    try:
        first = env.reset()
        rng = np.random.default_rng(0)
        # Env 0 leans forward and env 2 backward (they fall: terminations), env 1 is
        # gentle (it lasts until the 10-step time limit: truncations).
        bias = np.array([[1.0], [0.0], [-1.0]])
        scale = np.array([[1.0], [0.05], [1.0]])
        out = [
            env.step(np.clip(rng.normal(0, 1, (3, 3)) * scale + bias, -1, 1)) for _ in range(steps)
        ]
    finally:
        env.close()
    return first, out


def test_envpool_and_gymnasium_give_the_same_transitions():
    first_g, steps_g = rollout("gymnasium")
    first_e, steps_e = rollout("envpool")
    np.testing.assert_allclose(first_g, first_e, atol=1e-6)
    for t, (g, e) in enumerate(zip(steps_g, steps_e, strict=True)):
        for name in ("obs", "final_obs", "reward"):
            np.testing.assert_allclose(
                getattr(g, name), getattr(e, name), atol=1e-5, err_msg=f"{name} at step {t}"
            )
        np.testing.assert_array_equal(g.terminated, e.terminated, err_msg=f"step {t}")
        np.testing.assert_array_equal(g.truncated, e.truncated, err_msg=f"step {t}")
    terminated = np.array([s.terminated for s in steps_e])
    truncated = np.array([s.truncated for s in steps_e])
    assert terminated.any() and truncated.any(), "the rollout must cover both episode ends"


@pytest.mark.parametrize("backend", ["gymnasium", "envpool"])
def test_same_step_auto_reset_keeps_the_final_observation(backend):
    first, steps = rollout(backend)
    for step in steps:
        done = step.terminated | step.truncated
        # Where no episode ended the final observation is the next one.
        np.testing.assert_array_equal(step.final_obs[~done], step.obs[~done])
        # Where one ended, the agent acts next on a fresh episode's first observation
        # (no noise: the reset state), and the final observation is the episode's last.
        for i in np.flatnonzero(done):
            np.testing.assert_allclose(step.obs[i], first[i], atol=1e-6)
            assert not np.allclose(step.final_obs[i], first[i])
    # The time limit truncates (bootstrap kept); it never terminates.
    lengths = np.zeros(3, int)
    for step in steps:
        lengths += 1
        assert np.all(lengths[step.truncated] == KWARGS["max_episode_steps"])
        lengths[step.terminated | step.truncated] = 0


def test_backend_resolution_and_errors():
    assert resolve_env_backend("Hopper-v5") == "envpool"
    assert resolve_env_backend("Hopper-v5", "gymnasium") == "gymnasium"
    assert resolve_env_backend("Pendulum-v1") == "gymnasium"  # auto: MuJoCo ids only
    with pytest.raises(ValueError, match="EnvPool has no environment 'Hopper-v2'"):
        resolve_env_backend("Hopper-v2", "envpool")
    with pytest.raises(ValueError, match="env_backend must be one of"):
        resolve_env_backend("Hopper-v5", "brax")


def test_seed_blocks_give_each_seed_the_same_environments_alone_or_stacked():
    assert seed_block([5, 6, 7], 4) + 4 == seed_block([6], 4)
    assert seed_block([0], 4, stream=2) == 2 * 1_000_003
    with pytest.raises(ValueError, match="consecutive"):
        seed_block([0, 2], 4)

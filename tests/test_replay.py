"""Tests for jaxrl.replay: circular storage, uniform sampling and n-step windows.

Every stored transition carries its identity in its observation (``obs = [env, step]``, step
counted from the first ``add``), so a sampled window can be checked against a plain Python
walk over the full history of its environment.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core import nstep_targets
from jaxrl.replay import NStepBatch, ReplayBuffer, Transition, window_rows

NUM_ENVS = 3


def make_history(rng: np.random.Generator, num_steps: int, num_envs: int = NUM_ENVS) -> dict:
    """Random transitions ``[T, N]`` with terminations and truncations (sometimes together)."""
    steps = np.arange(num_steps, dtype=np.float32)[:, None].repeat(num_envs, 1)
    envs = np.arange(num_envs, dtype=np.float32)[None, :].repeat(num_steps, 0)
    obs = np.stack([envs, steps], -1)
    return dict(
        obs=obs,
        action=rng.normal(size=(num_steps, num_envs, 2)).astype(np.float32),
        reward=rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        terminated=rng.random((num_steps, num_envs)) < 0.15,
        truncated=rng.random((num_steps, num_envs)) < 0.15,
        # next_obs marks its step with a +0.5 offset so it cannot be confused with obs.
        next_obs=np.stack([envs, steps + 0.5], -1),
    )


def step_of(history: dict, t: int) -> Transition:
    return Transition(*(history[f][t] for f in Transition._fields))


def filled_buffer(history: dict, capacity: int) -> ReplayBuffer:
    buffer = ReplayBuffer.create(capacity, step_of(history, 0))
    add = jax.jit(ReplayBuffer.add)
    for t in range(len(history["reward"])):
        buffer = add(buffer, step_of(history, t))
    return buffer


def reference_nstep(
    history: dict, env: int, step: int, newest: int, horizon: int, gamma: float, value_fn
) -> float:
    """Tianshou's n-step target by a forward loop over the history of one environment."""
    target, discount = 0.0, 1.0
    for i in range(horizon):
        t = step + i
        target += discount * float(history["reward"][t, env])
        discount *= gamma
        if history["terminated"][t, env]:
            return target
        if history["truncated"][t, env] or t == newest or i == horizon - 1:
            return target + discount * float(value_fn(history["next_obs"][t, env]))
    raise AssertionError("unreachable")


def value_fn(next_obs: np.ndarray) -> np.ndarray:
    """An arbitrary deterministic 'critic' of the next observation."""
    return np.sin(np.asarray(next_obs)[..., 1]) + 0.1 * np.asarray(next_obs)[..., 0]


# ---------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------


def test_create_add_and_wrap():
    history = make_history(np.random.default_rng(0), 7)
    buffer = ReplayBuffer.create(5, step_of(history, 0))
    assert (buffer.capacity, buffer.num_envs) == (5, NUM_ENVS)
    assert buffer.data.obs.shape == (5, NUM_ENVS, 2)
    assert buffer.data.terminated.dtype == jnp.bool_
    assert buffer.position.dtype == jnp.int32 and buffer.size.dtype == jnp.int32
    for t in range(7):
        buffer = buffer.add(step_of(history, t))
        assert int(buffer.size) == min(t + 1, 5)
        assert int(buffer.position) == (t + 1) % 5
    # Rows 0, 1 were overwritten by steps 5, 6; rows 2..4 still hold steps 2..4.
    np.testing.assert_array_equal(buffer.data.obs[:, 0, 1], [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(buffer.data.reward[0], history["reward"][5])


def test_extend_equals_repeated_add():
    history = make_history(np.random.default_rng(1), 11)
    segment = Transition(*(history[f] for f in Transition._fields))
    extended = jax.jit(ReplayBuffer.extend)(ReplayBuffer.create(4, step_of(history, 0)), segment)
    added = filled_buffer(history, 4)
    for a, b in zip(
        jax.tree_util.tree_leaves(extended), jax.tree_util.tree_leaves(added), strict=True
    ):
        np.testing.assert_array_equal(a, b)


def test_a_new_buffer_can_be_donated():
    # The host driver donates the buffer to its jitted add-and-learn call so that XLA writes
    # rows in place; XLA refuses an array donated twice, so no two leaves may share one.
    history = make_history(np.random.default_rng(2), 5)
    buffer = ReplayBuffer.create(4, step_of(history, 0))
    pointers = [leaf.unsafe_buffer_pointer() for leaf in jax.tree_util.tree_leaves(buffer)]
    assert len(set(pointers)) == len(pointers)
    segment = Transition(*(history[f] for f in Transition._fields))
    extended = jax.jit(ReplayBuffer.extend, donate_argnums=0)(buffer, segment)
    np.testing.assert_array_equal(extended.data.obs, filled_buffer(history, 4).data.obs)


def test_buffer_is_a_pytree_inside_scan():
    history = make_history(np.random.default_rng(2), 20)
    segment = Transition(*(history[f] for f in Transition._fields))

    @jax.jit
    def run(buffer, segment, key):
        def body(buffer, step):
            buffer = buffer.add(step)
            return buffer, buffer.sample(key, 4, 3).reward.sum()

        return jax.lax.scan(body, buffer, segment)

    buffer, sums = run(ReplayBuffer.create(8, step_of(history, 0)), segment, jax.random.key(0))
    assert sums.shape == (20,) and np.all(np.isfinite(sums))
    assert int(buffer.size) == 8 and int(buffer.position) == 20 % 8


# ---------------------------------------------------------------------------------------------
# n-step windows
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("num_steps", "capacity"),
    [(6, 10), (10, 10), (23, 10), (40, 7)],
    ids=["partial", "exactly-full", "wrapped", "wrapped-many-times"],
)
@pytest.mark.parametrize("horizon", [1, 3, 5])
@pytest.mark.parametrize("num_envs", [NUM_ENVS, 1], ids=["envs", "one-env"])
def test_nstep_targets_from_windows_match_loop_reference(num_steps, capacity, horizon, num_envs):
    rng = np.random.default_rng(num_steps * 10 + horizon)
    history = make_history(rng, num_steps, num_envs)
    buffer = filled_buffer(history, capacity)
    batch = jax.jit(ReplayBuffer.sample, static_argnums=(2, 3))(
        buffer, jax.random.key(horizon), 512, horizon
    )
    assert isinstance(batch, NStepBatch)
    assert batch.reward.shape == (horizon, 512)
    assert batch.next_obs.shape == (horizon, 512, 2)
    gamma = 0.9
    targets = nstep_targets(
        batch.reward, value_fn(batch.next_obs), batch.terminated, batch.truncated, gamma
    )
    newest = num_steps - 1
    oldest = max(0, num_steps - capacity)
    envs = np.asarray(batch.obs[:, 0]).astype(int)
    steps = np.asarray(batch.obs[:, 1]).astype(int)
    assert steps.min() >= oldest and steps.max() <= newest
    expected = [
        reference_nstep(history, env, step, newest, horizon, gamma, value_fn)
        for env, step in zip(envs, steps, strict=True)
    ]
    np.testing.assert_allclose(np.asarray(targets), expected, rtol=1e-5, atol=1e-5)
    # The action is the one stored with the sampled observation.
    np.testing.assert_array_equal(np.asarray(batch.action), history["action"][steps, envs])


def test_windows_are_consecutive_and_stop_at_newest_step():
    num_steps, capacity, horizon = 25, 8, 4
    history = make_history(np.random.default_rng(3), num_steps)
    history["terminated"][:] = False
    history["truncated"][:] = False
    buffer = filled_buffer(history, capacity)
    batch = jax.jit(ReplayBuffer.sample, static_argnums=(2, 3))(
        buffer, jax.random.key(1), 2000, horizon
    )
    env = np.asarray(batch.obs[:, 0])
    start = np.asarray(batch.obs[:, 1])
    window_steps = np.asarray(batch.next_obs[..., 1]) - 0.5  # [n, B]
    np.testing.assert_array_equal(np.asarray(batch.next_obs[..., 0]), env[None].repeat(horizon, 0))
    newest = num_steps - 1
    expected = np.minimum(start[None] + np.arange(horizon)[:, None], newest)
    np.testing.assert_array_equal(window_steps, expected)
    # Exactly the steps at (or repeating) the newest stored step are flagged as truncated.
    np.testing.assert_array_equal(np.asarray(batch.truncated), expected == newest)
    assert not np.any(np.asarray(batch.terminated))
    # Rewards of the repeats are the newest step's (ignored by the targets: they follow an end).
    rewards = history["reward"][expected.astype(int), env.astype(int)[None]]
    np.testing.assert_array_equal(np.asarray(batch.reward), rewards)


@pytest.mark.parametrize("horizon", [1, 3])
def test_one_environment_samples_the_rows_its_age_key_draws(horizon):
    # With one environment no environment index is drawn: the batch is the rows that the
    # age key's draw names, the same batch the general path's gathers (env 0) gave.
    history = make_history(np.random.default_rng(5), 23, num_envs=1)
    buffer = filled_buffer(history, 10)
    key = jax.random.key(7)
    batch = jax.jit(ReplayBuffer.sample, static_argnums=(2, 3))(buffer, key, 256, horizon)
    _, age_key = jax.random.split(key)
    logical = jax.random.randint(age_key, (256,), 0, buffer.size)
    rows, at_end = window_rows(buffer.position, buffer.size, buffer.capacity, logical, horizon)
    rows = np.asarray(rows)
    data = jax.tree.map(np.asarray, buffer.data)
    np.testing.assert_array_equal(batch.obs, data.obs[rows[0], 0])
    np.testing.assert_array_equal(batch.action, data.action[rows[0], 0])
    np.testing.assert_array_equal(batch.reward, data.reward[rows, 0])
    np.testing.assert_array_equal(batch.terminated, data.terminated[rows, 0])
    np.testing.assert_array_equal(batch.truncated, data.truncated[rows, 0] | np.asarray(at_end))
    np.testing.assert_array_equal(batch.next_obs, data.next_obs[rows, 0])


def test_window_rows_formula():
    rows, at_end = window_rows(jnp.int32(2), jnp.int32(5), 5, jnp.array([0, 3, 4], jnp.int32), 3)
    # oldest row = 2; logical 0 -> rows 2, 3, 4; logical 3 -> rows 0, 1, 1; logical 4 -> 1, 1, 1.
    np.testing.assert_array_equal(rows, [[2, 0, 1], [3, 1, 1], [4, 1, 1]])
    np.testing.assert_array_equal(
        at_end, [[False, False, True], [False, True, True], [False, True, True]]
    )


def test_sampling_is_uniform_over_stored_transitions():
    num_steps, capacity = 30, 12
    history = make_history(np.random.default_rng(4), num_steps)
    buffer = filled_buffer(history, capacity)
    draws = 120_000
    batch = jax.jit(ReplayBuffer.sample, static_argnums=(2, 3))(buffer, jax.random.key(2), draws, 3)
    envs = np.asarray(batch.obs[:, 0]).astype(int)
    steps = np.asarray(batch.obs[:, 1]).astype(int)
    counts = np.zeros((capacity, NUM_ENVS))
    np.add.at(counts, (steps - (num_steps - capacity), envs), 1)
    expected = draws / counts.size
    # Every stored transition, the newest ones included, is drawn about equally often.
    assert counts.min() > 0
    chi_square = np.sum((counts - expected) ** 2 / expected)
    dof = counts.size - 1
    assert chi_square < dof + 5 * np.sqrt(2 * dof)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def test_invalid_use_raises():
    history = make_history(np.random.default_rng(5), 2)
    example = step_of(history, 0)
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer.create(0, example)
    with pytest.raises(TypeError, match="capacity"):
        ReplayBuffer.create(2.5, example)
    buffer = ReplayBuffer.create(4, example)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(jax.random.key(0), 4, 1)
    with pytest.raises(ValueError, match=r"transition\.obs"):
        buffer.add(example._replace(obs=np.zeros((NUM_ENVS, 3), np.float32)))
    with pytest.raises(ValueError, match=r"transition\.reward"):
        buffer.add(example._replace(reward=np.zeros((NUM_ENVS + 1,), np.float32)))
    buffer = buffer.add(example)
    with pytest.raises(ValueError, match="horizon"):
        buffer.sample(jax.random.key(0), 4, 0)
    with pytest.raises(ValueError, match="batch_size"):
        buffer.sample(jax.random.key(0), 0, 1)
    with pytest.raises(ValueError, match=r"transition\.next_obs"):
        ReplayBuffer.create(4, example._replace(next_obs=np.zeros((NUM_ENVS, 5), np.float32)))

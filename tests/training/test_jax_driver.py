"""The jitted training driver: vmapped seeds, vmapped hyperparameter sweeps, period-wise runs,
and DDPG learning through it."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrl
from jaxrl.training import TrainConfig, make_env, make_train, make_train_loop, train_until
from jaxrl.training.programs import _PROGRAMS

TINY = TrainConfig(num_envs=4, num_steps=32, total_steps=256, eval_every=128, eval_episodes=2)
TRPO = jaxrl.TRPO(gamma=0.95, max_kl=0.005, return_scaling=True, hidden_sizes=(16, 16))
DDPG_TINY = jaxrl.DDPG(
    n_step_return_horizon=3,
    batch_size=16,
    buffer_size=256,
    hidden_sizes=(16, 16),
    update_per_step=0.25,
)
DDPG_RUN = TrainConfig(num_envs=4, num_steps=2, total_steps=256, eval_every=128, eval_episodes=2)
# Conjugate gradients amplify float32 rounding by the Fisher's condition number, and vmap
# batches the seeds' matmuls and reductions differently from a single run. With Tianshou's
# damping (0.1) two updates grow that to 1.4e-4 on some parameters (seen on an AVX-512 AMD EPYC
# and on an H100), past rounding; damping 1.0 conditions the Fisher so that the comparison
# stays at rounding (0.1% of the tolerance). The test is about vmapping, not conditioning.
WELL_CONDITIONED_TRPO = TRPO.replace(damping=1.0)


def assert_trees_close(a, b, rtol=1e-4, atol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    ("agent", "config"),
    [(WELL_CONDITIONED_TRPO, TINY), (DDPG_TINY, DDPG_RUN)],
    ids=["trpo", "ddpg"],
)
def test_vmapped_seed_equals_single_run(agent, config):
    train = make_train(agent, "Pendulum-v1", config)
    keys = jax.random.split(jax.random.key(3), 3)
    states, metrics = jax.jit(jax.vmap(train))(keys)
    single = jax.jit(train)
    for i in range(3):
        state_i, metrics_i = single(keys[i])
        seed_params = jax.tree_util.tree_map(lambda x, i=i: x[i], states.actor.params)
        # vmap batches the seeds' float reductions differently from a single run, so the
        # comparison is to float32 rounding. Rounding differences grow through chaotic
        # Pendulum episodes, so only the first evaluation return is compared.
        assert_trees_close(seed_params, state_i.actor.params, rtol=1e-3, atol=1e-4)
        for name in ("actor_loss", "critic_loss", "kl"):
            if name in metrics:
                np.testing.assert_allclose(
                    metrics[name][i], metrics_i[name], rtol=1e-3, atol=1e-5, err_msg=name
                )
        np.testing.assert_allclose(
            metrics["eval/return"][i, 0], metrics_i["eval/return"][0], rtol=1e-3
        )
        np.testing.assert_array_equal(metrics["env_steps"][i], metrics_i["env_steps"])


def test_period_by_period_equals_whole_run():
    """train_until runs the loop period by period (vmapped over seeds: equal to the whole run
    up to float32 rounding) and ends after the period at which `stop` first holds. (The
    agent and run of the vmapped-seed test: the whole run's program compiles once.)"""
    loop = make_train_loop(WELL_CONDITIONED_TRPO, "Pendulum-v1", TINY)
    _, whole = jax.jit(loop.train)(jax.random.key(0))
    _PROGRAMS.clear()
    _, full = train_until(loop, jax.random.key(0)[None], lambda eval_returns: False)
    assert set(full) == set(whole)
    for name in whole:
        assert full[name].shape == (1, *whole[name].shape), name
    np.testing.assert_array_equal(full["env_steps"][0], whole["env_steps"])
    np.testing.assert_allclose(full["eval/return"][0], whole["eval/return"], rtol=1e-3)

    seen = []

    def stop_after_first(eval_returns):
        seen.append(eval_returns.shape)
        return True

    _, cut = train_until(loop, jax.random.key(0)[None], stop_after_first)
    assert seen == [(1, 1)]
    assert cut["eval/return"].shape == (1, 1)
    assert cut["env_steps"].tolist() == [
        whole["env_steps"][: TINY.layout.collections_per_period].tolist()
    ]
    np.testing.assert_array_equal(cut["eval/return"], full["eval/return"][:, :1])
    # Both calls ran the same compiled period program (the run has no shorter last period).
    assert period_programs() == [TINY.layout.collections_per_period]


def period_programs() -> list[int]:
    """The period lengths of the compiled period programs in the jitted driver's cache (its
    keys: ``((("period", length), ...), tree, avals)``)."""
    return sorted(
        key[0][0][1]
        for key in _PROGRAMS
        if isinstance(key[0][0], tuple) and key[0][0][0] == "period"
    )


def test_hyperparameter_sweep_in_one_compile():
    """TRPO max_kl and DDPG tau swept under vmap: one program, different results."""
    trpo_agents = jax.tree_util.tree_map(
        lambda *x: jnp.stack(x), *[TRPO.replace(max_kl=v) for v in (1e-4, 1e-2, 1e-1)]
    )

    @jax.jit
    def sweep_trpo(agents, key):
        return jax.vmap(lambda agent: make_train(agent, "Pendulum-v1", TINY)(key)[1])(agents)

    metrics = sweep_trpo(trpo_agents, jax.random.key(0))
    kl = np.asarray(metrics["kl"]).mean(axis=1)
    assert kl[0] < kl[1] < kl[2], kl
    assert np.all(np.asarray(metrics["kl"])[0] < 1e-4)
    assert sweep_trpo._cache_size() == 1

    ddpg_agents = jax.tree_util.tree_map(
        lambda *x: jnp.stack(x), DDPG_TINY.replace(tau=0.0), DDPG_TINY.replace(tau=0.5)
    )
    key = jax.random.key(1)
    states = jax.jit(jax.vmap(lambda agent: make_train(agent, "Pendulum-v1", DDPG_RUN)(key)[0]))(
        ddpg_agents
    )
    init = jax.vmap(lambda agent: make_train_loop(agent, "Pendulum-v1", DDPG_RUN).init(key))
    initial = jax.jit(init)(ddpg_agents).state

    def leaves(tree, sweep_index):
        return [np.asarray(x[sweep_index]) for x in jax.tree_util.tree_leaves(tree)]

    def distance(a, b):
        return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))

    # tau = 0 keeps the initial target exactly, though the online actor has trained away from it.
    kept, start = leaves(states.actor_target, 0), leaves(initial.actor_target, 0)
    for final_leaf, initial_leaf in zip(kept, start, strict=True):
        np.testing.assert_array_equal(final_leaf, initial_leaf)
    assert distance(leaves(states.actor.params, 0), leaves(initial.actor.params, 0)) > 1e-3
    # tau = 0.5 tracks the online actor: the target has moved from its start, to within a
    # fraction of the online actor's distance from that start.
    online, target = leaves(states.actor.params, 1), leaves(states.actor_target, 1)
    start = leaves(initial.actor_target, 1)
    travelled = distance(online, start)
    assert distance(target, start) > 0.5 * travelled, (distance(target, start), travelled)
    assert distance(target, online) < 0.25 * travelled, (distance(target, online), travelled)


def test_progress_callback_reports_every_evaluation():
    seen = []
    train = make_train(TRPO, "Pendulum-v1", TINY, progress=seen.append)
    jax.block_until_ready(jax.jit(train)(jax.random.key(0)))
    assert [info["env_steps"] for info in seen] == [128, 256]
    assert all(np.isfinite(info["eval_return"]) for info in seen)


def test_configuration_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown gymnax environment id 'NoSuchEnv-v9'"):
        make_env("NoSuchEnv-v9")
    with pytest.raises(ValueError, match=r"'Pendulumm-v1' \(did you mean Pendulum-v1\?\)"):
        make_env("Pendulumm-v1")
    # A gymnasium environment, by id or as an object, names the driver that takes it.
    host = r"the host driver \(jaxrl.training.gymnasium_driver.train_gymnasium\)"
    with pytest.raises(ValueError, match=rf"'Reacher-v5' is gymnasium's, not gymnax's: {host}"):
        make_env("Reacher-v5")
    with pytest.raises(TypeError, match=rf"gymnax interface \(.*; {host} takes gymnasium's, by id"):
        make_env(gymnasium.make("Pendulum-v1"))
    with pytest.raises(TypeError, match=r"config must be a TrainConfig.*got \{'num_envs': 4\}"):
        make_train(TRPO, "Pendulum-v1", {"num_envs": 4})
    train = make_train(TRPO, "Pendulum-v1", TINY)
    with pytest.raises(TypeError, match=r"train: key must be one seed's PRNG key .*got int \[\]"):
        train(0)
    with pytest.raises(TypeError, match=r"one seed's PRNG key .*got \w+ \[2\]; over_seeds"):
        train(jax.random.split(jax.random.key(0), 2))
    # train_until: the keys of a batch of seeds, and a stop test that is a function (checked
    # before anything trains) returning one bool (checked at the first evaluation).
    loop = make_train_loop(TRPO, "Pendulum-v1", TINY)
    keys = jax.random.split(jax.random.key(0), 2)
    with pytest.raises(TypeError, match=r"^train_until: keys must be one PRNG key per seed, \[S\]"):
        train_until(loop, jax.random.key(0), None)
    with pytest.raises(TypeError, match=r"^stop must be a function or None, got 7$"):
        train_until(loop, keys, 7)
    with pytest.raises(TypeError, match=r"^stop must return one bool, got array\(\[False, False\]"):
        train_until(loop, keys, lambda returns: returns.max(axis=1) > 0)
    with pytest.raises(ValueError, match="update_per_step"):
        make_train(jaxrl.DDPG(update_per_step=0.1), "Pendulum-v1", DDPG_RUN)
    with pytest.raises(ValueError, match="num_envs"):
        TrainConfig(num_envs=0)
    with pytest.raises(ValueError, match="total_steps"):
        make_train(
            TRPO,
            "Pendulum-v1",
            TrainConfig(num_envs=4, num_steps=32, total_steps=64, eval_every=128),
        )


@pytest.mark.learning
@pytest.mark.slow
def test_ddpg_solves_pendulum_with_eight_vmapped_seeds():
    """Tianshou's DDPG test settings: 8 envs, 1 update per 8 env steps, batch 128, n-step 3,
    actor lr 1e-4, critic lr 1e-3, Gaussian noise 0.1, [128, 128] relu, no warm-up; budget
    100k steps (5 x 20,000), evaluated on 100 episodes (Tianshou's test_num)."""
    agent = jaxrl.DDPG(
        tau=0.005,
        gamma=0.99,
        actor_lr=1e-4,
        critic_lr=1e-3,
        n_step_return_horizon=3,
        batch_size=128,
        buffer_size=20_000,
        update_per_step=0.125,
        hidden_sizes=(128, 128),
    )
    config = TrainConfig(
        num_envs=8, num_steps=1, total_steps=100_000, eval_every=5_000, eval_episodes=100
    )
    # Ends once 7 of the 8 seeds have reached -250, as Tianshou's stop_fn would.
    _, metrics = train_until(
        make_train_loop(agent, "Pendulum-v1", config),
        jax.random.split(jax.random.key(0), 8),
        lambda eval_returns: np.sum(eval_returns.max(axis=1) >= -250) >= 7,
    )
    best = np.asarray(metrics["eval/return"]).max(axis=1)
    assert np.sum(best >= -250) >= 7, f"best evaluation return per seed: {best}"


def test_observation_normalization_in_the_jitted_driver():
    """Statistics of every training observation, carried in the run; the agent sees the
    normalized, clipped observations; evaluation freezes them."""
    config = TrainConfig(
        num_envs=4,
        num_steps=8,
        total_steps=64,
        eval_every=32,
        eval_episodes=2,
        normalize_obs=True,
    )
    loop = make_train_loop(TRPO, "Pendulum-v1", config)
    carry = jax.jit(loop.init)(jax.random.key(0))
    assert float(carry.obs_stats.count) == 4  # the reset observations
    assert np.all(np.abs(np.asarray(carry.obs)) <= 10.0)
    carry, _ = jax.jit(loop.run_period)(carry)
    # 4 envs x 8 steps x 1 collection per period, after the 4 reset observations.
    assert float(carry.obs_stats.count) == 4 + 32
    mean = np.asarray(carry.obs_stats.mean)
    assert mean.shape == (3,) and np.all(np.isfinite(mean)) and np.any(mean != 0)
    # Without normalization the carry has no statistics and the run is unchanged.
    plain = make_train_loop(TRPO, "Pendulum-v1", dataclasses.replace(config, normalize_obs=False))
    assert jax.jit(plain.init)(jax.random.key(0)).obs_stats is None


def test_normalized_runs_resume_exactly(tmp_path):
    """The statistics are part of the checkpointed carry: an interrupted and resumed run
    ends bit-identical to an uninterrupted one."""
    from jaxrl.runs import RunDir, load_run, train_run

    config = _tiny_run_config(num_seeds=2, checkpoint_every=1, normalize_obs=True)
    whole, cut = RunDir.create(tmp_path / "whole"), RunDir.create(tmp_path / "cut")
    train_run(config, whole, progress=False)
    train_run(config, cut, progress=False, stop_after_periods=2)
    train_run(config, cut, resume=True, progress=False)
    assert float(load_run(cut.path).carry.obs_stats.count[0]) == 4 + 3 * 32
    _assert_same_carry(whole, cut)


def _tiny_run_config(**run: Any) -> Any:
    """A 96-step TRPO run on gymnax's Pendulum, 3 evaluation periods of 32 steps."""
    from jaxrl.config import RunConfig

    return RunConfig.from_preset(
        "trpo",
        "Pendulum-v1",
        backend="jax",
        hyperparameters={"hidden_sizes": (8,)},
        num_envs=4,
        num_steps=8,
        total_steps=96,
        eval_every=32,
        eval_episodes=1,
        **run,
    )


def _assert_same_carry(expected_dir: Any, got_dir: Any) -> None:
    """The two run directories' final carries are bit-identical."""
    from jaxrl.runs import load_run

    expected, got = load_run(expected_dir.path).carry, load_run(got_dir.path).carry
    for a, b in zip(
        jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got), strict=True
    ):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_run_stopped_by_its_stop_hook_is_checkpointed_there_and_resumes_exactly(tmp_path):
    """``train_run(stop=...)``: the call ends after the period where ``stop`` says so, with
    that period checkpointed even when ``checkpoint_every`` would not (0: only at the end),
    and the resumed run ends bit-identical to an uninterrupted one. A run directory may be
    given as a path: created for a new run (refused where a run is), opened to resume."""
    from jaxrl.runs import RunDir, RunDirError, train_run

    config = _tiny_run_config(checkpoint_every=0)
    whole, cut = RunDir.create(tmp_path / "whole"), RunDir(tmp_path / "cut")
    train_run(config, whole, progress=False)
    asked = []

    def stop() -> bool:
        asked.append(True)
        return len(asked) == 2

    stopped = train_run(config, str(cut.path), progress=False, stop=stop)
    assert not stopped.finished and stopped.period == 2 and stopped.env_steps == 64
    assert stopped.checkpoint == cut.checkpoints / "2"
    with pytest.raises(RunDirError, match="already exists"):
        train_run(config, cut.path, progress=False)
    resumed = train_run(config, cut.path, resume=True, progress=False, stop=lambda: False)
    assert resumed.finished and resumed.env_steps == 96
    _assert_same_carry(whole, cut)

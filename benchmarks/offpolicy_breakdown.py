"""Where an off-policy env step's time goes: the jitted loop (16 vmapped seeds) and the host
driver (1 seed), DDPG with the settings of the peers' comparison (``benchmarks/peers/``):
batch 256, buffer 20,000, [64, 64] ReLU, 1 env, 1 update per env step, 1,000 warm-up steps.

The jitted loop is measured by taking pieces away from one compiled period of
``--steps`` env steps (after its compilation, best of ``--reps``), each a per-env-step cost:

* ``act + env + insert + metrics``: the loop with an update that does nothing;
* ``sample``: the loop whose update only reads its sampled batch, minus the above;
* ``update``: the whole loop minus the above (the update's own pieces below, each compiled
  alone over the seeds: critic targets, critic step, actor step, soft updates, learning rates;
  alone they pay a dispatch each, so they sum above the fused update);
* ``of which the non-finite guard``: the whole loop minus the same loop whose optimizer
  steps apply their gradients unguarded (:class:`Unguarded`);
* ``warm-up``: the same period inside the warm-up (no update runs there).

A critic optimizer step is also timed for one critic and for twin critics (TD3's
:class:`jaxrl.networks.Ensemble`), the pair applied as one batched network and in turn.

The host driver is measured the same way (the update, then ``act + env + insert`` and the
Python around them); the time to first step (compilation included) is reported apart.

    python benchmarks/offpolicy_breakdown.py            # about 5 minutes on 2 cores
    python benchmarks/offpolicy_breakdown.py --quick    # CI smoke run (seconds)
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import optax
from common import base_parser, loadavg, machine_info, markdown_table, print_machine, write_json
from common import output_dir as results_dir
from flax.training.train_state import TrainState

from jaxrl.algorithms import off_policy as op
from jaxrl.algorithms.ddpg import DDPG
from jaxrl.networks import Ensemble, QCritic, apply_copies
from jaxrl.replay import NStepBatch
from jaxrl.spaces import describe_space
from jaxrl.training import TrainConfig, make_train_loop, over_seeds
from jaxrl.training.gymnasium_driver import train_gymnasium

SETTINGS = dict(hidden_sizes=(64, 64), batch_size=256, buffer_size=20000, update_per_step=1.0)


class NoUpdate(DDPG):
    """DDPG whose update does nothing (the batch it is given is not even read)."""

    def update(self, state, batch, key):
        zero = jnp.zeros(())
        return state, {"actor_loss": zero, "critic_loss": zero, "rejected_steps": zero}


class SampleOnly(DDPG):
    """DDPG whose update only reads its batch (so that sampling is not compiled away)."""

    def update(self, state, batch, key):
        read = jnp.sum(batch.obs) + jnp.sum(batch.next_obs) + jnp.sum(batch.reward)
        return state, {"actor_loss": read, "critic_loss": read, "rejected_steps": read * 0}


class Unguarded(DDPG):
    """DDPG whose critic and actor apply their gradients without the non-finite guard
    (:func:`jaxrl.algorithms._common.guarded_gradient_step`): what the guard costs. Its
    numbers differ from DDPG's by rounding (XLA fuses the gradient reductions otherwise)."""

    def update(self, state, batch, key):
        guarded = op.guarded_gradient_step
        op.guarded_gradient_step = lambda train_state, loss, grads, *finite_test: (
            train_state.apply_gradients(grads=grads),
            jnp.zeros((), jnp.int32),
        )
        try:  # swapped while the update is traced
            return super().update(state, batch, key)
        finally:
            op.guarded_gradient_step = guarded


def jitted_period_seconds(agent: Any, seeds: int, steps: int, reps: int, warmup: bool) -> float:
    """Seconds per env step of one compiled period of ``steps`` steps of ``seeds`` seeds,
    best of ``reps``, inside the warm-up or after it."""
    agent = agent.replace(warmup_steps=10**9 if warmup else 0)
    config = TrainConfig(num_envs=1, num_steps=1, total_steps=steps, eval_every=steps)
    loop = make_train_loop(agent, "Pendulum-v1", config)
    init = jax.jit(over_seeds(loop.init, "vmap"))
    period = jax.jit(over_seeds(loop.run_period, "vmap"))
    carry = init(jax.random.split(jax.random.key(0), seeds))
    carry = jax.block_until_ready(period(carry)[0])  # compiled, the buffer filled
    best = np.inf
    for _ in range(reps):
        start = time.perf_counter()
        carry = jax.block_until_ready(period(carry)[0])
        best = min(best, time.perf_counter() - start)
    return best / steps


def update_pieces(seeds: int, reps: int) -> dict[str, float]:
    """Seconds per call of each piece of a DDPG update, compiled alone over ``seeds``."""
    agent = DDPG(**SETTINGS)
    obs_space = describe_space(gym.spaces.Box(-8, 8, (3,), np.float32), "observation_space")
    act_space = describe_space(gym.spaces.Box(-2, 2, (1,), np.float32), "action_space")
    keys = jax.random.split(jax.random.key(0), seeds)
    state = jax.vmap(lambda k: agent.init(k, obs_space, act_space, 1))(keys)
    rng, size = np.random.default_rng(0), (seeds, agent.batch_size)
    batch = NStepBatch(
        obs=jnp.asarray(rng.normal(size=(*size, 3)), jnp.float32),
        action=jnp.asarray(rng.uniform(-1, 1, (*size, 1)), jnp.float32),
        reward=jnp.asarray(rng.normal(size=(seeds, 1, size[1])), jnp.float32),
        terminated=jnp.zeros((seeds, 1, size[1]), bool),
        truncated=jnp.zeros((seeds, 1, size[1]), bool),
        next_obs=jnp.asarray(rng.normal(size=(seeds, 1, size[1], 3)), jnp.float32),
    )
    targets = jnp.zeros(size)
    pieces = {
        "critic targets": (agent.critic_targets, (state, batch, keys)),
        "critic step": (
            lambda s, b, y: op.critic_step(s.critic, b.obs, b.action, y),
            (state, batch, targets),
        ),
        "actor step": (
            lambda s, b: op.actor_step(s.actor, op.q_function(s.critic), b.obs),
            (state, batch),
        ),
        "soft updates": (lambda s: op.soft_update_targets(s, agent.tau), (state,)),
        "learning rates": (agent.with_learning_rates, (state,)),
        "whole update": (agent.update, (state, batch, keys)),
    }
    found = {}
    for name, (fn, args) in pieces.items():
        program = jax.jit(jax.vmap(fn))
        jax.block_until_ready(program(*args))
        best = np.inf
        for _ in range(reps):
            start = time.perf_counter()
            for _ in range(20):
                out = program(*args)
            jax.block_until_ready(out)
            best = min(best, (time.perf_counter() - start) / 20)
        found[name] = best
    return found


def twin_critic_steps(seeds: int, rounds: int) -> dict[str, float]:
    """Median seconds of one critic optimizer step (batch of ``batch_size``, ``seeds`` seeds
    vmapped) of one critic, and of twin critics (:class:`jaxrl.networks.Ensemble`) applied
    as one batched network and in turn, timed in alternating rounds of 4 steps each."""
    hidden, batch = SETTINGS["hidden_sizes"], SETTINGS["batch_size"]
    one, twin = QCritic(hidden), Ensemble(QCritic(hidden), 2)
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.normal(size=(seeds, batch, 3)), jnp.float32)
    action = jnp.asarray(rng.uniform(-1, 1, (seeds, batch, 1)), jnp.float32)
    targets = jnp.asarray(rng.normal(size=(seeds, batch)), jnp.float32)
    keys = jax.random.split(jax.random.key(0), seeds)

    def state_of(module: Any, apply: Any) -> Any:
        params = jax.vmap(lambda k: module.init(k, obs[0], action[0]))(keys)
        return jax.vmap(lambda p: TrainState.create(apply_fn=apply, params=p, tx=optax.adam(1e-3)))(
            params
        )

    def copies(batched: bool) -> Any:
        inner = QCritic(hidden).apply
        return lambda v, *x: apply_copies(inner, v["params"]["module"], *x, batched=batched)

    cases = {
        "one critic": state_of(one, one.apply),
        "twin, batched (accelerators)": state_of(twin, copies(True)),
        "twin, in turn (CPU)": state_of(twin, copies(False)),
    }
    step = jax.jit(jax.vmap(lambda c, o, a, y: op.critic_step(c, o, a, y)[0]))
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(rounds + 2):  # the first two compile and warm up
        for name in cases:
            start = time.perf_counter()
            for _ in range(4):
                cases[name] = step(cases[name], obs, action, targets)
            jax.block_until_ready(cases[name])
            if round_ >= 2:
                times[name].append((time.perf_counter() - start) / 4)
    return {name: float(np.median(t)) for name, t in times.items()}


def host_seconds(agent: Any, steps: int) -> tuple[float, float]:
    """``(seconds per env step after the first period, seconds of the first period)`` of the
    host driver, one seed, gymnasium's Pendulum-v1, periods of ``steps`` env steps."""
    marks = []
    train_gymnasium(
        agent.replace(warmup_steps=0),
        "Pendulum-v1",
        num_envs=1,
        num_steps=1,
        total_steps=3 * steps,
        eval_every=steps,
        eval_episodes=1,
        progress=lambda _: marks.append(time.perf_counter()),
    )
    per_step = min(b - a for a, b in itertools.pairwise(marks[1:])) / steps
    return per_step, marks[1] - marks[0]


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=2000, help="env steps of a timed period")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.steps, args.reps = 2, 300, 1
    info = machine_info()
    print_machine(info)
    full, sample_only, none = DDPG(**SETTINGS), SampleOnly(**SETTINGS), NoUpdate(**SETTINGS)
    unguarded = Unguarded(**SETTINGS)
    loop = {
        name: jitted_period_seconds(agent, args.seeds, args.steps, args.reps, warmup)
        for name, agent, warmup in (
            ("rest", none, False),
            ("sample", sample_only, False),
            ("whole", full, False),
            ("unguarded", unguarded, False),
            ("warm-up", full, True),
        )
    }
    pieces = update_pieces(args.seeds, args.reps)
    twin = twin_critic_steps(args.seeds, 5 if args.quick else 40)
    host_whole, host_first = host_seconds(full, args.steps)
    host_rest, _ = host_seconds(none, args.steps)
    rows = [
        ["act + env + insert + metrics", loop["rest"]],
        ["sample", loop["sample"] - loop["rest"]],
        ["update", loop["whole"] - loop["sample"]],
        ["whole env step", loop["whole"]],
        ["of which the non-finite guard", loop["whole"] - loop["unguarded"]],
        ["env step in the warm-up", loop["warm-up"]],
    ]
    print(f"\nThe jitted loop, {args.seeds} seeds vmapped: ms per env step (all seeds)")
    print(markdown_table(["part", "ms"], [[n, f"{v * 1e3:.3f}"] for n, v in rows]))
    print("\nA DDPG update's pieces, each compiled alone over the seeds: ms per call")
    print(markdown_table(["piece", "ms"], [[n, f"{v * 1e3:.3f}"] for n, v in pieces.items()]))
    print("\nA critic optimizer step, one critic and twin critics: ms per step (median)")
    twin_rows = [[n, f"{v * 1e3:.3f}", f"{v / twin['one critic']:.2f}"] for n, v in twin.items()]
    print(markdown_table(["critics", "ms", "x one critic"], twin_rows))
    host_rows = [
        ["update (and its dispatch)", host_whole - host_rest],
        ["act + env + insert + Python", host_rest],
        ["whole env step", host_whole],
    ]
    print("\nThe host driver, 1 seed: ms per env step")
    print(markdown_table(["part", "ms"], [[n, f"{v * 1e3:.3f}"] for n, v in host_rows]))
    print(f"first period of {args.steps} steps (compilation included): {host_first:.1f} s")
    info["loadavg_end"] = loadavg()
    out = results_dir(args) / "offpolicy_breakdown.json"
    write_json(
        out,
        {
            "machine": info,
            "args": vars(args) | {"out": str(args.out)},
            "jitted_ms_per_env_step": {n: v * 1e3 for n, v in rows},
            "update_pieces_ms": {n: v * 1e3 for n, v in pieces.items()},
            "critic_step_ms": {n: v * 1e3 for n, v in twin.items()},
            "host_ms_per_env_step": {n: v * 1e3 for n, v in host_rows},
            "host_first_period_s": host_first,
        },
    )
    print(f"load average {info['loadavg_start']} -> {info['loadavg_end']}; wrote {out}")


if __name__ == "__main__":
    main()

"""Update latency: one NPG, TRPO and DDPG learning step, jaxrl (jitted) vs Tianshou 2.0.1.

Identical shapes on both sides, Tianshou's network and batch sizes:

* ``pendulum``: obs 3, action 1. NPG/TRPO: Tianshou's test (16 envs x 128 steps = 2048 samples,
  full batch, repeat 2, 5 critic iterations, [64, 64] tanh). DDPG: its test ([128, 128] relu,
  batch 128, 3-step returns, buffer 20,000 filled).
* ``mujoco``: obs 17, action 6 (HalfCheetah). NPG/TRPO: the MuJoCo examples (16 envs x 64 steps
  = 1024 samples, full batch, repeat 1, 20 critic iterations, [64, 64] tanh). DDPG: the MuJoCo
  example ([256, 256] relu, batch 256, 1-step returns; a 100,000-transition buffer filled).

One "update" is what each library does per learning step: for NPG/TRPO Tianshou's
``algorithm.update(buffer, batch_size, repeat)`` (values, GAE, return scaling, advantage
normalization, old log-probs, then the actor/critic steps), and jaxrl's ``jit(agent.update)``
on the same rollout; for DDPG Tianshou's ``algorithm.update(buffer, sample_size)`` (sample,
n-step targets, critic and actor steps, soft updates), and jaxrl's jitted
``agent.update(state, agent.sample_batch(buffer, key), key)``. Synthetic data with the right
shapes (Pendulum episodes truncate every 200 steps) fills both sides.

Timing: alternating A/B repetitions (jaxrl, Tianshou with 2 torch threads, Tianshou with 1
torch thread; the order flips every repetition), each timing enough back-to-back calls for
about ``--seconds`` seconds; the table gives the median seconds per update and the quartiles.
jaxrl's compile time is reported separately (never inside the timings).

    python benchmarks/update_latency.py            # full (about 3 minutes)
    python benchmarks/update_latency.py --quick    # CI smoke run (seconds)
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from common import (
    alternate,
    base_parser,
    calls_for,
    command_line,
    fmt_ms,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    pyplot,
    save_figure,
    summarize,
    use_tianshou,
    write_csv,
    write_json,
)

import jaxrl
from jaxrl.replay import Transition
from jaxrl.rollout import Rollout

SHAPES: dict[str, dict[str, Any]] = {
    "pendulum": dict(
        obs_dim=3,
        act_dim=1,
        action_high=2.0,
        on_policy=dict(num_envs=16, num_steps=128, repeat=2, critic_iters=5, gamma=0.95),
        on_policy_batch_size=99999,  # Tianshou's test passes 99999: one full-batch minibatch
        ddpg=dict(hidden=(128, 128), batch=128, n_step=3, num_envs=8, capacity=20_000),
    ),
    "mujoco": dict(
        obs_dim=17,
        act_dim=6,
        action_high=1.0,
        on_policy=dict(num_envs=16, num_steps=64, repeat=1, critic_iters=20, gamma=0.99),
        on_policy_batch_size=None,
        ddpg=dict(hidden=(256, 256), batch=256, n_step=1, num_envs=1, capacity=100_000),
    ),
}


def spaces(shape: dict[str, Any]) -> tuple[gym.spaces.Box, gym.spaces.Box]:
    obs = gym.spaces.Box(-np.inf, np.inf, (shape["obs_dim"],), np.float32)
    high = shape["action_high"]
    act = gym.spaces.Box(-high, high, (shape["act_dim"],), np.float32)
    return obs, act


def synthetic(num_steps: int, num_envs: int, obs_dim: int, act_dim: int, seed: int) -> dict:
    """Time-major transitions ``[T, N, ...]``; episodes truncate every 200 steps."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(num_steps + 1, num_envs, obs_dim)).astype(np.float32)
    truncated = np.zeros((num_steps, num_envs), bool)
    truncated[199::200] = True
    return {
        "obs": obs[:-1],
        "act": rng.normal(size=(num_steps, num_envs, act_dim)).astype(np.float32) * 0.5,
        "rew": rng.normal(size=(num_steps, num_envs)).astype(np.float32),
        "terminated": np.zeros((num_steps, num_envs), bool),
        "truncated": truncated,
        "obs_next": obs[1:],
    }


def as_batch(cls: type, data: dict) -> Any:
    """:func:`synthetic` 's transitions as a ``cls`` of device arrays: a
    :class:`jaxrl.rollout.Rollout` or a :class:`jaxrl.replay.Transition`."""
    return cls(
        obs=jnp.asarray(data["obs"]),
        action=jnp.asarray(data["act"]),
        reward=jnp.asarray(data["rew"]),
        terminated=jnp.asarray(data["terminated"]),
        truncated=jnp.asarray(data["truncated"]),
        next_obs=jnp.asarray(data["obs_next"]),
    )


# ------------------------------------------------------------------------------ jaxrl side
def jaxrl_on_policy(algo: str, shape: dict[str, Any], data: dict) -> tuple[Any, float]:
    cfg = shape["on_policy"]
    mujoco = shape["obs_dim"] > 3
    common = dict(
        gamma=cfg["gamma"],
        gae_lambda=0.95,
        lr=1e-3,
        return_scaling=True,
        advantage_normalization=True,
        optim_critic_iters=cfg["critic_iters"],
        repeat=cfg["repeat"],
        batch_size=None,
        hidden_sizes=(64, 64),
        activation="tanh",
    )
    if mujoco:
        common.update(init_gain=math.sqrt(2), actor_output_scale=0.01, log_std_init=-0.5)
    if algo == "npg":
        agent = jaxrl.NPG(trust_region_size=0.5 if not mujoco else 0.1, **common)
    else:
        agent = jaxrl.TRPO(max_kl=0.005 if not mujoco else 0.01, **common)
    obs_space, act_space = spaces(shape)
    state = agent.init(jax.random.key(0), obs_space, act_space)
    rollout = as_batch(Rollout, data)
    update = jax.jit(agent.update)
    start = time.perf_counter()
    compiled = update.lower(state, rollout, jax.random.key(1)).compile()
    compile_seconds = time.perf_counter() - start
    box = {"state": state, "key": jax.random.key(1)}

    def step() -> None:
        box["key"], key = jax.random.split(box["key"])
        box["state"], stats = compiled(box["state"], rollout, key)
        jax.block_until_ready((box["state"], stats))

    step.reset = lambda: box.update(state=state)  # see common.alternate
    return step, compile_seconds


def jaxrl_ddpg(shape: dict[str, Any], data: dict) -> tuple[Any, float]:
    cfg = shape["ddpg"]
    mujoco = shape["obs_dim"] > 3
    agent = jaxrl.DDPG(
        hidden_sizes=cfg["hidden"],
        batch_size=cfg["batch"],
        n_step_return_horizon=cfg["n_step"],
        buffer_size=cfg["capacity"],
        actor_lr=1e-3 if mujoco else 1e-4,
        critic_lr=1e-3,
    )
    obs_space, act_space = spaces(shape)
    state = agent.init(jax.random.key(0), obs_space, act_space, cfg["num_envs"])
    buffer = agent.init_buffer(state, cfg["num_envs"])
    segment = as_batch(Transition, data)
    buffer = jax.jit(type(buffer).extend)(buffer, segment)

    def sample_and_update(state: Any, buffer: Any, key: jax.Array) -> tuple[Any, dict]:
        batch_key, update_key = jax.random.split(key)
        return agent.update(state, agent.sample_batch(buffer, batch_key), update_key)

    start = time.perf_counter()
    compiled = jax.jit(sample_and_update).lower(state, buffer, jax.random.key(1)).compile()
    compile_seconds = time.perf_counter() - start
    box = {"state": state, "key": jax.random.key(1)}

    def step() -> None:
        box["key"], key = jax.random.split(box["key"])
        box["state"], stats = compiled(box["state"], buffer, key)
        jax.block_until_ready((box["state"], stats))

    step.reset = lambda: box.update(state=state)  # see common.alternate
    return step, compile_seconds


# ------------------------------------------------------------------------------ Tianshou side
def tianshou_step(algo: str, shape: dict[str, Any], data: dict) -> Any:
    import warnings

    import tianshou_side as ts

    warnings.filterwarnings("ignore")  # TRPO's "Backtracking to step i" and DDPG's bound note
    obs_space, act_space = spaces(shape)
    mujoco = shape["obs_dim"] > 3
    if algo in ("npg", "trpo"):
        cfg = shape["on_policy"]
        algorithm = ts.make_on_policy(
            algo,
            obs_space,
            act_space,
            gamma=cfg["gamma"],
            optim_critic_iters=cfg["critic_iters"],
            trust_region_size=0.1 if mujoco else 0.5,
            max_kl=0.01 if mujoco else 0.005,
            mujoco_init=mujoco,
        )
        buffer = ts.filled_buffer(data, cfg["num_envs"] * cfg["num_steps"])
        batch_size, repeat = shape["on_policy_batch_size"], cfg["repeat"]
        return with_reset(
            lambda: ts.on_policy_update(algorithm, buffer, batch_size, repeat), algorithm
        )
    cfg = shape["ddpg"]
    algorithm = ts.make_ddpg(
        obs_space,
        act_space,
        hidden_sizes=cfg["hidden"],
        actor_lr=1e-3 if mujoco else 1e-4,
        n_step=cfg["n_step"],
    )
    buffer = ts.filled_buffer(data, cfg["capacity"])
    return with_reset(lambda: ts.off_policy_update(algorithm, buffer, cfg["batch"]), algorithm)


def with_reset(fn: Any, algorithm: Any) -> Any:
    """``fn`` with a ``reset`` that restores ``algorithm``'s initial parameters (see
    ``common.alternate``)."""
    import copy

    initial = copy.deepcopy(algorithm.state_dict())
    # Tianshou's load_state_dict consumes the dict it is given: hand it a copy each time.
    fn.reset = lambda: algorithm.load_state_dict(copy.deepcopy(initial))
    return fn


THREAD_NAMES = {1: "tianshou_1thread", 2: "tianshou_2threads"}


def with_threads(fn: Any, threads: int) -> Any:
    import torch

    def run() -> None:
        torch.set_num_threads(threads)
        fn()

    run.reset = fn.reset
    return run


# ------------------------------------------------------------------------------ main
def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=0.5, help="per repetition and side")
    parser.add_argument("--algos", nargs="+", default=None, help="default: npg trpo ddpg")
    parser.add_argument("--shapes", nargs="+", default=None, choices=list(SHAPES))
    parser.add_argument(
        "--torch-threads",
        nargs="+",
        type=int,
        default=[2, 1],
        help="Tianshou contestants, one per torch thread count",
    )
    args = parser.parse_args()
    if args.quick:
        args.repetitions, args.seconds = 3, 0.05
    if args.algos is None:
        args.algos = ["trpo", "ddpg"] if args.quick else ["npg", "trpo", "ddpg"]
    if args.shapes is None:
        args.shapes = ["pendulum"] if args.quick else list(SHAPES)
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    tianshou = use_tianshou(args)
    if tianshou:
        import common

        common.setup_torch()

    rows: list[dict[str, Any]] = []
    for shape_name in args.shapes:
        shape = SHAPES[shape_name]
        for algo in args.algos:
            if algo == "ddpg":
                cfg = shape["ddpg"]
                steps = cfg["capacity"] // cfg["num_envs"]
                data = synthetic(steps, cfg["num_envs"], shape["obs_dim"], shape["act_dim"], 0)
                jax_step, compile_seconds = jaxrl_ddpg(shape, data)
            else:
                cfg = shape["on_policy"]
                data = synthetic(
                    cfg["num_steps"], cfg["num_envs"], shape["obs_dim"], shape["act_dim"], 0
                )
                jax_step, compile_seconds = jaxrl_on_policy(algo, shape, data)
            contestants = {"jaxrl": jax_step}
            if tianshou:
                torch_step = tianshou_step(algo, shape, data)
                for threads in args.torch_threads:
                    contestants[THREAD_NAMES[threads]] = with_threads(torch_step, threads)
            for fn in contestants.values():  # warm-up
                for _ in range(2):
                    fn()
            calls = {name: calls_for(fn, args.seconds) for name, fn in contestants.items()}
            load_before = loadavg()
            samples = alternate(contestants, args.repetitions, calls)
            row: dict[str, Any] = {
                "shape": shape_name,
                "algo": algo,
                "jaxrl_compile_s": compile_seconds,
                "loadavg_before": load_before,
                "loadavg_after": loadavg(),
            }
            for name, values in samples.items():
                stats = summarize(values)
                row.update({f"{name}_{k}": v for k, v in stats.items()})
                row[f"{name}_samples"] = values
            ts_names = [n for n in samples if n.startswith("tianshou")]
            if ts_names:
                best = min(row[f"{n}_median"] for n in ts_names)
                row["speedup_vs_best"] = best / row["jaxrl_median"]
                for n in ts_names:
                    row[f"speedup_vs_{n}"] = row[f"{n}_median"] / row["jaxrl_median"]
            rows.append(row)
            print(
                f"{shape_name:8s} {algo:4s} jaxrl {fmt_ms(row['jaxrl_median'])} ms"
                + "".join(
                    f" | {n} {fmt_ms(row[n + '_median'])} ms (x{row['speedup_vs_' + n]:.1f})"
                    for n in ts_names
                )
                + f" | load {row['loadavg_after'][0]:.2f}",
                flush=True,
            )

    ts_names = [THREAD_NAMES[t] for t in args.torch_threads] if tianshou else []
    headers = ["shape", "algo", "jaxrl ms (q1-q3)", "compile s"]
    headers += [f"Tianshou {n.split('_')[1]} ms (q1-q3)" for n in ts_names]
    headers += ["speed-up vs " + n.split("_")[1] for n in ts_names]
    headers += ["load avg"]
    table_rows = []
    for r in rows:
        line = [
            r["shape"],
            r["algo"].upper(),
            f"{fmt_ms(r['jaxrl_median'])} ({fmt_ms(r['jaxrl_q1'])}-{fmt_ms(r['jaxrl_q3'])})",
            f"{r['jaxrl_compile_s']:.1f}",
        ]
        for name in ts_names:
            line.append(
                f"{fmt_ms(r[name + '_median'])} "
                f"({fmt_ms(r[name + '_q1'])}-{fmt_ms(r[name + '_q3'])})"
            )
        line += [f"x{r['speedup_vs_' + name]:.1f}" for name in ts_names]
        line.append(f"{r['loadavg_before'][0]:.1f}-{r['loadavg_after'][0]:.1f}")
        table_rows.append(line)
    table = markdown_table(headers, table_rows)
    print()
    print(table)
    if ts_names:
        print("\nspeed-up: Tianshou median / jaxrl median (> 1: jaxrl is faster).")
    write_json(
        out / "update_latency.json",
        {
            "command": command_line(),
            "machine": {**info, "loadavg_end": loadavg()},
            "repetitions": args.repetitions,
            "seconds_per_repetition": args.seconds,
            "rows": rows,
            "table": table,
        },
    )
    write_csv(
        out / "update_latency.csv",
        [{k: v for k, v in r.items() if not k.endswith("_samples")} for r in rows],
    )
    plot(rows, out, ts_names)


def plot(rows: list[dict[str, Any]], out: Any, ts_names: list[str]) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = ["jaxrl", *ts_names]
    labels = {
        "jaxrl": "jaxrl (jit)",
        "tianshou_2threads": "Tianshou, 2 threads",
        "tianshou_1thread": "Tianshou, 1 thread",
    }
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(names)
    x = np.arange(len(rows))
    for i, name in enumerate(names):
        med = np.array([r[f"{name}_median"] for r in rows]) * 1e3
        low = med - np.array([r[f"{name}_q1"] for r in rows]) * 1e3
        high = np.array([r[f"{name}_q3"] for r in rows]) * 1e3 - med
        ax.bar(x + i * width, med, width, yerr=[low, high], label=labels[name], capsize=2)
    ax.set_xticks(x + width * (len(names) - 1) / 2)
    ax.set_xticklabels([f"{r['algo'].upper()}\n{r['shape']}" for r in rows])
    ax.set_ylabel("ms per update (median, quartiles)")
    ax.set_yscale("log")
    ax.set_title("One learning step: jaxrl vs Tianshou (2-core CPU)")
    ax.legend()
    save_figure(plt, fig, out / "update_latency.png")


if __name__ == "__main__":
    main()

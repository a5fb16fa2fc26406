"""The roofline's host-driver row: one DDPG step of ``HostLoop`` (``mujoco`` preset, updates
from the first step), timed as the driver runs it and split into the environment and the two
jitted calls (observe; add, update and act), each analysed as ``roofline.py`` analyses a
program.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from common import calls_for, loadavg, mujoco_available, summarize
from roofline_hlo import analyse_compiled
from roofline_peaks import derived


def host_env(choice: str, quick: bool) -> tuple[str, str]:
    """``(env_id, env_backend)`` of the host step."""
    if choice != "auto":
        return choice, "auto"
    if quick or not mujoco_available():
        return "Pendulum-v1", "gymnasium"
    return "Hopper-v5", "auto"


def host_step_rows(peaks: dict[str, Any], args: Any) -> list[dict[str, Any]]:
    """One DDPG step of the host driver (``mujoco`` preset, updates from the first step),
    timed as the driver runs it and split into the environment and the two jitted calls."""
    from jaxrl.config.run_config import RunConfig
    from jaxrl.envs.host import resolve_env_backend
    from jaxrl.training import gymnasium_driver
    from jaxrl.training.gymnasium_driver import HostLoop

    env_id, env_backend = host_env(args.host_env, args.quick)
    capacity = 10_000 if args.quick else 1_000_000
    config = RunConfig.from_preset(
        "ddpg", env_id, "mujoco", hyperparameters={"warmup_steps": 0, "buffer_size": capacity}
    )
    agent = config.make_agent()
    backend = resolve_env_backend(env_id, env_backend)
    load_before = loadavg()
    rows = []
    settings = dataclasses.replace(config, seed=0, num_seeds=1, env_backend=env_backend)
    with HostLoop(agent, env_id, settings) as loop:
        carry = jax.tree_util.tree_map(jnp.copy, loop.start(loop.init(), 0))
        programs = loop._programs
        raw = gymnasium_driver.split_seeds(loop.env.reset(), 1)
        carry, loop._sample, loop._obs, _ = programs.observe_and_act(carry, raw, raw, 0)
        captured: dict[str, Any] = {}
        # One env step per collection: each step observes, then learns and acts.
        originals = {"observe": programs._observe_seeds, "learn": programs.learn}
        split: dict[str, list[float]] = {"observe": [], "learn": []}

        def spec(tree: Any) -> Any:
            return jax.tree_util.tree_map(
                lambda x: (
                    jax.ShapeDtypeStruct(np.shape(x), x.dtype)
                    if hasattr(x, "dtype") and hasattr(x, "shape")
                    else x
                ),
                tree,
            )

        def timed(name: str) -> Callable[..., Any]:
            def call(*a: Any) -> Any:
                captured.setdefault(name, spec(a))
                start = time.perf_counter()
                out = jax.block_until_ready(originals[name](*a))
                split[name].append(time.perf_counter() - start)
                return out

            return call

        box = {"carry": carry}

        def steps(count: int) -> None:
            for _ in range(count):
                box["carry"], _ = loop._collect_and_learn(box["carry"])
            jax.block_until_ready(box["carry"])

        start = time.perf_counter()
        steps(5)  # compile both programs and warm up
        first_steps_s = time.perf_counter() - start
        per_step = calls_for(lambda: steps(10), args.seconds) * 10
        whole = []
        for _ in range(args.repetitions):
            start = time.perf_counter()
            steps(per_step)
            whole.append((time.perf_counter() - start) / per_step)
        # The same steps with each jitted call blocked and timed: the step's parts.
        programs._observe_seeds, programs.learn = timed("observe"), timed("learn")
        blocked = []
        for _ in range(args.repetitions):
            split["observe"].clear()
            split["learn"].clear()
            start = time.perf_counter()
            steps(per_step)
            blocked.append((time.perf_counter() - start) / per_step)
            split.setdefault("observe_reps", []).append(float(np.mean(split["observe"])))
            split.setdefault("learn_reps", []).append(float(np.mean(split["learn"])))
        programs._observe_seeds, programs.learn = originals["observe"], originals["learn"]

    # The driver's programs as they were compiled (from the arguments of their first call;
    # learn passes the seeds' keys to its program).
    lowered = {
        "observe": programs._observe_seeds.lower(*captured["observe"]),
        "learn": programs.learn.func.lower(*programs.learn.args, *captured["learn"]),
    }
    analyses = {name: analyse_compiled(lower.compile(), {}) for name, lower in lowered.items()}
    timing = {
        "step": summarize(whole),
        "step_blocked": summarize(blocked),
        "observe": summarize(split["observe_reps"]),
        "learn": summarize(split["learn_reps"]),
    }
    env_s = (
        timing["step_blocked"]["median"] - timing["observe"]["median"] - timing["learn"]["median"]
    )
    where = (
        f"{env_id} ({backend}), mujoco preset DDPG (hidden {list(agent.hidden_sizes)}, "
        f"batch {agent.batch_size}), 1 env, 1 update per env step, {capacity:,}-transition buffer"
    )
    parts = {
        "ddpg-host-step": (
            timing["step"],
            ("observe", "learn"),
            f"HostLoop._collect_and_learn, one env step + observe + add + update + act, "
            f"as the driver runs it; {where}; with each jitted call blocked: "
            f"{timing['step_blocked']['median'] * 1e3:.2f} ms = env and host "
            f"{env_s * 1e3:.2f} + observe {timing['observe']['median'] * 1e3:.2f} + learn "
            f"{timing['learn']['median'] * 1e3:.2f} ms",
        ),
        "ddpg-host-observe": (
            timing["observe"],
            ("observe",),
            f"the step's jitted observe (the observations as the agent sees them), blocked; "
            f"{where}",
        ),
        "ddpg-host-learn": (
            timing["learn"],
            ("learn",),
            f"the step's jitted add_and_learn (add to buffer, sample, update, act with the "
            f"updated policy), blocked; {where}",
        ),
    }
    summed = (
        "flops",
        "bytes",
        "transcendentals",
        "xla_flops_once",
        "xla_bytes_once",
        "ops",
        "dot_flops",
        "hlo_ops",
        "hlo_fusions",
        "hlo_while_loops",
        "loops_unknown_trips",
        "gather_overcount_bytes",
    )
    for name, (stats, which, notes) in parts.items():
        row = {
            "program": name,
            "group": "host",
            "algo": "ddpg",
            "shape": "mujoco",
            "time_median_s": stats["median"],
            "time_q1_s": stats["q1"],
            "time_q3_s": stats["q3"],
            "repetitions": stats["n"],
            "calls_per_repetition": per_step,
            "compile_s": None,  # compiled inside the driver's first steps
            "first_5_steps_s": first_steps_s,
            **{k: sum(analyses[w].get(k, 0.0) for w in which) for k in summed},
            "data_dependent_trips": {},
            "loops": [loop for w in which for loop in analyses[w]["loops"]],
            "notes": notes,
            "env_id": env_id,
            "env_backend": backend,
            "env_and_host_s": env_s,
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
        }
        row.update(derived(row, peaks))
        rows.append(row)
    return rows

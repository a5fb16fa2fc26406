"""``host_throughput.py --vs-raw``: how close the ``mujoco`` preset's TRPO run on the host driver
comes to its environments' own speed (raw stepping with random actions), and what bounds it
(the breakdown of :mod:`host_breakdown`); each part in a fresh process (``host_throughput.py
--child``). ``host_throughput.py`` says what is measured.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from common import BENCH_DIR, child_record, command_line, loadavg, markdown_table, write_json
from host_breakdown import GROUPS, PARTS, breakdown
from host_run import PRESET, measure

RAW_WARMUP_STEPS = 16  # vector steps before the clock starts
RAW_ACTION_BATCHES = 64  # distinct random action batches, cycled
TARGET_RATIO = 0.75  # issue 30: the run at >= 75% of raw EnvPool stepping


def preset_shape(env_id: str) -> dict[str, int]:
    """The ``mujoco`` preset's TRPO run shape: envs per seed, steps per collection, and
    env steps per seed between evaluations."""
    from jaxrl.config.run_config import RunConfig

    config = RunConfig.from_preset("trpo", env_id, PRESET)
    return {
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "eval_every": config.eval_every,
    }


def run_backend(env_id: str) -> str:
    """The backend the host driver picks for ``env_id`` (EnvPool for its MuJoCo ids)."""
    from jaxrl.envs.host import resolve_env_backend

    return resolve_env_backend(env_id, "auto")


def _threads(num_envs: int) -> int:
    """EnvPool's threads for a pool of ``num_envs``, as ``jaxrl.envs.host`` chooses them."""
    return min(num_envs, os.cpu_count() or 1)


def _raw_batch(
    env_id: str, backend: str, num_envs: int, seed: int
) -> tuple[Any, Callable[[np.ndarray], Any], Callable[[], None]]:
    """``num_envs`` environments made as jaxrl's adapter makes them (same threads, seeds),
    stepped without it: ``(action space, step, close)``. EnvPool and gymnasium's vector env
    reset ended episodes by themselves, on the next step."""
    if backend == "envpool":
        import envpool

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*precision lowered.*")
            pool = envpool.make(
                env_id,
                env_type="gymnasium",
                num_envs=num_envs,
                num_threads=_threads(num_envs),
                seed=seed,
            )
        pool.reset()
        return pool.action_space, pool.step, pool.close
    import gymnasium as gym

    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    envs.reset(seed=seed)
    return envs.single_action_space, envs.step, envs.close


def _random_actions(space: Any, num_envs: int, seed: int) -> list[np.ndarray]:
    """``RAW_ACTION_BATCHES`` batches of ``num_envs`` uniformly random actions."""
    from gymnasium.vector.utils import batch_space

    batched = batch_space(space, num_envs)
    batched.seed(seed)
    return [np.asarray(batched.sample()) for _ in range(RAW_ACTION_BATCHES)]


def raw_stepping(
    env_id: str, backend: str, num_seeds: int, num_envs: int, env_steps: int, layout: str
) -> dict[str, Any]:
    """Env steps/s of the run's environments stepped with random actions, nothing else.

    ``layout``: ``"one pool"`` (all seeds' environments in one pool, as the host driver
    makes them), ``"per seed"`` (a pool of ``num_envs`` per seed, stepped one after
    another) or ``"adapter"`` (the one pool through jaxrl's adapter and
    :func:`jaxrl.envs.host.checked_step`, as the driver steps it)."""
    from jaxrl.envs.host import checked_step, make_host_env, seed_block

    seeds = list(range(num_seeds))
    total = num_seeds * num_envs
    steppers: list[tuple[Callable[[np.ndarray], Any], list[np.ndarray]]] = []
    closers: list[Callable[[], None]] = []
    if layout == "adapter":
        env = make_host_env(env_id, total, seed_block(seeds, num_envs), backend)
        env.reset()
        actions = _random_actions(env.single_action_space, total, 0)
        steppers.append((lambda action: checked_step(env, 0, action), actions))
        closers.append(env.close)
        pools, envs_per_pool = 1, total
    else:
        groups = [seeds] if layout == "one pool" else [[s] for s in seeds]
        for group in groups:
            count = len(group) * num_envs
            space, step, close = _raw_batch(env_id, backend, count, seed_block(group, num_envs))
            steppers.append((step, _random_actions(space, count, group[0])))
            closers.append(close)
        pools, envs_per_pool = len(groups), total // len(groups)
    vector_steps = max(1, env_steps // total)
    try:
        for t in range(RAW_WARMUP_STEPS + vector_steps):
            if t == RAW_WARMUP_STEPS:
                wall, cpu = time.perf_counter(), time.process_time()
            for step, actions in steppers:
                step(actions[t % RAW_ACTION_BATCHES])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        for close in closers:
            close()
    timed = vector_steps * total
    return {
        "part": "raw",
        "layout": layout,
        "env": env_id,
        "backend": backend,
        "num_seeds": num_seeds,
        "num_envs": total,
        "pools": pools,
        "envs_per_pool": envs_per_pool,
        "threads_per_pool": _threads(envs_per_pool) if backend == "envpool" else 1,
        "env_steps": timed,
        "seconds": wall,
        "cpu_seconds": cpu,
        "env_steps_per_s": timed / wall,
        "us_per_env_step": 1e6 * wall / timed,
        "cores_busy": cpu / wall,
        "loadavg": loadavg(),
    }


def child(part: str, **kwargs: Any) -> dict[str, Any]:
    """One part of ``--vs-raw`` in this process: its record."""
    if part == "raw":
        return raw_stepping(**kwargs)
    if part == "run":
        return {"part": "run", **measure(**kwargs)}
    return breakdown(**kwargs)


def run_part(args: Any, part: str, **kwargs: Any) -> dict[str, Any]:
    """One part's record: in a fresh process, or in this one for ``--quick``."""
    if args.quick:
        return child(part, **kwargs)
    script = BENCH_DIR / "host_throughput.py"
    command = [sys.executable, str(script), "--child", json.dumps({"part": part, **kwargs})]
    return child_record(command, f"the {part} part")[0]


def bound_sentence(
    cores: int, raw: dict[str, Any], run: dict[str, Any], parts: dict[str, Any]
) -> dict[str, Any]:
    """The ratio run / raw and what bounds it, as numbers and one sentence."""
    raw_us, run_us = raw["us_per_env_step"], 1e6 / run["env_steps_per_s"]
    ratio = raw_us / run_us
    wall, cpu = parts["us_per_env_step"], parts["cpu_us_per_env_step"]
    groups = {g: sum(wall[k] for k, _, group in PARTS if group == g) for g in GROUPS}
    timed_us = sum(groups.values())
    cpu_us = sum(cpu.values())
    others = {g: v for g, v in groups.items() if g != "physics"}
    largest = max(others, key=others.__getitem__)
    # Perfect overlap: no faster than raw stepping, nor than the run's CPU time spread over
    # every core.
    overlap_us = max(raw_us, cpu_us / cores)
    budget_us = raw_us / TARGET_RATIO - groups["physics"]
    # The untimed run less its evaluations' share in the timed run (an estimate).
    eval_share = sum(parts["share"][k] for k, _, group in PARTS if group == "evaluation")
    without_eval_us = run_us * (1 - eval_share)
    numbers = {
        "ratio": ratio,
        "ratio_without_evaluation": raw_us / without_eval_us,
        "raw_us_per_env_step": raw_us,
        "run_us_per_env_step": run_us,
        "timed_run_us_per_env_step": timed_us,
        "groups_us_per_env_step": groups,
        "cpu_us_per_env_step": cpu_us,
        "perfect_overlap_us_per_env_step": overlap_us,
        "perfect_overlap_ratio": raw_us / overlap_us,
        "largest_besides_physics": largest,
        "serial_budget_besides_physics_us": budget_us,
    }
    terms = " + ".join(f"{g} {v:.1f}" for g, v in groups.items())
    numbers["sentence"] = (
        f"{cores} cores: {terms} = {timed_us:.1f} us per env step in the timed run (the "
        f"untimed run: {run_us:.1f}; raw stepping: {raw_us:.1f}), so the run reaches "
        f"{ratio:.0%} of raw ({raw_us / without_eval_us:.0%} without its evaluations); the "
        f"largest part besides physics is {largest} ({groups[largest]:.1f} us, "
        f"{groups[largest] / timed_us:.0%}). With perfect overlap (the run's CPU time, "
        f"{cpu_us:.1f} us per env step, over {cores} cores, and no faster than raw) the bound "
        f"is {raw_us / overlap_us:.0%} of raw; {TARGET_RATIO:.0%} of raw without overlap "
        f"leaves {budget_us:.1f} us per env step for everything but physics (now "
        f"{timed_us - groups['physics']:.1f})."
    )
    return numbers


def _details(parts: dict[str, Any], raw_us: float) -> list[str]:
    """The breakdown's counts and probes, one line each."""
    us, probe = parts["us_per_env_step"], parts["probe_us_per_call"]
    vector_steps = max(parts["vector_steps"], 1)
    eval_steps = parts["eval_env_steps"]
    carry_us = probe["jit_carry_identity"] - probe["jit_dispatch_floor"]
    resets = (
        f"same-step resets (an extra pool call, {parts['us_per_same_step_reset']:.0f} us "
        f"each) on {parts['same_step_resets'] / vector_steps:.0%} of the run's vector steps"
        if parts["same_step_resets"]
        else "same-step resets: no extra pool call (none ended, or the backend resets in its step)"
    )
    return [
        f"physics: {us['physics']:.1f} us per env step in the run, {raw_us:.1f} raw",
        resets,
        f"acting: {parts['us_per_acting_call']:.0f} us per call for {parts['num_envs']} envs "
        "in the run (each after an env step); probe, back-to-back calls: "
        f"{probe['act_numpy_inputs']:.0f} us with the driver's NumPy observations, "
        f"{probe['act_device_inputs']:.0f} us with them on the device; a jitted identity of "
        f"the carry (agent state and statistics, donated) {probe['jit_carry_identity']:.0f} "
        f"us against {probe['jit_dispatch_floor']:.0f} us for x + 1: passing the carry costs "
        f"about {carry_us:.0f} us per step ({carry_us / parts['num_envs']:.2f} us per env step)",
        f"learning: {parts['ms_per_update']:.1f} ms per update of all seeds "
        f"({parts['collections']} updates timed)",
        f"evaluation: {parts['evaluations']} evaluations, {eval_steps:,} env steps "
        f"({eval_steps / max(parts['env_steps_timed'], 1):.0%} of the training env steps; "
        f"{parts['eval_env_steps_after_end'] / max(eval_steps, 1):.0%} of them in environments "
        "whose episode had ended)",
    ]


def _print_raw(label: str, row: dict[str, Any]) -> None:
    print(
        f"{label:58s} {row['env_steps_per_s']:9,.0f} env steps/s ({row['us_per_env_step']:.1f} "
        f"us per env step, {row['cores_busy']:.1f} cores busy), load {row['loadavg'][0]:.1f}",
        flush=True,
    )


def vs_raw(args: Any, out: Any, info: dict[str, Any]) -> None:
    """``--vs-raw``: raw stepping, the run and its breakdown, side by side, per seed count."""
    backend = run_backend(args.env)
    shape = preset_shape(args.env)
    eval_every = args.eval_every or shape["eval_every"]
    steps = args.steps or 5 * eval_every
    num_envs = shape["num_envs"]
    results: list[dict[str, Any]] = []
    for seeds in args.seeds:
        total = seeds * num_envs
        raw_kwargs = {
            "env_id": args.env,
            "backend": backend,
            "num_seeds": seeds,
            "num_envs": num_envs,
            "env_steps": args.raw_steps,
        }
        run_kwargs = {
            "env_id": args.env,
            "backend": backend,
            "num_seeds": seeds,
            "steps": steps,
            "eval_every": eval_every,
        }
        print(
            f"\n{args.env}, {backend}, {seeds} seeds x {num_envs} envs = {total} envs; TRPO "
            f"({PRESET} preset) for {steps:,} env steps per seed, evaluation every "
            f"{eval_every:,}; raw stepping for {args.raw_steps:,} env steps",
            flush=True,
        )
        raw: dict[str, dict[str, Any]] = {}
        labels = {
            "one pool": f"raw: one pool of {total} (the driver's), before",
            "per seed": f"raw: {seeds} pools of {num_envs}, one after another",
            "adapter": f"raw through jaxrl's adapter + checked_step, one pool of {total}",
        }
        for layout, label in labels.items():
            raw[layout] = run_part(args, "raw", layout=layout, **raw_kwargs)
            _print_raw(label, raw[layout])
        run = run_part(args, "run", **run_kwargs)
        print(
            f"{'TRPO run':58s} {run['env_steps_per_s']:9,.0f} env steps/s (first period "
            f"{run['first_period_s']:.1f} s), load {run['loadavg'][0]:.1f}",
            flush=True,
        )
        parts = run_part(args, "breakdown", **run_kwargs)
        print(
            f"{'TRPO run with timers':58s} {parts['env_steps_per_s']:9,.0f} env steps/s "
            f"(first period {parts['first_period_s']:.1f} s), load {parts['loadavg'][0]:.1f}",
            flush=True,
        )
        raw["one pool, after"] = run_part(args, "raw", layout="one pool", **raw_kwargs)
        _print_raw(f"raw: one pool of {total}, after", raw["one pool, after"])
        before, after = raw["one pool"], raw["one pool, after"]
        steps_raw = before["env_steps"] + after["env_steps"]
        seconds_raw = before["seconds"] + after["seconds"]
        reference = {  # before and after together
            "env_steps_per_s": steps_raw / seconds_raw,
            "us_per_env_step": 1e6 * seconds_raw / steps_raw,
        }
        bound = bound_sentence(info["cores"], reference, run, parts)
        us, cpu_us, share = parts["us_per_env_step"], parts["cpu_us_per_env_step"], parts["share"]
        table = markdown_table(
            ["part", "us per env step", "share", "CPU us per env step", "cores busy"],
            [
                [
                    label,
                    f"{us[key]:.2f}",
                    f"{share[key]:.1%}",
                    f"{cpu_us[key]:.2f}",
                    f"{cpu_us[key] / us[key]:.2f}" if us[key] > 0 else "-",
                ]
                for key, label, _ in PARTS
            ]
            + [
                [
                    "**the timed run**",
                    f"{sum(us.values()):.2f}",
                    f"{sum(share.values()):.1%}",
                    f"{sum(cpu_us.values()):.2f}",
                    f"{sum(cpu_us.values()) / sum(us.values()):.2f}",
                ],
                ["raw stepping, one pool (before and after together)",
                 f"{reference['us_per_env_step']:.2f}", "-", "-", "-"],
            ],
        )  # fmt: skip
        details = _details(parts, reference["us_per_env_step"])
        print()
        print(table)
        print()
        print("\n".join(details))
        print(
            f"run / raw = {run['env_steps_per_s']:,.0f} / {reference['env_steps_per_s']:,.0f} "
            f"= {bound['ratio']:.1%} (target {TARGET_RATIO:.0%})"
        )
        print(bound["sentence"], flush=True)
        results.append(
            {
                "num_seeds": seeds,
                "num_envs": total,
                "raw": raw,
                "run": run,
                "breakdown": parts,
                "details": details,
                **bound,
            }
        )
    write_json(
        out / "host_throughput_vs_raw.json",
        {
            "machine": info,
            "command": command_line(),
            "env": args.env,
            "backend": backend,
            "preset": PRESET,
            "steps_per_seed": steps,
            "eval_every": eval_every,
            "raw_steps": args.raw_steps,
            "parts": {key: label for key, label, _ in PARTS},
            "results": results,
        },
    )

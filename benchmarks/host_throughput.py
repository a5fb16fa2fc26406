"""Host-driver training throughput on MuJoCo: gymnasium vs EnvPool, one seed vs many; and
a run against raw EnvPool stepping with where its time goes (``--vs-raw``).

The same TRPO run (jaxrl's ``mujoco`` preset: Tianshou's MuJoCo settings, 16 envs x 64 steps
per update, observation normalization) on Hopper-v5, measured side by side in one process
per configuration, one after another:

- ``gymnasium x 1``: the path every MuJoCo run took before EnvPool and multi-seed training
  (gymnasium's vector env, one seed per process);
- ``envpool x 1``, ``gymnasium x S``, ``envpool x S``: EnvPool, and S seeds vmapped.

Throughput is env steps per second summed over the seeds, training and evaluation included
(evaluation every ``--eval-every`` steps, 10 episodes per seed), over the periods after the
first one (which holds the compilation); the first period's time is reported apart.

    python benchmarks/host_throughput.py                # Hopper-v5, 1 and 4 seeds
    python benchmarks/host_throughput.py --seeds 1 4 8 --steps 65536
    python benchmarks/host_throughput.py --quick        # CI smoke run

``--vs-raw``: how close the run comes to its environments' own speed, and what bounds it.
For each S of ``--seeds`` (default 4), the ``mujoco`` preset's TRPO on the host driver with
EnvPool (``--eval-every`` defaults to the preset's 25,600 env steps per seed, ``--steps`` to
5 periods), side by side, each part in a fresh process:

1. raw stepping of the same environments with uniformly random actions (drawn before the
   clock starts), ``--raw-steps`` env steps in all: one EnvPool of S x 16 envs with the
   driver's threads and environment seeds (the host driver steps every seed's environments
   in one pool; this is the ratio's denominator, measured before and after the run); for
   reference, S pools of 16 stepped one after another (a pool per seed), and the one pool
   through jaxrl's adapter (``jaxrl.envs.host.checked_step``: same-step auto-reset, checks);
2. the TRPO run, as above: env steps/s over the periods after the first;
3. the same run again with timers where each part happens (the driver's own objects,
   wrapped: EnvPool's step and reset calls, the adapter, the checks, the jitted acting
   call, the copy of the actions back, the driver's per-step Python, the jitted update of
   all seeds, the evaluation's environments, stepping and acting), every jitted call
   waited for (``block_until_ready``); wall and CPU time (all the process's threads) per
   env step and as a share of the periods after the first. After the run, a probe of
   back-to-back acting calls: with the driver's NumPy observations and with them already on
   the device (the difference is the host->device copy's share of the acting call), and
   the cost of passing the carry (agent state, statistics) through a jitted call;
4. the ratio run / raw, the breakdown, and a sentence naming what bounds the ratio,
   printed and written to ``host_throughput_vs_raw.json`` in the output folder.

    python benchmarks/host_throughput.py --vs-raw                 # Hopper-v5, 4 seeds
    python benchmarks/host_throughput.py --vs-raw --seeds 4 --steps 256000 --raw-steps 524288
    python benchmarks/host_throughput.py --vs-raw --quick         # CI smoke run
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from common import (
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    write_json,
)


def measure(env_id: str, backend: str, num_seeds: int, steps: int, eval_every: int) -> dict:
    """One configuration, in this process."""
    from jaxrl.config.run_config import RunConfig
    from jaxrl.training.gymnasium_driver import train_gymnasium

    config = RunConfig.from_preset(
        "trpo",
        env_id,
        "mujoco",
        total_steps=steps,
        eval_every=eval_every,
        num_seeds=num_seeds,
        env_backend=backend,
    )
    marks: list[tuple[int, float]] = []
    start = time.perf_counter()
    train_gymnasium(
        config.make_agent(),
        env_id,
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=steps,
        eval_every=eval_every,
        eval_episodes=10,
        num_seeds=num_seeds,
        normalize_obs=True,
        env_backend=backend,
        progress=lambda info: marks.append((info["env_steps"], time.perf_counter())),
    )
    total = time.perf_counter() - start
    (first_steps, first_time), (last_steps, last_time) = marks[0], marks[-1]
    return {
        "env": env_id,
        "backend": backend,
        "num_seeds": num_seeds,
        "env_steps_per_seed": last_steps,
        "first_period_s": first_time - start,
        "seconds": total,
        "env_steps_per_s": num_seeds * (last_steps - first_steps) / (last_time - first_time),
        "env_steps_per_s_incl_compile": num_seeds * last_steps / total,
        "loadavg": loadavg(),
    }


def run_configuration(args: Any, backend: str, seeds: int) -> dict:
    """One configuration's record: in a fresh process (no compilation cache or warm state
    shared), or in this one for ``--quick`` (a smoke run, not a measurement)."""
    if args.quick:
        return measure(args.env, backend, seeds, args.steps, args.eval_every)
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--env",
            args.env,
            "--eval-every",
            str(args.eval_every),
            "--one",
            backend,
            str(seeds),
            str(args.steps),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ --vs-raw
PRESET = "mujoco"
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


class PartTimer:
    """Inclusive wall and CPU seconds (CPU: all of the process's threads) and calls, per
    name; :meth:`clear` forgets them (after the first period, which holds compilation)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def clear(self) -> None:
        self.wall.clear()
        self.cpu.clear()
        self.calls.clear()

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.process_time() - cpu
            self.calls[name] += 1

    def wrap(self, name: str, fn: Callable[..., Any], wait: bool = False) -> Callable[..., Any]:
        """``fn`` timed under ``name``; with ``wait``, its result waited for (a jitted
        call returns before its work is done)."""
        import jax

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.part(name):
                out = fn(*args, **kwargs)
                return jax.block_until_ready(out) if wait else out

        return timed


class _TimedBatch:
    """An environment batch (EnvPool's pool, gymnasium's vector env) whose ``step`` and
    ``reset`` calls are timed; everything else passes through."""

    def __init__(self, inner: Any, timer: PartTimer) -> None:
        self._inner = inner
        self.step = timer.wrap("batch.step", inner.step)
        self.reset = timer.wrap("batch.reset", inner.reset)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# The breakdown's parts: (key, label, group); each part's time is exclusive (:func:`_parts`).
PARTS: tuple[tuple[str, str, str], ...] = (
    ("physics", "env: the pool's step (physics; EnvPool: its C++ threads)", "physics"),
    ("reset", "env: same-step reset of ended episodes (an extra pool call)", "env adapter"),
    ("adapter", "env: adapter (action cast, observation copies)", "env adapter"),
    ("checks", "env: checked_step (shapes, finiteness, dtype casts)", "env adapter"),
    ("h2d", "copies host->device: observations (probe estimate)", "acting"),
    ("acting", "acting: jitted observe_and_act of all seeds (last step: observe)", "acting"),
    ("d2h", "copy device->host: actions (and host_step's glue)", "acting"),
    ("bookkeeping", "driver Python per step: rollout lists, episode returns", "driver Python"),
    ("learning", "learning: jitted update of all seeds, then acting (stacking in it)", "learning"),
    ("eval_envs", "evaluation: making and closing its environments", "evaluation"),
    ("eval_physics", "evaluation: env stepping (its steps not counted)", "evaluation"),
    ("eval_rest", "evaluation: acting and its loop", "evaluation"),
    ("period", "driver Python per period: carry copy, metrics", "driver Python"),
)
GROUPS = ("physics", "env adapter", "acting", "learning", "evaluation", "driver Python")
PROBE_CALLS = 20  # acting calls per timed block of the copy probe
PROBE_REPETITIONS = 10


def _parts(inclusive: dict[str, float], copy_share: float) -> dict[str, float]:
    """Exclusive seconds of each part of :data:`PARTS` from the timers' inclusive ones;
    ``copy_share``: the share of the acting call that converts its NumPy inputs."""
    t = defaultdict(float, inclusive)
    return {
        "physics": t["batch.step"],
        "reset": t["batch.reset"],
        "adapter": t["env.step"] - t["batch.step"] - t["batch.reset"],
        "checks": t["checked_step"] - t["env.step"],
        "h2d": copy_share * t["act"],
        "acting": (1 - copy_share) * t["act"],
        "d2h": t["host_step"] - t["checked_step"] - t["act"],
        "bookkeeping": t["collect_and_learn"] - t["host_step"] - t["learn"],
        "learning": t["learn"],
        "eval_envs": t["eval.envs"],
        "eval_physics": t["eval.step"],
        "eval_rest": t["evaluate"] - t["eval.envs"] - t["eval.step"],
        "period": t["period"] - t["collect_and_learn"] - t["evaluate"],
    }


class _CountedEnv:
    """An evaluation's environments: ``step`` timed, its env steps counted, and those of
    environments whose first episode already ended (the evaluation runs until every
    environment has ended one) counted apart; ``close`` timed with the making."""

    def __init__(self, env: Any, timer: PartTimer, counts: dict[str, int]) -> None:
        self._env, self._timer, self._counts = env, timer, counts
        self._ended = np.zeros(env.num_envs, bool)

    def step(self, action: np.ndarray) -> Any:
        with self._timer.part("eval.step"):
            out = self._env.step(action)
        self._counts["eval_env_steps"] += self._env.num_envs
        self._counts["eval_env_steps_after_end"] += int(self._ended.sum())
        self._ended |= np.asarray(out.terminated) | np.asarray(out.truncated)
        return out

    def close(self) -> None:
        with self._timer.part("eval.envs"):
            self._env.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


def _probe(act: Callable[..., Any], carry: Any, raw: np.ndarray, env_steps: int) -> dict:
    """Seconds per acting call: with the driver's NumPy observations (converted by the
    call), with the same observations already on the device, and a jitted identity of the
    carry (the cost of passing and donating the agent state each step) against a jitted
    ``x + 1`` (the dispatch floor); alternating blocks, medians."""
    import jax
    import jax.numpy as jnp

    device_raw = jax.device_put(raw)
    identity = jax.jit(lambda c, x: (c, x + 1), donate_argnums=0)
    floor = jax.jit(lambda x: x + 1)
    state = {"carry": jax.tree_util.tree_map(jnp.copy, carry)}

    def numpy_inputs() -> None:
        out = act(state["carry"], raw, raw, env_steps)
        state["carry"] = jax.block_until_ready(out)[0]

    def device_inputs() -> None:
        out = act(state["carry"], device_raw, device_raw, env_steps)
        state["carry"] = jax.block_until_ready(out)[0]

    def carry_identity() -> None:
        state["carry"] = jax.block_until_ready(identity(state["carry"], device_raw))[0]

    def dispatch_floor() -> None:
        jax.block_until_ready(floor(device_raw))

    calls = {
        "act_numpy_inputs": numpy_inputs,
        "act_device_inputs": device_inputs,
        "jit_carry_identity": carry_identity,
        "jit_dispatch_floor": dispatch_floor,
    }
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for fn in calls.values():
        fn()  # compiled, warm
    for _ in range(PROBE_REPETITIONS):
        for name, fn in calls.items():
            start = time.perf_counter()
            for _ in range(PROBE_CALLS):
                fn()
            samples[name].append((time.perf_counter() - start) / PROBE_CALLS)
    return {name: float(np.median(values)) for name, values in samples.items()}


def breakdown(
    env_id: str, backend: str, num_seeds: int, steps: int, eval_every: int
) -> dict[str, Any]:
    """The run of :func:`measure` again (same agent, shape, seeds and environments; the
    driver's own :class:`HostLoop`), with every part of its loop timed where it happens
    and every jitted call waited for; the periods after the first one. The acting call's
    input conversion is not separable there: its share comes from :func:`_probe` after the
    run."""
    import jax

    from jaxrl.config.run_config import RunConfig
    from jaxrl.training import TrainConfig, env_step, evaluation
    from jaxrl.training import gymnasium_driver as driver

    config = RunConfig.from_preset(
        "trpo",
        env_id,
        PRESET,
        total_steps=steps,
        eval_every=eval_every,
        num_seeds=num_seeds,
        env_backend=backend,
    )
    shape = TrainConfig(  # what train_gymnasium builds from measure()'s keywords
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        total_steps=steps,
        eval_every=eval_every,
        eval_episodes=10,
        normalize_obs=True,
    )
    timer = PartTimer()
    counts: dict[str, int] = defaultdict(int)

    make_env = evaluation.make_host_env

    def eval_envs(*args: Any, **kwargs: Any) -> _CountedEnv:
        with timer.part("eval.envs"):
            return _CountedEnv(make_env(*args, **kwargs), timer, counts)

    patched = {
        (env_step, "checked_step"): timer.wrap("checked_step", env_step.checked_step),
        (driver, "host_step"): timer.wrap("host_step", driver.host_step),
        (driver, "evaluate_gymnasium"): timer.wrap("evaluate", driver.evaluate_gymnasium),
        (evaluation, "make_host_env"): eval_envs,  # the evaluations' environments
    }
    originals = {key: getattr(*key) for key in patched}
    settings = dataclasses.replace(shape, seed=0, num_seeds=num_seeds, env_backend=backend)
    loop = driver.HostLoop(config.make_agent(), env_id, settings)
    carry = loop.start(loop.init(), 0)
    try:
        for (module, name), fn in patched.items():
            setattr(module, name, fn)
        env = loop.env
        inner = "_pool" if hasattr(env, "_pool") else "_envs"
        setattr(env, inner, _TimedBatch(getattr(env, inner), timer))
        env.step = timer.wrap("env.step", env.step)
        programs = loop._programs
        act = programs.observe_and_act
        programs.observe_and_act = timer.wrap("act", act, wait=True)
        programs.observe = timer.wrap("act", programs.observe, wait=True)  # a collection's last
        programs.learn = timer.wrap("learn", programs.learn, wait=True)
        loop._collect_and_learn = timer.wrap("collect_and_learn", loop._collect_and_learn)
        marks: list[int] = []
        start = time.perf_counter()
        for index, collections in enumerate(loop.layout.period_collections):
            with timer.part("period"):
                carry, metrics = loop.run_period(carry, collections)
                jax.block_until_ready(carry)
            marks.append(int(np.asarray(metrics["eval/env_steps"])[0]))
            if index == 0:
                first_period_s = time.perf_counter() - start
                timer.clear()
                counts.clear()
        space = env.single_observation_space
        raw = np.zeros((num_seeds, config.num_envs, *space.shape), space.dtype)
        probe = _probe(act, carry, raw, marks[-1] + config.num_envs)
    finally:
        for (module, name), fn in originals.items():
            setattr(module, name, fn)
        loop.close()
    env_steps = num_seeds * (marks[-1] - marks[0])
    act_call = timer.wall["act"] / max(timer.calls["act"], 1)
    copy_s = max(0.0, probe["act_numpy_inputs"] - probe["act_device_inputs"])
    copy_share = min(1.0, copy_s / act_call) if act_call > 0 else 0.0
    wall, cpu = _parts(timer.wall, copy_share), _parts(timer.cpu, copy_share)
    periods_s = timer.wall["period"]
    per_env_step = 1e6 / env_steps
    return {
        "part": "breakdown",
        "env": env_id,
        "backend": backend,
        "num_seeds": num_seeds,
        "num_envs": num_seeds * config.num_envs,
        "env_steps_per_seed": marks[-1],
        "env_steps_timed": env_steps,
        "first_period_s": first_period_s,
        "seconds": periods_s,
        "cpu_seconds": timer.cpu["period"],
        "env_steps_per_s": env_steps / periods_s,
        "us_per_env_step": {k: v * per_env_step for k, v in wall.items()},
        "cpu_us_per_env_step": {k: v * per_env_step for k, v in cpu.items()},
        "share": {k: v / periods_s for k, v in wall.items()},
        "vector_steps": timer.calls["batch.step"],
        "same_step_resets": timer.calls["batch.reset"],
        "us_per_same_step_reset": 1e6
        * timer.wall["batch.reset"]
        / max(timer.calls["batch.reset"], 1),
        "us_per_acting_call": 1e6 * act_call,
        "collections": timer.calls["learn"],
        "ms_per_update": 1e3 * timer.wall["learn"] / max(timer.calls["learn"], 1),
        "evaluations": timer.calls["evaluate"],
        "eval_env_steps": counts["eval_env_steps"],
        "eval_env_steps_after_end": counts["eval_env_steps_after_end"],
        "probe_us_per_call": {k: 1e6 * v for k, v in probe.items()},
        "loadavg": loadavg(),
    }


def _child(part: str, **kwargs: Any) -> dict[str, Any]:
    """One part of ``--vs-raw`` in this process: its record."""
    if part == "raw":
        return raw_stepping(**kwargs)
    if part == "run":
        return {"part": "run", **measure(**kwargs)}
    return breakdown(**kwargs)


def run_part(args: Any, part: str, **kwargs: Any) -> dict[str, Any]:
    """One part's record: in a fresh process, or in this one for ``--quick``."""
    if args.quick:
        return _child(part, **kwargs)
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps({"part": part, **kwargs})],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"the {part} part failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=None, help="default: 1 4; --vs-raw: 4"
    )
    parser.add_argument("--backends", nargs="+", default=["gymnasium", "envpool"])
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="env steps per seed (default 65,536; --vs-raw: 5 evaluation periods)",
    )
    parser.add_argument(
        "--eval-every",
        type=int,
        default=None,
        help="env steps per seed between evaluations (default 16,384; --vs-raw: the preset's)",
    )
    parser.add_argument(
        "--vs-raw",
        action="store_true",
        help="the mujoco preset's TRPO run against raw EnvPool stepping, with its breakdown",
    )
    parser.add_argument(
        "--raw-steps",
        type=int,
        default=64 * 4096,
        help="--vs-raw: env steps (all envs together) of each raw stepping measurement",
    )
    parser.add_argument("--one", nargs=3, metavar=("BACKEND", "SEEDS", "STEPS"), help="internal")
    parser.add_argument("--child", metavar="JSON", help="internal (--vs-raw's parts)")
    args = parser.parse_args()
    if args.child:  # a child process of --vs-raw: one part, its record as the last line
        print(json.dumps(_child(**json.loads(args.child))))
        return
    if not args.vs_raw:
        args.seeds = args.seeds or [1, 4]
        args.steps = args.steps or 4 * 16_384
        args.eval_every = args.eval_every or 16_384
    if args.one:  # a child process: one configuration, its record as the last line
        backend, seeds, steps = args.one[0], int(args.one[1]), int(args.one[2])
        print(json.dumps(measure(args.env, backend, seeds, steps, args.eval_every)))
        return
    if args.quick:
        args.env = args.env if mujoco_available() else "Pendulum-v1"
        if args.vs_raw:
            args.seeds, args.steps, args.eval_every, args.raw_steps = [2], 2048, 1024, 2048
        else:
            args.seeds, args.steps, args.eval_every = [1, 2], 2048, 1024
            args.backends = ["gymnasium"]
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    if args.vs_raw:
        args.seeds = args.seeds or [4]
        vs_raw(args, out, info)
        return
    rows: list[dict[str, Any]] = []
    for backend in args.backends:
        for seeds in args.seeds:
            row = run_configuration(args, backend, seeds)
            rows.append(row)
            print(
                f"{backend:9s} x{seeds:<3d} {row['env_steps_per_s']:8,.0f} env steps/s "
                f"({row['env_steps_per_s_incl_compile']:,.0f} incl. the first period of "
                f"{row['first_period_s']:.1f} s), load {row['loadavg'][0]:.1f}",
                flush=True,
            )
    base = next((r for r in rows if r["backend"] == "gymnasium" and r["num_seeds"] == 1), None)
    table = markdown_table(
        [
            "backend",
            "seeds",
            "env steps/s",
            "incl. first period",
            "first period (s)",
            "vs gymnasium x1",
        ],
        [
            [
                r["backend"],
                r["num_seeds"],
                f"{r['env_steps_per_s']:,.0f}",
                f"{r['env_steps_per_s_incl_compile']:,.0f}",
                f"{r['first_period_s']:.1f}",
                f"x{r['env_steps_per_s'] / base['env_steps_per_s']:.1f}" if base else "-",
            ]
            for r in rows
        ],
    )
    write_json(
        out / "host_throughput.json", {"machine": info, "command": command_line(), "rows": rows}
    )
    print()
    print(table)


if __name__ == "__main__":
    main()

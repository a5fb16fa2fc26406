"""Where the host driver's time goes (``host_throughput.py --vs-raw``): the ``mujoco`` preset's
TRPO run with timers where each part of its loop happens (the driver's own objects, wrapped:
the environments' step and reset calls, the adapter, the checks, the jitted acting call, the
copy of the actions back, the driver's per-step Python, the jitted update, the evaluation),
every jitted call waited for; wall and CPU time per part (:data:`PARTS`), and a probe of
back-to-back acting calls after the run.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from common import loadavg
from host_run import run_config


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
    """The run of :func:`host_run.measure` again (same agent, shape, seeds and
    environments; the driver's own :class:`HostLoop`), with every part of its loop timed
    where it happens and every jitted call waited for; the periods after the first one. The
    acting call's input conversion is not separable there: its share comes from
    :func:`_probe` after the run."""
    import jax

    from jaxrl.training import TrainConfig, env_step, evaluation
    from jaxrl.training import gymnasium_driver as driver

    config = run_config(env_id, backend, num_seeds, steps, eval_every)
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

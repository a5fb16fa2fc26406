"""A host-driver run's learning program: its compile (the first call) and its later calls,
and the run's wall time. Run it with PYTHONPATH at the code to measure:
  python host_run.py trpo Pendulum-v1 gymnasium 3 65536
  python host_run.py trpo Hopper-v5 envpool 4 65536
"""

import os
import sys
import time

import jax
import numpy as np

from jaxrl.io import RunConfig
from jaxrl.io.backends import train_config
from jaxrl.training import gymnasium_driver as gd

algo, env, backend, seeds, steps = sys.argv[1:6]
calls = []
collecting = []
init = gd._Programs.__init__
collect_and_learn = gd.HostTrainLoop._collect_and_learn


def timed_init(self, *args, **kwargs):
    init(self, *args, **kwargs)
    learn = self.learn

    def timed(*a):
        if calls:  # later calls as the driver makes them: not waited for
            calls.append(0.0)
            return learn(*a)
        start = time.perf_counter()
        out = learn(*a)
        jax.block_until_ready(out[0])
        calls.append(time.perf_counter() - start)
        return out

    self.learn = timed


def timed_collect_and_learn(self, carry):
    start = time.perf_counter()
    out = collect_and_learn(self, carry)
    collecting.append(time.perf_counter() - start)
    return out


gd.HostTrainLoop._collect_and_learn = timed_collect_and_learn
gd._Programs.__init__ = timed_init
config = RunConfig.from_preset(
    algo,
    env,
    backend="gymnasium",
    env_backend=backend,
    num_seeds=int(seeds),
    total_steps=int(steps),
    eval_every=int(steps) // 2,
)
start = time.perf_counter()
_, metrics = gd.train_gymnasium(
    config.make_agent(),
    env,
    train_config(config),
    seed=0,
    num_seeds=int(seeds),
    env_backend=backend,
)
wall = time.perf_counter() - start
final = np.asarray(metrics["eval/return"])[:, -1]
print(
    f"{algo} {env} {backend} {seeds} seeds x {steps}: run {wall:.1f} s; learning program: "
    f"first call (compile) {calls[0]:.2f} s; collections and their learning, evaluation "
    f"left out: {sum(collecting):.1f} s in all, {1e3 * np.median(collecting[1:]):.2f} ms "
    f"(median of {len(collecting) - 1}); final evaluation {np.round(final, 3).tolist()}; "
    f"load {os.getloadavg()[0]:.2f}"
)

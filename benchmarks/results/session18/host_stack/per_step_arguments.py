"""What a jitted program pays for taking a host collection as one argument per step.

The host driver kept each vector step's arrays (six fields: obs, action, reward, terminated,
truncated, next_obs) in lists and passed the lists to its learning program, which stacked
them inside jit: T x 6 arguments. This compiles and calls the same stacking program with
the steps as arguments, and with the six fields stacked on the host first (what the driver
does since session 18, ``jaxrl.training.collect.stack_steps``). Shapes: 3 seeds x 16
environments, Pendulum's observation and action; T = 64 (the ``mujoco`` preset's collection)
and 512 (the ``pendulum`` preset's); 1 and 8 (DDPG's collections: one vector step).
Run: python per_step_arguments.py
"""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

SEEDS, ENVS = 3, 16
SHAPES = [
    ((3,), np.float32),
    ((1,), np.float32),
    ((), np.float32),
    ((), bool),
    ((), bool),
    ((3,), np.float32),
]


def fields(steps: int) -> tuple:
    """Observations, actions and next observations on the device (the policy's outputs), the
    rest host arrays (the environment's), as the driver holds them."""
    rng = np.random.default_rng(0)
    made = [
        [rng.random((SEEDS, ENVS, *shape)).astype(dtype) for _ in range(steps)]
        for shape, dtype in SHAPES
    ]
    return tuple(
        [jnp.asarray(x) for x in field] if i in (0, 1, 5) else field for i, field in enumerate(made)
    )


def per_step(fields):  # the old learning program's first line, then a use of every field
    return [jnp.stack(f, axis=1).astype(jnp.float32).sum() for f in fields]


def stacked(fields):
    return [f.astype(jnp.float32).sum() for f in fields]


def host_stack(fields):  # first tried: the device arrays fetched together
    return tuple(np.stack(jax.device_get(f), axis=1) for f in fields)


def host_stack_each(fields):  # adopted: each array as a host array (on a CPU, no copy)
    return tuple(np.stack([np.asarray(x) for x in f], axis=1) for f in fields)


def measure(name, program, make_args, calls=200):
    args = make_args()
    start = time.perf_counter()
    compiled = jax.jit(program).lower(args).compile()
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(calls):
        begin = time.perf_counter()
        jax.block_until_ready(compiled(make_args()))  # the stacking counted in each call
        times.append(time.perf_counter() - begin)
    per_call = 1e3 * np.median(times)
    print(f"{name:34s} lower + compile {compile_s:5.2f} s   per call {per_call:6.2f} ms")


if __name__ == "__main__":
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; load {os.getloadavg()[0]:.2f}")
    for steps in (1, 8, 64, 512):
        data = fields(steps)
        measure(f"T={steps}: {6 * steps} per-step arguments", per_step, lambda d=data: d)
        measure(f"T={steps}: 6 stacked, jax.device_get", stacked, lambda d=data: host_stack(d))
        measure(
            f"T={steps}: 6 stacked, np.asarray each", stacked, lambda d=data: host_stack_each(d)
        )

"""XLA compile time of programs whose elementwise kernels are all the same or each its own
(a different constant), RESULTS.md section 23. Run with the machine quiet:

    python benchmarks/results/session17/compile_kernels/identical_vs_distinct_kernels.py
"""

import time

import jax
import jax.numpy as jnp
from jax import lax


def chain(constants, elementwise):
    """A product followed by an elementwise kernel, once per constant."""

    def f(x, w):
        for c in constants:
            x = elementwise(x @ w, c)
        return x

    return f


def looped(constants, elementwise):
    """The same, each product and kernel inside its own 3-trip loop."""

    def f(x, w):
        for c in constants:
            x = lax.fori_loop(0, 3, lambda _, x, c=c: elementwise(x @ w, c), x)
        return x

    return f


def affine(x, c):
    return x * c + 0.5


def transcendental(x, c):
    return jnp.tanh(x) * c + jnp.sin(x) * 0.5


CASES = (
    ("60 affine kernels", chain, affine, 60),
    ("150 tanh + sin kernels", chain, transcendental, 150),
    ("40 tanh kernels, each in a loop", looped, lambda x, c: jnp.tanh(x) * c + 0.5, 40),
)


def compile_seconds(fn, x, w):
    lowered = jax.jit(fn).lower(x, w)
    start = time.perf_counter()
    lowered.compile()
    return time.perf_counter() - start


def main():
    x, w = jnp.ones((64, 64)), jnp.full((64, 64), 0.01)
    for name, build, elementwise, n in CASES:
        for _ in range(2):
            same = compile_seconds(build([1.001] * n, elementwise), x, w)
            distinct = compile_seconds(build([1 + i / 1000 for i in range(n)], elementwise), x, w)
            print(f"{name}: all the same {same:.2f} s, each its own constant {distinct:.2f} s")


if __name__ == "__main__":
    main()

"""The machine's peaks for the roofline, measured in the same run, and a program's row against them.

The peaks (``roofline.py`` explains what each is): float32 matrix products at the backend's
default precision and at "highest"; the memory bandwidth of a large copy and of a reduction;
an in-cache copy; the time per op of a chain of small dependent products; and the rate of a
product at each shape the programs' layers use (``LAYER_PRODUCTS``). :func:`derived` puts a
measured program against them and names its bound (the rule in ``roofline.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from common import markdown_table, time_call
from roofline_hlo import analyse_compiled, xla_cost_once

COMPUTE_BOUND_FRACTION = 0.5  # of the float32 matmul peak
MEMORY_BOUND_FRACTION = 0.5  # of the bandwidth peak

CACHE_COPY_ITERATIONS = 200
SMALL_PRODUCTS = 500
# The products in the programs' layers: (name, batch, rows, inner, columns); a batch of
# products, each with its own matrices, is what seeds batched with ``vmap`` make.
LAYER_PRODUCTS = (
    ("Pendulum hidden layer", 1, 2048, 64, 64),
    ("Pendulum hidden layer, 16 seeds batched", 16, 2048, 64, 64),
    ("MuJoCo hidden layer", 1, 1024, 64, 64),
    ("DDPG MuJoCo hidden layer", 1, 256, 256, 256),
)
LAYER_PRODUCT_REPEATS = 100


def measure_peaks(quick: bool, repetitions: int, seconds: float) -> dict[str, Any]:
    """The peaks of this run (see the module docstring), and two references beside them:
    ``cache_gbs``, a copy whose array stays in cache (``CACHE_COPY_ITERATIONS`` passes over it
    in one program), and ``op_overhead_us``, the time per op of a chain of ``SMALL_PRODUCTS``
    dependent 16 x 16 matrix products (each its own kernel: the cost of running an op)."""
    gpu = jax.default_backend() != "cpu"
    if gpu:
        matmul_sizes = [4096] if quick else [4096, 8192]
        memory_size = 2**26 if quick else 2**28  # 256 MiB / 1 GiB
        cache_size = 2**22  # 16 MiB: in an H100's 50 MiB L2
    else:
        matmul_sizes = [512] if quick else [1024, 2048]
        memory_size = 2**22 if quick else 2**26  # 16 MiB / 256 MiB
        cache_size = 2**16  # 256 KiB: in a core's L2
    peaks: dict[str, Any] = {"matmul": [], "memory": []}

    def timed(fn: Callable[[], Any]) -> dict[str, float]:
        return {f"time_{k}": v for k, v in time_call(fn, repetitions, seconds).items()}

    for precision in ("default", "highest"):
        for n in matmul_sizes:
            a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
            b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)

            def matmul(x: jax.Array, y: jax.Array, precision: str = precision) -> jax.Array:
                if precision == "default":
                    return jnp.dot(x, y)
                with jax.default_matmul_precision(precision):
                    return jnp.dot(x, y)

            compiled = jax.jit(matmul).lower(a, b).compile()
            row = {"precision": precision, "size": n, "flops": 2.0 * n**3}
            row["xla_flops"] = xla_cost_once(compiled)["flops"]
            row.update(timed(lambda c=compiled, a=a, b=b: jax.block_until_ready(c(a, b))))
            row["gflops"] = row["flops"] / row["time_median"] / 1e9
            peaks["matmul"].append(row)
            del a, b, compiled

    def memory_row(kind: str, size: int, nbytes: float, fn: Callable[[], Any]) -> None:
        row = {"kind": kind, "elements": size, "bytes": nbytes, **timed(fn)}
        row["gbs"] = nbytes / row["time_median"] / 1e9
        peaks["memory"].append(row)

    # The copy writes over its input (donated): no fresh pages to fault in on every call.
    box = {"x": jnp.ones((memory_size,), jnp.float32)}
    copy = jax.jit(lambda v: v * 1.0000001, donate_argnums=0)

    def copy_once() -> None:
        box["x"] = jax.block_until_ready(copy(box["x"]))

    memory_row("copy", memory_size, 8.0 * memory_size, copy_once)
    reduce = jax.jit(jnp.sum)
    memory_row(
        "reduce", memory_size, 4.0 * memory_size, lambda: jax.block_until_ready(reduce(box["x"]))
    )
    del box["x"]

    def cache_copy(v: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, CACHE_COPY_ITERATIONS, lambda _, y: y * 1.0000001, v)

    small = jnp.ones((cache_size,), jnp.float32)
    compiled = jax.jit(cache_copy).lower(small).compile()
    memory_row(
        "cache copy",
        cache_size,
        8.0 * cache_size * CACHE_COPY_ITERATIONS,
        lambda: jax.block_until_ready(compiled(small)),
    )
    best = {
        p: max(r["gflops"] for r in peaks["matmul"] if r["precision"] == p)
        for p in ("default", "highest")
    }
    if not gpu:  # on a CPU both precisions are the same float32 products
        best["highest"] = best["default"] = max(best.values())
    peaks["matmul_gflops_highest"] = best["highest"]
    peaks["matmul_gflops_default"] = best["default"]
    peaks["bandwidth_gbs"] = max(r["gbs"] for r in peaks["memory"] if r["kind"] != "cache copy")
    peaks["cache_gbs"] = max(r["gbs"] for r in peaks["memory"] if r["kind"] == "cache copy")
    peaks["machine_balance"] = peaks["matmul_gflops_highest"] / peaks["bandwidth_gbs"]

    def small_products(v: jax.Array) -> jax.Array:
        w = jnp.eye(16, dtype=jnp.float32) * 0.5
        for _ in range(SMALL_PRODUCTS):
            v = jnp.dot(v, w) + 1.0
        return v

    v = jnp.ones((16, 16), jnp.float32)
    compiled = jax.jit(small_products).lower(v).compile()
    row = {"ops": analyse_compiled(compiled, {})["ops"]}
    row.update(timed(lambda: jax.block_until_ready(compiled(v))))
    row["us_per_op"] = row["time_median"] / row["ops"] * 1e6
    peaks["op_overhead"] = row
    peaks["op_overhead_us"] = row["us_per_op"]
    peaks["layer_products"] = [
        _layer_product(name, batch, m, k, n, timed) for name, batch, m, k, n in LAYER_PRODUCTS
    ]
    return peaks


def _layer_product(
    name: str,
    batch: int,
    m: int,
    k: int,
    n: int,
    timed: Callable[[Callable[[], Any]], dict[str, float]],
) -> dict[str, Any]:
    """``batch`` float32 ``(m, k) @ (k, n)`` products (``k == n``; each its own matrices, as
    seeds under ``vmap``), ``LAYER_PRODUCT_REPEATS`` times in one program (``y = y @ w`` in a
    loop, ``w`` identities passed in as data, so no call's dispatch is timed): the best rate a
    layer of that shape can reach here (``2 batch m k n`` FLOPs per product)."""
    if k != n:
        raise ValueError(f"layer product {name!r}: chained products need k == n, got {k}, {n}")
    y = jax.random.normal(jax.random.key(0), (batch, m, k), jnp.float32)
    w = jnp.broadcast_to(jnp.eye(k, dtype=jnp.float32), (batch, k, k))

    def chain(y: jax.Array, w: jax.Array) -> jax.Array:
        def product(_: int, v: jax.Array) -> jax.Array:
            return jnp.einsum("bmk,bkn->bmn", v, w)

        return jax.lax.fori_loop(0, LAYER_PRODUCT_REPEATS, product, y)

    compiled = jax.jit(chain).lower(y, w).compile()
    row: dict[str, Any] = {
        "name": name,
        "shape": [batch, m, k, n],
        "products_per_call": LAYER_PRODUCT_REPEATS,
        "flops": 2.0 * batch * m * k * n * LAYER_PRODUCT_REPEATS,
    }
    row.update(timed(lambda: jax.block_until_ready(compiled(y, w))))
    row["gflops"] = row["flops"] / row["time_median"] / 1e9
    return row


def _peak_lines(peaks: dict[str, Any]) -> list[tuple[str, float, str]]:
    """``(what, ms, rate)`` of every peak measurement of one :func:`measure_peaks`."""
    lines = [
        (
            f"matmul {r['size']}x{r['size']}, {r['precision']} precision",
            r["time_median"],
            f"{r['gflops']:,.1f} GFLOP/s",
        )
        for r in peaks["matmul"]
    ]
    for r in peaks["memory"]:
        size = r["elements"] * 4 / 2**20
        what = f"{size:,.0f} MiB" if size >= 1 else f"{size * 1024:,.0f} KiB"
        if r["kind"] == "cache copy":
            what += f", {CACHE_COPY_ITERATIONS} passes in one program"
        lines.append((f"{r['kind']} of {what}", r["time_median"], f"{r['gbs']:,.1f} GB/s"))
    floor = peaks["op_overhead"]
    lines.append(
        (
            f"small ops: a chain of {SMALL_PRODUCTS} dependent 16 x 16 products "
            f"({floor['ops']:,.0f} ops executed)",
            floor["time_median"],
            f"{floor['us_per_op']:.2f} us per op",
        )
    )
    for r in peaks.get("layer_products", []):
        batch, m, k, n = r["shape"]
        times = f"{batch} x " if batch > 1 else ""
        lines.append(
            (
                f"a layer's product: {r['name']}, {times}{m} x {k} by {k} x {n} "
                f"({r['products_per_call']} in one program)",
                r["time_median"],
                f"{r['gflops']:,.1f} GFLOP/s",
            )
        )
    return lines


def peaks_table(peaks: dict[str, Any]) -> str:
    """The peaks measured before the programs and, where measured, again after them."""
    start = _peak_lines(peaks.get("start", peaks))
    if "end" not in peaks:
        return markdown_table(
            ["peak", "ms", "rate"], [[w, f"{t * 1e3:.2f}", r] for w, t, r in start]
        )
    end = _peak_lines(peaks["end"])
    rows = [
        [w, f"{t * 1e3:.2f}", r, f"{t2 * 1e3:.2f}", r2]
        for (w, t, r), (_, t2, r2) in zip(start, end, strict=True)
    ]
    return markdown_table(
        ["peak", "ms (before)", "rate (before)", "ms (after)", "rate (after)"], rows
    )


PEAK_KEYS = ("matmul_gflops_highest", "matmul_gflops_default", "bandwidth_gbs", "cache_gbs")


def combine_peaks(start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
    """The better of the two measurements of each peak (the machine's capability; a busy
    moment only lowers a rate), with both kept; ``unsteady`` names the peaks that differ by
    more than 15% (the machine was not quiet)."""
    peaks: dict[str, Any] = {"start": start, "end": end}
    for key in PEAK_KEYS:
        peaks[key] = max(start[key], end[key])
    peaks["op_overhead_us"] = min(start["op_overhead_us"], end["op_overhead_us"])
    peaks["op_overhead"] = min(
        start["op_overhead"], end["op_overhead"], key=lambda r: r["us_per_op"]
    )
    peaks["machine_balance"] = peaks["matmul_gflops_highest"] / peaks["bandwidth_gbs"]
    peaks["layer_products"] = [
        max(a, b, key=lambda r: r["gflops"])
        for a, b in zip(start["layer_products"], end["layer_products"], strict=True)
    ]
    peaks["unsteady"] = [
        key for key in PEAK_KEYS if abs(start[key] - end[key]) > 0.15 * max(start[key], end[key])
    ]
    return peaks


def memory_roof(gbs: float, peaks: dict[str, Any]) -> float:
    """The bandwidth a program's bytes are judged against: the large copy's, or the in-cache
    copy's for a program that moves more bytes per second than a large copy can (its bytes
    then come mostly from cache)."""
    return peaks["cache_gbs"] if gbs > peaks["bandwidth_gbs"] else peaks["bandwidth_gbs"]


def classify(row: dict[str, Any], peaks: dict[str, Any]) -> str:
    if row["gflops_s"] >= COMPUTE_BOUND_FRACTION * peaks["matmul_gflops_highest"]:
        return "compute"
    if row["gbs"] >= MEMORY_BOUND_FRACTION * memory_roof(row["gbs"], peaks):
        return "memory"
    return "latency/overhead"


def derived(row: dict[str, Any], peaks: dict[str, Any]) -> dict[str, Any]:
    seconds = row["time_median_s"]
    out = {
        "gflops_s": row["flops"] / seconds / 1e9,
        "gbs": row["bytes"] / seconds / 1e9,
        "intensity": row["flops"] / row["bytes"] if row["bytes"] else float("nan"),
        "us_per_op": seconds / row["ops"] * 1e6 if row["ops"] else float("nan"),
    }
    out["pct_matmul_peak"] = 100 * out["gflops_s"] / peaks["matmul_gflops_highest"]
    out["pct_matmul_peak_default"] = 100 * out["gflops_s"] / peaks["matmul_gflops_default"]
    out["pct_bandwidth_peak"] = 100 * out["gbs"] / peaks["bandwidth_gbs"]
    out["pct_cache_bandwidth"] = 100 * out["gbs"] / peaks["cache_gbs"]
    # The share of the time that the ops would take at the measured cost of a tiny op.
    out["op_floor_pct"] = 100 * row["ops"] * peaks["op_overhead_us"] / (seconds * 1e6)
    layer = layer_product_rate(row, peaks)
    out["pct_layer_product"] = 100 * out["gflops_s"] / layer if layer else float("nan")
    out["bound"] = classify(out, peaks)
    return out


def layer_product_rate(row: dict[str, Any], peaks: dict[str, Any]) -> float | None:
    """GFLOP/s of a product at the shape of the program's layers (``LAYER_PRODUCTS``), or
    None where no measured shape is the program's (DDPG at the Pendulum shapes, and programs
    over several seeds)."""
    if row.get("num_seeds", 1) > 1:
        return None
    if row.get("algo") in ("npg", "trpo"):
        name = "MuJoCo hidden layer" if row.get("shape") == "mujoco" else "Pendulum hidden layer"
    elif row.get("algo") == "ddpg" and row.get("shape") == "mujoco":
        name = "DDPG MuJoCo hidden layer"
    else:
        return None
    rates = [r["gflops"] for r in peaks.get("layer_products", []) if r["name"] == name]
    return max(rates) if rates else None

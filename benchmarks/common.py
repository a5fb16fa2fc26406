"""Shared pieces of the benchmark scripts: machine facts, child processes, honest timing, tables,
output files.

Never imported by ``jaxrl``. Tianshou and torch are optional here: :func:`tianshou_available`
says whether the Tianshou side of a benchmark can run (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
QUICK_RESULTS_DIR = RESULTS_DIR / "quick"

# Both frameworks get the machine's cores: torch is told to use 2 threads (the machine has 2
# cores); XLA's CPU client uses all cores by default.
TORCH_THREADS = 2


# ------------------------------------------------------------------------------ arguments
def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny budget (< 1 minute, for CI); results go to benchmarks/results/quick/",
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.add_argument(
        "--no-tianshou", action="store_true", help="skip the Tianshou side even if installed"
    )
    return parser


def add_seed_axis(parser: argparse.ArgumentParser, what: str = "jaxrl's program takes") -> None:
    """``--seed-axis`` (default ``auto``): how ``what`` its seeds, vmapped or mapped
    (:func:`jaxrl.training.over_seeds`). Parsing imports nothing of jaxrl: a script may time
    its imports after it."""
    parser.add_argument(
        "--seed-axis",
        choices=("auto", "vmap", "map"),  # jaxrl.training.seeds.SEED_AXES
        default="auto",
        help=f"how {what} its seeds (jaxrl.training.over_seeds; default auto)",
    )


def output_dir(args: argparse.Namespace) -> Path:
    out = args.out or (QUICK_RESULTS_DIR if args.quick else RESULTS_DIR)
    out.mkdir(parents=True, exist_ok=True)
    return out


# ------------------------------------------------------------------------------ availability
def tianshou_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "tianshou"))


def use_tianshou(args: argparse.Namespace) -> bool:
    """Whether to run the Tianshou side; prints why not when it is skipped."""
    if args.no_tianshou:
        print("Tianshou side skipped (--no-tianshou).")
        return False
    if not tianshou_available():
        print(
            'Tianshou side skipped: torch/tianshou are not installed (pip install -e ".[bench]").'
        )
        return False
    return True


def setup_torch() -> None:
    import torch

    torch.set_num_threads(TORCH_THREADS)


def mujoco_available() -> bool:
    return importlib.util.find_spec("mujoco") is not None


# ------------------------------------------------------------------------------ machine
def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return [float("nan")] * 3


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return float("nan")


def installed_version(package: str) -> str | None:
    """The installed version of ``package`` (a distribution name); None if it is not
    installed or its metadata cannot be read."""
    from importlib.metadata import version

    try:
        return version(package)
    except Exception:
        return None


def git_commit(paths: Sequence[str] = (), cwd: Path = BENCH_DIR) -> str | None:
    """The commit of the checkout around ``cwd``, ``+dirty`` when a tracked file that the git
    pathspecs ``paths`` name (default: any) differs from it; None without git or a commit."""

    def git(*argv: str) -> str:
        return subprocess.run(
            ["git", *argv], cwd=cwd, capture_output=True, text=True, check=False
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    except OSError:
        return None
    return (commit + ("+dirty" if dirty else "")) if commit else None


def machine_info() -> dict[str, Any]:
    import jax

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "jax": installed_version("jax"),
        "jaxlib": installed_version("jaxlib"),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "torch": installed_version("torch"),
        "torch_threads": TORCH_THREADS if tianshou_available() else None,
        "tianshou": installed_version("tianshou"),
        "gymnasium": installed_version("gymnasium"),
        "gymnax": installed_version("gymnax"),
        "mujoco": installed_version("mujoco"),
        "loadavg_start": loadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def print_machine(info: dict[str, Any]) -> None:
    print(
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; "
        f"jax {info['jax']} ({info['jax_backend']}), torch {info['torch']}, "
        f"tianshou {info['tianshou']}; load average {info['loadavg_start']}"
    )


def command_line() -> str:
    return "python " + " ".join([os.path.relpath(sys.argv[0], BENCH_DIR.parent), *sys.argv[1:]])


# ------------------------------------------------------------------------------ processes
def child_record(command: Sequence[str], what: str, **run: Any) -> tuple[Any, float]:
    """Run ``command``, a benchmark's child process (``run``: more keywords of
    :func:`subprocess.run`, such as ``env`` and ``cwd``), and return its record (the JSON value
    on the last line of its standard output) and its wall seconds from start to exit. A child
    that fails stops the benchmark with a message naming ``what``, its exit status and the end
    of its error output."""
    start = time.perf_counter()
    done = subprocess.run(list(command), capture_output=True, text=True, check=False, **run)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{what} failed (exit status {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), seconds


# ------------------------------------------------------------------------------ timing
def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Median and spread (quartiles, min, max) of repeated measurements."""
    values = sorted(samples)
    if len(values) >= 4:
        q1, _, q3 = statistics.quantiles(values, n=4)
    else:
        q1, q3 = values[0], values[-1]
    return {
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "min": values[0],
        "max": values[-1],
        "n": len(values),
    }


def alternate(
    contestants: dict[str, Callable[[], Any]],
    repetitions: int,
    calls_per_repetition: dict[str, int],
    pause: float = 0.05,
) -> dict[str, list[float]]:
    """Alternating A/B timing: each repetition runs every contestant once, in turn (the order
    flips every repetition), timing ``calls_per_repetition[name]`` back-to-back calls and
    recording seconds per call. Each contestant must block until its work is done. A
    contestant with a ``reset`` attribute has it called (untimed) before each of its timed
    blocks, e.g. to restore its initial parameters: hundreds of updates on one synthetic batch
    would otherwise drive a policy to a degenerate point (Tianshou's NPG to a zero std)."""
    samples: dict[str, list[float]] = {name: [] for name in contestants}
    names = list(contestants)
    for rep in range(repetitions):
        for name in names if rep % 2 == 0 else names[::-1]:
            reset = getattr(contestants[name], "reset", None)
            if reset is not None:
                reset()
            time.sleep(pause)  # let the other framework's worker threads go idle
            calls = calls_per_repetition[name]
            start = time.perf_counter()
            for _ in range(calls):
                contestants[name]()
            samples[name].append((time.perf_counter() - start) / calls)
    return samples


def calls_for(fn: Callable[[], Any], target_seconds: float) -> int:
    """Back-to-back calls that take about ``target_seconds`` (at least 1)."""
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-6)
    return max(1, round(target_seconds / once))


def time_call(fn: Callable[[], Any], repetitions: int, seconds: float) -> dict[str, float]:
    """Median (and spread) seconds per call of ``fn`` (which blocks): two warm-up calls, then
    ``repetitions`` means of back-to-back calls lasting about ``seconds`` each."""
    for _ in range(2):
        fn()
    calls = calls_for(fn, seconds)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return {**summarize(samples), "calls_per_repetition": calls}


# ------------------------------------------------------------------------------ output
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return value if isinstance(value, str) else f"{value}"

    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, default=float) + "\n")
    print(f"wrote {path}")


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {path}")


def pyplot() -> Any | None:
    """matplotlib.pyplot with a file backend, or None (plots skipped) if not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: plots skipped.")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def fmt_s(seconds: float) -> str:
    return f"{seconds:.1f}"


# ------------------------------------------------------------------------------ Pendulum runs
# Tianshou's Pendulum-v1 tests (test/continuous/test_{npg,trpo,ddpg}.py) as jaxrl objects.
# NPG/TRPO: 16 envs x 128 steps = 2048 per collect, evaluation every 24 collects (49,152 env
# steps, Tianshou's epoch rounded to whole collects), 10 episodes. DDPG: 8 envs x 1 step, one
# update per collect, evaluation every 20,000 env steps, 100 episodes.
PENDULUM_EPOCH_STEPS = {"npg": 24 * 2048, "trpo": 24 * 2048, "ddpg": 20_000}
PENDULUM_EPOCHS = 5
PENDULUM_EVAL_EPISODES = {"npg": 10, "trpo": 10, "ddpg": 100}


def import_distributions() -> None:
    """Import distrax (and TensorFlow Probability's JAX substrate) now. jaxrl imports it in
    the first trace that builds a distribution (1-3 s, more on a fresh install with no
    bytecode cached); a figure of tracing or compile time calls this first, so that it does
    not count a module import."""
    import distrax  # noqa: F401


def pendulum_agent(algo: str) -> Any:
    import jaxrl

    on_policy = dict(
        gamma=0.95,
        gae_lambda=0.95,
        lr=1e-3,
        return_scaling=True,
        advantage_normalization=True,
        optim_critic_iters=5,
        repeat=2,
        batch_size=None,
        hidden_sizes=(64, 64),
        activation="tanh",
    )
    if algo == "npg":
        return jaxrl.NPG(trust_region_size=0.5, deterministic_eval=True, **on_policy)
    if algo == "trpo":
        return jaxrl.TRPO(max_kl=0.005, backtrack_coeff=0.8, max_backtracks=10, **on_policy)
    return jaxrl.DDPG(
        actor_lr=1e-4,
        critic_lr=1e-3,
        gamma=0.99,
        tau=0.005,
        n_step_return_horizon=3,
        batch_size=128,
        buffer_size=20_000,
        update_per_step=0.125,
        hidden_sizes=(128, 128),
    )


def pendulum_config(algo: str, total_steps: int, eval_every: int | None = None) -> Any:
    from jaxrl.training import TrainConfig

    num_envs, num_steps = (8, 1) if algo == "ddpg" else (16, 128)
    return TrainConfig(
        num_envs=num_envs,
        num_steps=num_steps,
        total_steps=total_steps,
        eval_every=eval_every or min(PENDULUM_EPOCH_STEPS[algo], total_steps),
        eval_episodes=PENDULUM_EVAL_EPISODES[algo],
    )


def use_cpu_devices(count: int) -> None:
    """Make a CPU backend ``count`` devices (``jax_num_cpu_devices``); call it before JAX
    starts (before any array or device query). 1: JAX's default, one device."""
    import jax

    if count > 1:
        jax.config.update("jax_num_cpu_devices", count)


def run_jaxrl_pendulum(
    algo: str,
    num_seeds: int,
    total_steps: int,
    seed: int = 0,
    seed_axis: str = "auto",
    devices: int = 1,
) -> dict:
    """Compile, then run, ``num_seeds`` seeds of ``make_train`` in one program on gymnax
    Pendulum-v1 (``seed_axis``: vmapped or mapped, :func:`jaxrl.training.over_seeds`);
    compile and run times are measured separately. ``devices`` > 1: the seeds split over
    that many devices (``jaxrl.training.sharding.sharded_program``; on a CPU, set
    ``jax_num_cpu_devices`` before JAX starts, :func:`use_cpu_devices`)."""
    import jax
    import numpy as np

    from jaxrl.training import make_train, over_seeds, resolve_seed_axis
    from jaxrl.training.sharding import seed_mesh, shard_key_data, sharded_program

    config = pendulum_config(algo, total_steps)
    agent = pendulum_agent(algo)
    keys = jax.random.split(jax.random.key(seed), num_seeds)
    train_one = make_train(agent, "Pendulum-v1", config)
    if devices > 1:
        if len(jax.devices()) < devices or num_seeds % devices:
            raise SystemExit(
                f"--devices {devices}: needs that many devices (there are "
                f"{len(jax.devices())}) and a seed count it divides (got {num_seeds})"
            )
        mesh = seed_mesh(jax.devices()[:devices])
        train = sharded_program(train_one, mesh, seed_axis, agent)
        keys = shard_key_data(keys, mesh)
    else:
        train = jax.jit(over_seeds(train_one, seed_axis, agent))
    load_before = loadavg()
    start = time.perf_counter()
    compiled = train.lower(keys).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    _, metrics = compiled(keys)
    returns = np.asarray(jax.block_until_ready(metrics["eval/return"]))
    run_s = time.perf_counter() - start
    env_steps = int(np.asarray(metrics["eval/env_steps"])[0, -1])
    return {
        "algo": algo,
        "num_seeds": num_seeds,
        "seed_axis": resolve_seed_axis(seed_axis, agent),
        "devices": devices,
        "env_steps_per_seed": env_steps,
        "compile_s": compile_s,
        "run_s": run_s,
        "total_s": compile_s + run_s,
        "env_steps_per_s": num_seeds * env_steps / run_s,
        "final_returns": returns[:, -1].tolist(),
        "best_returns": returns.max(axis=1).tolist(),
        "eval_returns": returns.tolist(),
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }

"""The accelerator check: every figure the GPU work is judged by, in one run of at most nine
minutes on one GPU machine.

Stages, each a fresh process with its own timeout and an empty ``JAX_COMPILATION_CACHE_DIR``
(compile figures are cold), each adding its figures to ``gpu_check.json`` as it ends (a
stage that times out or fails is recorded as such, and the next one runs):

1. ``main-job``: the README's main job, ``jaxrl train trpo --env Pendulum-v1`` (wall clock).
2. ``pendulum-4096``: 4,096 TRPO seeds x 245,760 env steps on gymnax Pendulum (wall clock,
   compilation included).
3. ``physics``: raw vmapped ``mjx.step`` and jaxrl's env step on MJX hopper at 4,096 and
   32,768 environments, under the task's solver and the accelerator setting
   (:mod:`physics`): the physics ceiling.
4. ``trpo-mjx``: TRPO on MJX hopper, 256 seeds, the accelerator preset and solver, 2
   evaluation periods (:mod:`brax_training`): compile, env steps/s from the start of the
   first period to the end of the last (its evaluation alongside), one evaluation's seconds.
5. ``ddpg-mjx``: DDPG on MJX hopper (reported only).
6. ``brax-ppo``: Brax's own PPO on the same MJX hopper (Brax's published PPO settings for
   its locomotion tasks: Brax publishes SAC, not PPO, settings for hopper), ``num_evals=10``:
   its ``training/sps`` (evaluation excluded) and its wall clock.

A table of the stages is printed at the end. On a GPU machine, with the packages it lacks
carried in as wheels (``benchmarks/gpu_wheels.sh`` downloads them to ``.whl/``)::

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:$PWD python3 benchmarks/gpu_check.py --out $OUT

``--tiny`` runs every stage at toy sizes on Brax's cheap physics (no MJX compile) in under a
minute on a 2-core CPU: CI's check that the script works.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import BENCH_DIR, base_parser, loadavg, machine_info, markdown_table, write_json

ACCELERATOR = ["--solver", "newton", "--solver-iterations", "1", "--solver-ls-iterations", "4"]

# Brax's published PPO settings for its locomotion tasks (its training notebook's ant).
BRAX_PPO = dict(
    reward_scaling=10.0,
    episode_length=1000,
    normalize_observations=True,
    action_repeat=1,
    unroll_length=5,
    num_minibatches=32,
    num_updates_per_batch=4,
    discounting=0.97,
    learning_rate=3e-4,
    entropy_cost=1e-2,
    num_envs=4096,
    batch_size=2048,
    num_evals=10,
)


def stages(tiny: bool, out: Path) -> list[tuple[str, list[str], int]]:
    """``(name, command, timeout seconds)`` of each stage."""
    py = [sys.executable]
    jaxrl = [*py, "-m", "jaxrl", "train", "trpo", "--env", "Pendulum-v1"]
    brax = [*py, str(BENCH_DIR / "brax_training.py"), "--out"]
    if tiny:
        toy = ["--num-envs", "4", "--num-steps", "32", "--eval-episodes", "2"]
        training = [
            "--envs",
            "fast",
            "--backend",
            "positional",
            "--num-seeds",
            "2",
            "--total-steps",
            "256",
            "--eval-every",
            "128",
            "--preset",
            "default",
            *toy,
        ]
        return [
            (
                "main-job",
                [
                    *jaxrl,
                    "--num-seeds",
                    "2",
                    "--total-steps",
                    "2048",
                    *toy[:4],
                    "--run-dir",
                    str(out / "runs" / "main"),
                ],
                60,
            ),
            (
                "pendulum-4096",
                [
                    *jaxrl,
                    "--num-seeds",
                    "4",
                    "--total-steps",
                    "1024",
                    *toy[:4],
                    "--run-dir",
                    str(out / "runs" / "p4096"),
                ],
                60,
            ),
            (
                "physics",
                [*py, str(BENCH_DIR / "physics.py"), "--quick", "--env", "fast", "--out", str(out)],
                60,
            ),
            (
                "trpo-mjx",
                [
                    *brax,
                    str(out / "trpo"),
                    "--algos",
                    "trpo",
                    *training,
                    "--hyper",
                    "hidden_sizes=[16]",
                ],
                60,
            ),
            (
                "ddpg-mjx",
                [
                    *brax,
                    str(out / "ddpg"),
                    "--algos",
                    "ddpg",
                    *training,
                    "--hyper",
                    "hidden_sizes=[16]",
                    "warmup_steps=64",
                    "batch_size=32",
                ],
                60,
            ),
            ("brax-ppo", [*py, __file__, "--brax-ppo", "--tiny", "--out", str(out)], 60),
        ]
    hopper = ["--envs", "hopper", "--backend", "mjx", "--num-seeds", "256", *ACCELERATOR]
    return [
        ("main-job", [*jaxrl, "--run-dir", str(out / "runs" / "main")], 60),
        (
            "pendulum-4096",
            [
                *jaxrl,
                "--num-seeds",
                "4096",
                "--total-steps",
                "245760",
                "--run-dir",
                str(out / "runs" / "p4096"),
            ],
            75,
        ),
        (
            "physics",
            [
                *py,
                str(BENCH_DIR / "physics.py"),
                "--num-envs",
                "4096",
                "32768",
                "--reps",
                "5",
                "--out",
                str(out),
            ],
            100,
        ),
        # The accelerator preset (64 x 16 env steps per collection, evaluation alongside
        # training), 2 periods of 64 collections: 1,024 vector steps each, an episode's.
        (
            "trpo-mjx",
            [
                *brax,
                str(out / "trpo"),
                "--algos",
                "trpo",
                *hopper,
                "--preset",
                "accelerator",
                "--total-steps",
                "131072",
                "--eval-every",
                "65536",
            ],
            150,
        ),
        (
            "ddpg-mjx",
            [
                *brax,
                str(out / "ddpg"),
                "--algos",
                "ddpg",
                *hopper,
                "--total-steps",
                "4000",
                "--eval-every",
                "2000",
                "--eval-episodes",
                "1",
            ],
            45,
        ),
        ("brax-ppo", [*py, __file__, "--brax-ppo", "--out", str(out)], 110),
    ]


def brax_ppo(tiny: bool, out: Path) -> None:
    """Brax's PPO on MJX hopper (inverted_pendulum on ``positional`` when ``tiny``):
    ``brax_ppo.json`` with its last ``training/sps``, its wall clock and its returns."""
    import functools

    import jax
    from brax import envs
    from brax.training.agents.ppo import train as ppo

    if not hasattr(jax, "device_put_replicated"):  # Brax 0.14's PPO on JAX >= 0.10
        jax.device_put_replicated = _device_put_replicated
    settings = dict(BRAX_PPO)
    if tiny:
        env = envs.get_environment("fast", backend="positional")
        settings.update(
            num_envs=8,
            batch_size=8,
            num_minibatches=2,
            episode_length=50,
            num_evals=2,
            unroll_length=4,
        )
        steps = 1024
    else:
        env = envs.get_environment("hopper", backend="mjx")
        steps = 10_000_000
    points: list[dict[str, float]] = []
    start = time.perf_counter()

    def progress(step: int, metrics: dict[str, Any]) -> None:
        point = {"env_steps": int(step), "wall_s": time.perf_counter() - start}
        for key in ("eval/episode_reward", "training/sps", "eval/sps"):
            if key in metrics:
                point[key] = float(metrics[key])
        points.append(point)
        print(point, flush=True)

    train = functools.partial(ppo.train, num_timesteps=steps, seed=1, progress_fn=progress)
    train(environment=env, **settings)
    wall = time.perf_counter() - start
    sps = [p["training/sps"] for p in points if "training/sps" in p]
    write_json(
        out / "brax_ppo.json",
        {
            "settings": settings,
            "num_timesteps": steps,
            "wall_s": wall,
            "wall_env_steps_per_s": points[-1]["env_steps"] / wall if points else None,
            "training_sps": sps[-1] if sps else None,
            "points": points,
        },
    )


def _device_put_replicated(tree: Any, devices: list) -> Any:
    """``jax.device_put_replicated`` as JAX had it: a leading axis of one copy per device,
    sharded over ``devices``."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(np.array(devices), ("d",)), PartitionSpec("d"))
    stack = lambda x: jnp.stack([jnp.asarray(x)] * len(devices))  # noqa: E731
    return jax.device_put(jax.tree.map(stack, tree), sharding)


def figures(name: str, out: Path) -> dict[str, Any]:
    """The headline figures a finished stage left in ``out``."""

    def load(path: Path) -> Any:
        return json.loads(path.read_text()) if path.is_file() else None

    if name in ("trpo-mjx", "ddpg-mjx"):
        data = load(out / name.split("-")[0] / "brax_training.json")
        row = data["rows"][0] if data else None
        keys = (
            "num_seeds",
            "run",
            "compile_s",
            "run_s",
            "env_steps_per_s",
            "evaluation_s",
            "evaluation_share_of_run",
            "eval_mean",
            "eval_std",
        )
        return {k: row[k] for k in keys} if row else {}
    if name == "physics":
        found = sorted(out.glob("physics_*.json"))
        return {"rows": load(found[0])["rows"]} if found else {}
    if name == "brax-ppo":
        data = load(out / "brax_ppo.json") or {}
        return {k: data.get(k) for k in ("wall_s", "wall_env_steps_per_s", "training_sps")}
    return {}


def run_stage(name: str, command: list[str], timeout: int, out: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    with tempfile.TemporaryDirectory() as cache:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=timeout, cwd=BENCH_DIR
            )
            status, output = (
                "ok" if done.returncode == 0 else f"exit {done.returncode}",
                done.stdout + done.stderr,
            )
        except subprocess.TimeoutExpired as error:
            status = f"timeout {timeout}s"
            output = (error.stdout or b"").decode() + (error.stderr or b"").decode()
    wall = time.perf_counter() - start
    (out / f"{name}.log").write_text(output)
    return {
        "stage": name,
        "command": " ".join(command),
        "status": status,
        "wall_s": wall,
        "figures": figures(name, out) if status == "ok" else {},
        "tail": output.strip().splitlines()[-3:],
    }


def headline(row: dict[str, Any]) -> str:
    f = row["figures"]
    if "env_steps_per_s" in f:
        share = f.get("evaluation_share_of_run")
        evaluation = "evaluated alongside" if share is None else f"evaluation {100 * share:.0f}%"
        return (
            f"{f['env_steps_per_s']:,.0f} env steps/s, compile {f['compile_s']:.1f}s, "
            f"{evaluation} of the run"
        )
    if "rows" in f:
        best = max(f["rows"], key=lambda r: r["steps_per_s"])
        return f"best {best['program']}: {best['steps_per_s']:,.0f} steps/s ({best['setting']})"
    if f.get("training_sps") is not None:
        return (
            f"training/sps {f['training_sps']:,.0f}, wall "
            f"{f['wall_env_steps_per_s']:,.0f} env steps/s"
        )
    return ""


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes on the CPU (CI)")
    parser.add_argument("--only", nargs="+", default=None, help="run these stages only")
    parser.add_argument("--brax-ppo", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = (args.out or BENCH_DIR / "results" / "gpu_check").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.brax_ppo:
        brax_ppo(args.tiny, out)
        return
    shutil.rmtree(out / "runs", ignore_errors=True)  # the check's own run directories
    report: dict[str, Any] = {"machine": machine_info(), "load_before": loadavg(), "stages": []}
    start = time.perf_counter()
    chosen = [s for s in stages(args.tiny, out) if not args.only or s[0] in args.only]
    # Toy sizes time nothing: their stages run two at a time (CI's two cores).
    with ThreadPoolExecutor(2 if args.tiny else 1) as pool:
        for row in pool.map(lambda stage: run_stage(*stage, out), chosen):
            report["stages"].append(row)
            report["elapsed_s"] = time.perf_counter() - start
            write_json(out / "gpu_check.json", report)
            print(
                f"{row['stage']}: {row['status']} in {row['wall_s']:.1f}s {headline(row)}",
                flush=True,
            )
    report["load_after"] = loadavg()
    write_json(out / "gpu_check.json", report)
    print(
        markdown_table(
            ["stage", "status", "wall s", "figures"],
            [
                [r["stage"], r["status"], f"{r['wall_s']:.1f}", headline(r)]
                for r in report["stages"]
            ],
        )
    )
    print(f"total {report['elapsed_s']:.1f}s; wrote {out / 'gpu_check.json'}")
    failed = [r["stage"] for r in report["stages"] if r["status"] != "ok"]
    if failed:
        print(f"stages that did not finish: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""DDPG and TD3 side by side with rejax and sbx: whole-process wall time and final return.

Every side runs as a separate process, from interpreter start to exit (imports and
compilation included), the sides alternating their order every repetition (``--reps``);
each also reports its final evaluation return (mean and spread over seeds). The peers run in
virtual environments of their own, made here with pip when missing (``.venv-rejax``,
``.venv-sbx``), with the same JAX stack as this interpreter's (jax, jaxlib, flax, optax,
chex pinned to the versions installed here); the JSON records each side's versions.

Comparisons (``--only``, comma-separated; default all four):

``ddpg``
    DDPG on gymnax Pendulum-v1, ``--seeds`` (16) seeds vmapped in one program x ``--steps``
    (10,000) env steps per seed: (a) ``jaxrl API``: ``jax.jit(over_seeds(make_train(...)))``;
    (b) ``jaxrl command``: ``python -m jaxrl train ddpg --backend jax ...``; (c) ``rejax``:
    ``jax.jit(jax.vmap(algo.train))``; (d) ``rejax uniform``: the same with rejax's replay
    sampler replaced in its process by uniform sampling with replacement over the filled part
    (``jax.random.randint``; rejax 0.1.3 draws without replacement through
    ``jax.random.choice(..., replace=False, p=...)`` over the whole buffer).
    rejax 0.1.3 has no DDPG (no release on PyPI does; ``get_algo`` knows dqn, iqn, ppo, pqn,
    sac, td3): its DDPG side is rejax's TD3 with one critic, ``policy_delay=1``, and a
    critic loss without target smoothing (a subclass defined in the child process,
    :func:`rejax_ddpg_class`); everything else (buffer, loop, collection, actor loss, target
    updates, evaluation) is rejax's own code.
``td3``
    TD3, the same settings plus target smoothing noise 0.2 clipped at 0.5 and policy delay 2:
    jaxrl's plug-in ``examples/td3.py`` through the API (``jaxrl.load_plugin``) and the command
    (``jaxrl train td3 --plugin examples/td3.py``), rejax's TD3 as is and uniform-patched.
``host``
    DDPG on gymnasium's Pendulum-v1, one seed per run, ``--host-steps`` (20,000) env steps,
    ``--host-reps`` (5) runs a side with seeds 0, 1, ...: the jaxrl command on its host
    driver (``--backend gymnasium --env-backend gymnasium``) against sbx's DDPG
    (``sbx-rl==0.28.0``; ``NormalActionNoise(0, 0.1)``, ``learning_starts=1000``,
    ``train_freq=1``, ``gradient_steps=1``).
``update``
    One learning step alone, ``--seeds`` seeds vmapped, batch 256, a full 20,000-transition
    buffer of synthetic data, timed after compilation. Every case's compiled program runs
    ``UPDATES_PER_CALL`` (4) updates in a ``lax.scan``, so each side pays one dispatch per 4
    updates: jaxrl's DDPG and TD3 ``over_seeds(sample, then agent.update)`` (TD3 steps its
    actor on every second update); rejax's cycles of ``policy_delay`` times (sample, then
    ``update_critic``), then ``update_actor`` and the target updates, its sampler as is and
    uniform-patched. A call's time divided by 4 is one update's; the median over
    ``--update-calls`` / 4 rounds, each round one call of every case in turn, so that the
    machine's load falls on them alike. The issue's target:
    jaxrl's TD3 update at most 1.2x its DDPG update. These processes are separate from the
    timed training runs, whose wall times they do not touch.

Matched settings (every side): batch 256, replay buffer 20,000, actor and critic MLPs
[64, 64] relu, 1 environment, 1 update per env step, 1,000 warm-up steps of uniformly random
actions (no update before them), Gaussian exploration noise 0.1, tau 0.005 (rejax:
``polyak=0.995``), gamma 0.99, Adam learning rates 1e-3 for the actor and the critic (rejax
has one ``learning_rate`` for both), 1-step critic targets, no observation normalization.
Noises are given in [-1, 1]-action units as jaxrl and sbx take them; rejax adds them in the
environment's units (Pendulum's actions are in [-2, 2]), so its values are doubled there:
``exploration_noise=0.2``, TD3's ``target_noise=0.4``, ``target_noise_clip=1.0``.

Settings that differ (not configurable, or each library's defining behaviour):

- rejax treats gymnax's ``done`` (time limit included: Pendulum only truncates) as terminal
  and does not bootstrap there; jaxrl and sbx bootstrap through truncations.
- rejax needs gymnax < 1.0 (1.0's ``step`` returns terminated and truncated apart): its
  environment has gymnax 0.0.9, jaxrl's the version installed here (Pendulum's dynamics and
  reward the same; 0.0.9 reports the time limit as its ``done``).
- Critic loss: jaxrl the mean squared error; rejax (``optax.l2_loss``) and sbx half of it
  (the same Adam steps but for Adam's epsilon).
- TD3's smoothed target action: jaxrl (Tianshou's) does not clip it to the action bounds;
  rejax does.
- TD3's actor loss: jaxrl through the first critic (Fujimoto's, Tianshou's), rejax through the
  mean of both.

Evaluations, one at the end of training wherever a side allows it:

- jaxrl API: one evaluation after the last env step (``eval_every = total steps``),
  ``EVAL_EPISODES`` (128) episodes per seed, the actor without noise.
- jaxrl command: the same evaluation during training, and the command's final evaluation of
  the final policy (another 128 episodes per seed, written to ``final_eval.json``, whose return
  is the one reported); the command also writes its run directory (metrics, learning curve,
  a checkpoint, TensorBoard). Its persistent compilation cache points at a new empty folder
  for every run, so that it compiles from scratch as every other side does.
- rejax: ``eval_freq = total steps`` and ``skip_initial_evaluation=True``: one evaluation at
  the end, its fixed 128 episodes per seed, the actor without noise (``make_act``).
- host: jaxrl evaluates ``HOST_EVAL_EPISODES`` (10) episodes at the end of training and again
  for ``final_eval.json`` (reported); sbx ``evaluate_policy(model, n_eval_episodes=10,
  deterministic=True)`` on a new environment after ``learn``.

Before any timing, each interpreter imports every module its sides use, once and untimed,
with bytecode writing on (children never get ``PYTHONDONTWRITEBYTECODE``): every side starts
from compiled bytecode, as on a user's machine. Without it, a side whose packages were
installed without byte-compiling (jaxrl's CI environment: ``pip install --no-compile``)
recompiled each module's source in every process (gymnax's imports alone: 5-8 s).

The tables give each side's median wall time over the repetitions, every repetition's, the
final return (mean ± std over seeds: the first repetition's 16, or the host runs' one each),
and the median's ratio to the
fastest side's; the JSON has every run (returns per seed, the child's own seconds from its
start to its result, its JAX backend).

    python benchmarks/peers/offpolicy.py                 # full (16 seeds x 10,000 steps, 3 reps)
    python benchmarks/peers/offpolicy.py --quick         # every side, tiny budgets, 1 rep
    python benchmarks/peers/offpolicy.py --only td3,update --reps 5

The sides (the child processes, and the matched settings) are in ``offpolicy_sides.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from common import (  # noqa: E402
    child_record,
    command_line,
    git_commit,
    installed_version,
    loadavg,
    machine_info,
    markdown_table,
    output_dir,
    print_machine,
    summarize,
    write_json,
)
from offpolicy_sides import (  # noqa: E402
    ACTIVATION,
    ACTOR_LR,
    BATCH_SIZE,
    BUFFER_SIZE,
    CRITIC_LR,
    EVAL_EPISODES,
    EXPLORATION_NOISE,
    GAMMA,
    HIDDEN,
    HOST_EVAL_EPISODES,
    NOISE_CLIP,
    POLICY_DELAY,
    POLICY_NOISE,
    SIDE_MODULES,
    TAU,
    TD3_PLUGIN,
    WARMUP_STEPS,
)

COMPARISONS = ("ddpg", "td3", "host", "update")
# The sides of the whole-process comparisons (``side_runners``), for --skip.
SIDES = ("jaxrl API", "jaxrl command", "rejax", "rejax uniform", "jaxrl command (host)", "sbx")

# Peer environments: the JAX stack pinned to this interpreter's versions.
JAX_STACK = ("jax", "jaxlib", "flax", "optax", "chex")
REJAX_VENV = HERE / ".venv-rejax"
REJAX_PACKAGES = ["rejax==0.1.3", "gymnax==0.0.9"]  # rejax 0.1.3 needs gymnax < 1.0
SBX_VENV = HERE / ".venv-sbx"
SBX_PACKAGES = ["sbx-rl==0.28.0", "torch==2.13.0", "gymnasium"]  # gymnasium: this one's version
PACKAGES_REPORTED = {
    "jaxrl": ["jax", "jaxlib", "flax", "optax", "gymnax", "gymnasium", "numpy"],
    "rejax": ["rejax", "jax", "jaxlib", "flax", "optax", "gymnax", "distrax", "numpy"],
    "sbx": ["sbx-rl", "stable_baselines3", "jax", "jaxlib", "flax", "optax", "gymnasium", "torch"],
}


def ensure_venv(venv: Path, packages: Sequence[str], stack: Sequence[str]) -> Path:
    """The interpreter of ``venv``, made with pip when missing: ``packages`` and the
    ``stack`` packages pinned to this interpreter's versions (unpinned where this one has
    none)."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    pins = []
    for name in stack:
        version = installed_version(name)
        pins.append(f"{name}=={version}" if version else name)
    named = {p.split("==")[0] for p in pins}
    wanted = [p for p in packages if p not in named] + pins
    print(f"making {venv.name}: pip install {' '.join(wanted)}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted], check=True)
    return python


def child_env(jaxrl_side: bool, cache_dir: Path | None = None) -> dict[str, str]:
    """The environment of a child process: jaxrl's sides import this repository's jaxrl
    (``PYTHONPATH``); no side gets a persistent compilation cache, except the command's
    empty one (``cache_dir``)."""
    dropped = ("JAX_COMPILATION_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONWARNINGS"] = "ignore"
    if jaxrl_side:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    else:
        env.pop("PYTHONPATH", None)
    if cache_dir is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
    return env


def run_process(command: list[str], env: dict[str, str], what: str) -> tuple[str, float]:
    """Run ``command`` (a ``jaxrl`` command line); its standard output and its wall time
    (start to exit)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{what} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout, seconds


def run_child(python: Path, name: str, jaxrl_side: bool, **options: Any) -> tuple[dict, float]:
    command = [str(python), str(HERE / "offpolicy_sides.py"), "--child", name]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            command.append(flag)
        elif isinstance(value, list | tuple):
            command += [flag, *map(str, value)]
        elif value is not False and value is not None:
            command += [flag, str(value)]
    return child_record(command, name, env=child_env(jaxrl_side), cwd=ROOT)


def command_args(
    algo: str, seeds: int, steps: int, host: bool, run_dir: Path, seed: int = 0
) -> list[str]:
    """The ``jaxrl train`` command line with the matched settings."""
    command = [sys.executable, "-m", "jaxrl", "train", algo]
    if algo == "td3":
        command += ["--plugin", str(TD3_PLUGIN)]
        command += ["--policy-noise", str(POLICY_NOISE), "--noise-clip", str(NOISE_CLIP)]
        command += ["--policy-delay", str(POLICY_DELAY)]
    command += ["--env", "Pendulum-v1"]
    if host:
        command += ["--backend", "gymnasium", "--env-backend", "gymnasium"]
    else:
        command += ["--backend", "jax"]
    episodes = HOST_EVAL_EPISODES if host else EVAL_EPISODES
    command += ["--num-seeds", str(seeds), "--seed", str(seed), "--total-steps", str(steps)]
    command += ["--num-envs", "1", "--num-steps", "1", "--eval-every", str(steps)]
    command += ["--eval-episodes", str(episodes), "--checkpoint-every", "0"]
    command += ["--batch-size", str(BATCH_SIZE), "--buffer-size", str(BUFFER_SIZE)]
    command += ["--warmup-steps", str(WARMUP_STEPS), "--update-per-step", "1"]
    command += ["--hidden-sizes", *map(str, HIDDEN), "--activation", ACTIVATION]
    command += ["--actor-lr", str(ACTOR_LR), "--critic-lr", str(CRITIC_LR)]
    command += ["--tau", str(TAU), "--gamma", str(GAMMA), "--n-step-return-horizon", "1"]
    command += ["--exploration-noise", f"gaussian:{EXPLORATION_NOISE}"]
    return [*command, "--run-dir", str(run_dir)]


def run_command(
    algo: str, seeds: int, steps: int, host: bool, scratch: Path, tag: str, seed: int = 0
) -> tuple[dict, float]:
    run_dir, cache = scratch / f"run-{tag}", scratch / f"cache-{tag}"
    cache.mkdir()
    command = command_args(algo, seeds, steps, host, run_dir, seed)
    _, seconds = run_process(command, child_env(True, cache), "jaxrl " + " ".join(command[3:5]))
    final = json.loads((run_dir / "final_eval.json").read_text())
    return {"returns": final["deterministic"], "env_steps": int(final["env_steps"])}, seconds


def side_runners(
    comparison: str, args: argparse.Namespace, pythons: dict[str, Path], scratch: Path
) -> dict[str, Callable[[int], tuple[dict, float]]]:
    """``{side: run(rep) -> (result, wall seconds)}`` of one comparison."""
    here = Path(sys.executable)
    if comparison == "host":
        return {
            "jaxrl command (host)": lambda rep: run_command(
                "ddpg", 1, args.host_steps, True, scratch, f"host-{rep}", seed=rep
            ),
            "sbx": lambda rep: run_child(
                pythons["sbx"],
                "sbx",
                False,
                steps=args.host_steps,
                episodes=HOST_EVAL_EPISODES,
                seed=rep,
            ),
        }
    algo, seeds, steps = comparison, args.seeds, args.steps
    budget = dict(algo=algo, seeds=seeds, steps=steps)
    return {
        "jaxrl API": lambda rep: run_child(here, "jaxrl-api", True, **budget),
        "jaxrl command": lambda rep: run_command(
            algo, seeds, steps, False, scratch, f"{algo}-{rep}"
        ),
        "rejax": lambda rep: run_child(pythons["rejax"], "rejax", False, **budget),
        "rejax uniform": lambda rep: run_child(
            pythons["rejax"], "rejax", False, uniform=True, **budget
        ),
    }


def run_comparison(
    comparison: str, args: argparse.Namespace, pythons: dict[str, Path], scratch: Path
) -> dict:
    runners = side_runners(comparison, args, pythons, scratch)
    names = [name for name in runners if name not in args.skip]
    runs: dict[str, list[dict]] = {name: [] for name in names}
    reps = args.host_reps if comparison == "host" else args.reps
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            result, seconds = runners[name](rep)
            returns = np.asarray(result["returns"], float)
            runs[name].append({**result, "wall_s": seconds})
            print(
                f"  {comparison} rep {rep + 1}/{reps} {name:22s} {seconds:7.1f} s, return "
                f"{returns.mean():8.1f} +- {returns.std():6.1f} over {returns.size} seed(s)",
                flush=True,
            )
    sides = {}
    for name in names:
        walls = [run["wall_s"] for run in runs[name]]
        # The host runs' seed is their rep (pooled); the vmapped runs repeat their 16 seeds.
        pooled = runs[name] if comparison == "host" else runs[name][:1]
        first = np.concatenate([np.asarray(run["returns"], float) for run in pooled])
        sides[name] = {
            "wall_s": walls,
            "wall_summary": summarize(walls),
            "return_mean": float(first.mean()),
            "return_std": float(first.std()),
            "return_min": float(first.min()),
            "return_max": float(first.max()),
            "return_seeds": int(first.size),
            "runs": runs[name],
        }
    fastest = min(side["wall_summary"]["median"] for side in sides.values())
    for side in sides.values():
        side["ratio_to_fastest"] = side["wall_summary"]["median"] / fastest
    return {"sides": sides}


def comparison_table(comparison: str, result: dict) -> str:
    rows = []
    for name, side in result["sides"].items():
        walls = ", ".join(f"{w:.1f}" for w in side["wall_s"])
        rows.append(
            [
                name,
                f"{side['wall_summary']['median']:.1f}",
                walls,
                f"{side['return_mean']:.1f} ± {side['return_std']:.1f} "
                f"({side['return_seeds']} seed{'s' if side['return_seeds'] > 1 else ''})",
                f"{side['ratio_to_fastest']:.2f}",
            ]
        )
    headers = ["side", "wall s (median)", "wall s (reps)", "final return", "x fastest"]
    return markdown_table(headers, rows)


def run_updates(args: argparse.Namespace, pythons: dict[str, Path]) -> dict:
    """The update-cost children, alternating their order every repetition."""
    options = dict(seeds=args.seeds, calls=args.update_calls)
    runners = {
        "jaxrl": lambda: run_child(Path(sys.executable), "jaxrl-update", True, **options),
        "rejax": lambda: run_child(pythons["rejax"], "rejax-update", False, **options),
    }
    reps: list[list[dict]] = []
    for rep in range(args.reps):
        rows: list[dict] = []
        for name in list(runners) if rep % 2 == 0 else list(runners)[::-1]:
            result, seconds = runners[name]()
            print(f"  update rep {rep + 1}/{args.reps} {name}: child {seconds:.1f} s", flush=True)
            rows += [{**row, "backend": result["backend"]} for row in result["rows"]]
        reps.append(rows)

    def key(row: dict) -> tuple[str, str, str]:
        return row["library"], row["algo"], row["sampler"]

    merged = []
    for row in reps[0]:
        same = [next(r for r in rows if key(r) == key(row)) for rows in reps]
        median = float(np.median([r["median_s"] for r in same]))
        merged.append({**row, "median_s": median, "reps": same})
    ratios = {}
    for row in merged:
        if row["algo"] == "td3":
            ddpg = next(r for r in merged if key(r) == (row["library"], "ddpg", row["sampler"]))
            ratios[f"{row['library']} ({row['sampler']})"] = row["median_s"] / ddpg["median_s"]
    return {"rows": merged, "td3_over_ddpg": ratios}


def update_table(result: dict) -> str:
    rows = []
    for row in result["rows"]:
        s = row["summary"]
        ratio = result["td3_over_ddpg"].get(f"{row['library']} ({row['sampler']})")
        rows.append(
            [
                row["library"],
                row["algo"],
                row["sampler"],
                f"{row['median_s'] * 1e3:.3f}",
                f"{s['q1'] * 1e3:.3f}-{s['q3'] * 1e3:.3f}",
                f"{row['compile_s']:.1f}",
                f"{ratio:.2f}" if row["algo"] == "td3" else "",
            ]
        )
    headers = ["library", "algo", "sampler", "ms/update", "q1-q3 (rep 1)", "compile s"]
    return markdown_table([*headers, "TD3/DDPG"], rows)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny budgets, 1 rep, every side")
    parser.add_argument("--only", default=",".join(COMPARISONS), help="comma-separated subset")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (3; quick: 1)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds (16; quick: 2)")
    parser.add_argument("--steps", type=int, default=None, help="env steps (10,000; quick: 2,000)")
    parser.add_argument(
        "--host-steps", type=int, default=None, help="host env steps (20,000; quick: 2,000)"
    )
    parser.add_argument(
        "--host-reps", type=int, default=None, help="host runs, seed = rep (5; quick: 1)"
    )
    parser.add_argument(
        "--update-calls", type=int, default=None, help="timed updates per case (300; quick: 20)"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=SIDES,
        metavar="SIDE",
        help=f"leave a side out (repeatable): {', '.join(repr(s) for s in SIDES)}",
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    args = parser.parse_args(argv)
    defaults = (1, 2, 2_000, 2_000, 1, 20) if args.quick else (3, 16, 10_000, 20_000, 5, 300)
    names = ("reps", "seeds", "steps", "host_steps", "host_reps", "update_calls")
    for name, default in zip(names, defaults, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.only = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = set(args.only) - set(COMPARISONS)
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}; choose from {', '.join(COMPARISONS)}")
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    info = machine_info()
    print_machine(info)
    pythons: dict[str, Path] = {"jaxrl": Path(sys.executable)}
    if {"ddpg", "td3", "update"} & set(args.only):
        pythons["rejax"] = ensure_venv(REJAX_VENV, REJAX_PACKAGES, [*JAX_STACK, "distrax"])
    if "host" in args.only:
        pythons["sbx"] = ensure_venv(SBX_VENV, SBX_PACKAGES, [*JAX_STACK, "gymnasium"])
    versions = {
        name: run_child(python, "versions", name == "jaxrl", packages=PACKAGES_REPORTED[name])[0]
        for name, python in pythons.items()
    }
    print("versions: " + json.dumps(versions))
    for name, python in pythons.items():  # every side from compiled bytecode
        run_child(python, "warm", name == "jaxrl", packages=SIDE_MODULES[name])
    load_before = loadavg()
    results: dict[str, Any] = {}
    tables: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for comparison in [c for c in COMPARISONS if c in args.only]:
            print(f"\n== {comparison}", flush=True)
            if comparison == "update":
                results[comparison] = run_updates(args, pythons)
                table = update_table(results[comparison])
            else:
                results[comparison] = run_comparison(comparison, args, pythons, Path(scratch))
                table = comparison_table(comparison, results[comparison])
            tables.append(f"{comparison}:\n{table}")
            print(table, flush=True)
    load_after = loadavg()
    budgets = f"{args.seeds} seeds x {args.steps:,} steps; host 1 seed x {args.host_steps:,}"
    budgets += f" ({args.host_reps} reps, seed = rep)"
    print(f"\nPendulum-v1, {budgets}; {args.reps} rep(s), sides alternating.")
    for table in tables:
        print("\n" + table)
    print()
    print_machine(info)
    print(f"load average before {load_before}, after {load_after}")
    result = {
        "command": command_line(),
        "quick": args.quick,
        "reps": args.reps,
        "host_reps": args.host_reps,
        "seeds": args.seeds,
        "steps": args.steps,
        "host_steps": args.host_steps,
        "update_calls": args.update_calls,
        "settings": {
            "batch_size": BATCH_SIZE,
            "buffer_size": BUFFER_SIZE,
            "hidden": HIDDEN,
            "activation": ACTIVATION,
            "warmup_steps": WARMUP_STEPS,
            "exploration_noise": EXPLORATION_NOISE,
            "tau": TAU,
            "gamma": GAMMA,
            "actor_lr": ACTOR_LR,
            "critic_lr": CRITIC_LR,
            "td3": {"policy_noise": POLICY_NOISE, "noise_clip": NOISE_CLIP},
            "policy_delay": POLICY_DELAY,
            "eval_episodes": EVAL_EPISODES,
            "host_eval_episodes": HOST_EVAL_EPISODES,
        },
        "versions": versions,
        "jaxrl_commit": git_commit(),
        "results": results,
        "machine": info,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }
    write_json(output_dir(args) / "peers_offpolicy.json", result)


if __name__ == "__main__":
    main(sys.argv[1:])

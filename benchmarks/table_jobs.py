"""The MuJoCo table's ``--jobs``: groups side by side in processes of their own, each on its
share of the CPUs, against one group at a time on all of them.

Each measurement is one host-driver group as the table trains it (the ``mujoco`` preset, ``S``
seeds vmapped in one process, EnvPool when installed), timed over ``--calls`` collect-and-learn
steps after ``--warmup`` steps that compile and warm it (DDPG learns from the first step: its
warm-up of random actions is set to 0 here so that every step updates, as after the first
25,000). Per round, alternating the order between rounds:

- ``one``: one group in a process on all of this process' CPUs (``--jobs 1``);
- ``jobs``: ``--jobs`` groups at once, each in a process pinned to its share of the CPUs
  (:func:`jaxrl.studies.processes.cpu_shares`), started together; each is timed over the same
  steps and the throughputs are summed.

Throughput is env steps per second summed over the seeds (and, for ``jobs``, the processes).
Evaluation is left out: it is a small part of a DDPG table run (10 test episodes every 5,000
steps). Every process is fresh; the compilation cache is whatever the environment sets.

    python benchmarks/table_jobs.py              # DDPG, HalfCheetah-v5, 3 seeds, 2 jobs
    python benchmarks/table_jobs.py --algo trpo --env Hopper-v5 --seeds 10
    python benchmarks/table_jobs.py --quick      # CI smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from typing import Any

from common import (
    base_parser,
    command_line,
    loadavg,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    summarize,
    write_json,
)

from jaxrl.studies.processes import check_jobs, cpu_shares, start_on, usable_cpus


def measure(algo: str, env_id: str, seeds: int, warmup: int, calls: int) -> dict[str, Any]:
    """One group's env steps per second over ``calls`` collect-and-learn steps (this
    process, its CPUs as they are)."""
    import jax
    import jax.numpy as jnp

    from jaxrl.config.run_config import RunConfig
    from jaxrl.training import gymnasium_driver
    from jaxrl.training.gymnasium_driver import HostLoop

    preset = RunConfig.from_preset(algo, env_id, "mujoco").hyperparameters
    replay = {"warmup_steps": 0, "buffer_size": 100_000}  # a replay learner's: learn at once
    hyper = {name: value for name, value in replay.items() if name in preset}
    config = RunConfig.from_preset(algo, env_id, "mujoco", hyperparameters=hyper)
    config = dataclasses.replace(config, seed=0, num_seeds=seeds, env_backend="auto")
    with HostLoop(config.make_agent(), env_id, config) as loop:
        carry = jax.tree_util.tree_map(jnp.copy, loop.start(loop.init(), 0))
        raw = gymnasium_driver.split_seeds(loop.env.reset(), seeds)
        carry, loop._sample, loop._obs, _ = loop._programs.observe_and_act(carry, raw, raw, 0)
        before = loop._env_steps
        for _ in range(warmup):
            carry, _ = loop._collect_and_learn(carry)
        jax.block_until_ready(carry)
        steps0, start, cpu0 = loop._env_steps, time.perf_counter(), time.process_time()
        for _ in range(calls):
            carry, _ = loop._collect_and_learn(carry)
        jax.block_until_ready(carry)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
        per_seed = loop._env_steps - steps0
    assert per_seed > 0 and steps0 > before, (per_seed, steps0, before)
    return {
        "env_steps_per_second": seeds * per_seed / seconds,
        "seconds": seconds,
        "cpu_cores_busy": cpu / seconds,
        "cpus": len(usable_cpus()),
    }


def spawn(args: argparse.Namespace, cpus: list[int] | None) -> subprocess.Popen:
    """This script's ``--child`` in a fresh process, on ``cpus`` (None: this one's)."""
    child = [sys.executable, __file__, "--child", args.algo, args.env, str(args.seeds)]
    child += [str(args.warmup), str(args.calls)]
    return start_on(cpus, lambda: subprocess.Popen(child, stdout=subprocess.PIPE, text=True))


def collect(processes: list[subprocess.Popen]) -> list[dict[str, Any]]:
    results = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a measuring process failed (exit status {process.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def one_round(args: argparse.Namespace, order: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in order:
        if name == "one":
            (result,) = collect([spawn(args, None)])
            out["one"] = {"total": result["env_steps_per_second"], "processes": [result]}
        else:
            results = collect([spawn(args, share) for share in cpu_shares(args.jobs)])
            total = sum(r["env_steps_per_second"] for r in results)
            out["jobs"] = {"total": total, "processes": results}
        out[name]["loadavg_after"] = loadavg()
    return out


def parse_args() -> argparse.Namespace:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--algo", default="ddpg", choices=["ddpg", "trpo", "npg"])
    parser.add_argument("--env", default=None, help="default HalfCheetah-v5 (quick: Pendulum-v1)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per group")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=20, help="steps before the clock")
    parser.add_argument("--calls", type=int, default=500, help="collect-and-learn steps timed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=5, metavar="X", help="internal: one measurement")
    args = parser.parse_args()
    if args.child:
        return args
    try:
        if check_jobs(args.jobs) < 2:
            parser.error(f"--jobs must be at least 2 (against one group), got {args.jobs}")
    except ValueError as error:
        parser.error(str(error))
    if args.quick:
        args.seeds, args.warmup, args.calls, args.rounds = 2, 3, 30, 1
    if args.env is None:
        args.env = "HalfCheetah-v5" if mujoco_available() and not args.quick else "Pendulum-v1"
    return args


def main() -> None:
    args = parse_args()
    if args.child:
        algo, env_id, seeds, warmup, calls = args.child
        print(json.dumps(measure(algo, env_id, int(seeds), int(warmup), int(calls))))
        return
    info = machine_info()
    print_machine(info)
    shares = cpu_shares(args.jobs)
    print(
        f"{args.algo.upper()} on {args.env}, {args.seeds} seeds per group: one group on "
        f"{len(usable_cpus())} CPUs vs {args.jobs} groups on {shares}; {args.calls} steps "
        f"timed after {args.warmup}, {args.rounds} rounds"
    )
    rounds = []
    for index in range(args.rounds):
        order = ["one", "jobs"] if index % 2 == 0 else ["jobs", "one"]
        rounds.append(one_round(args, order))
        one, jobs = rounds[-1]["one"]["total"], rounds[-1]["jobs"]["total"]
        each = " + ".join(
            f"{p['env_steps_per_second']:.1f}" for p in rounds[-1]["jobs"]["processes"]
        )
        print(
            f"round {index + 1}: one {one:.1f} env steps/s, jobs {jobs:.1f} ({each}), "
            f"x{jobs / one:.3f}",
            flush=True,
        )
    one = summarize([r["one"]["total"] for r in rounds])
    jobs = summarize([r["jobs"]["total"] for r in rounds])
    ratios = summarize([r["jobs"]["total"] / r["one"]["total"] for r in rounds])
    print(
        markdown_table(
            ["configuration", "env steps/s, median (min-max)"],
            [
                ["one group, all CPUs", f"{one['median']:.1f} ({one['min']:.1f}-{one['max']:.1f})"],
                [
                    f"{args.jobs} groups, a share each",
                    f"{jobs['median']:.1f} ({jobs['min']:.1f}-{jobs['max']:.1f})",
                ],
                [
                    "ratio, per round",
                    f"x{ratios['median']:.3f} ({ratios['min']:.3f}-{ratios['max']:.3f})",
                ],
            ],
        )
    )
    path = output_dir(args) / "table_jobs.json"
    write_json(
        path,
        {
            "machine": info,
            "command": command_line(),
            "algo": args.algo,
            "env": args.env,
            "seeds_per_group": args.seeds,
            "jobs": args.jobs,
            "shares": shares,
            "rounds": rounds,
            "ratio": ratios,
        },
    )


if __name__ == "__main__":
    main()

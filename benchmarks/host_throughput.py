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

``--vs-raw`` runs from ``host_vs_raw.py`` (raw stepping, the ratio and its bound) and
``host_breakdown.py`` (the timed run).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from common import (
    base_parser,
    child_record,
    command_line,
    machine_info,
    markdown_table,
    mujoco_available,
    output_dir,
    print_machine,
    write_json,
)
from host_run import measure


def run_configuration(args: Any, backend: str, seeds: int) -> dict:
    """One configuration's record: in a fresh process (no compilation cache or warm state
    shared), or in this one for ``--quick`` (a smoke run, not a measurement)."""
    if args.quick:
        return measure(args.env, backend, seeds, args.steps, args.eval_every)
    command = [sys.executable, __file__, "--env", args.env, "--eval-every", str(args.eval_every)]
    command += ["--one", backend, str(seeds), str(args.steps)]
    return child_record(command, f"{backend} x {seeds}")[0]


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
        from host_vs_raw import child

        print(json.dumps(child(**json.loads(args.child))))
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
        from host_vs_raw import vs_raw

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

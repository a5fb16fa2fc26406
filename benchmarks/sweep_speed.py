"""A study's wall time: ``jaxrl sweep`` (every setting of a group in one compiled program)
against one ``jaxrl train`` command per setting, side by side in one run on one machine.

The grid: TRPO on Pendulum-v1 (gymnax; the command's default preset), ``max_kl`` x
``gae_lambda`` (numeric hyperparameters, pytree leaves: one group), ``--settings`` settings
of ``--seeds`` seeds each, ``--total-steps`` env steps per seed. Both sides run as fresh
processes of the installed command with a cold JAX compilation cache (a temporary
``JAX_COMPILATION_CACHE_DIR`` per process), so each separate command pays its start-up and
its compile, as a user running them would. The sweep's compile time is what it reports for
its period programs (lowered and compiled ahead of their first call).

    python benchmarks/sweep_speed.py                         # 16 settings x 8 seeds, 2 CPU
    python benchmarks/sweep_speed.py --settings 64 --seeds 16 --no-separate   # a GPU
    python benchmarks/sweep_speed.py --quick                 # CI smoke run
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import base_parser, loadavg, machine_info, output_dir, print_machine, write_json

MAX_KLS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
GAE_LAMBDAS = (0.8, 0.85, 0.9, 0.95, 0.97, 0.99, 1.0, 0.92)


def grid(settings: int) -> tuple[list[float], list[float]]:
    """``max_kl`` and ``gae_lambda`` values whose product has ``settings`` points."""
    rows = 2 ** math.ceil(math.log2(settings) / 2)
    cols = settings // rows
    if rows * cols != settings or rows > len(MAX_KLS) or cols > len(GAE_LAMBDAS):
        raise SystemExit(f"--settings {settings}: use 4, 16 or 64")
    return list(MAX_KLS[:rows]), list(GAE_LAMBDAS[:cols])


def _command() -> list[str]:
    script = Path(sys.executable).parent / "jaxrl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "jaxrl"]


def _run(args: list[str], cache: Path) -> tuple[float, str]:
    """Seconds and stderr of one fresh ``jaxrl`` process with an empty compilation cache."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    done = subprocess.run([*_command(), *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"jaxrl {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return seconds, done.stderr


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--settings", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--total-steps", type=int, default=32_768)
    parser.add_argument("--no-separate", action="store_true", help="only the sweep")
    args = parser.parse_args()
    if args.quick:
        args.settings, args.seeds, args.total_steps = 4, 2, 8_192
    out = output_dir(args)
    info = machine_info()
    print_machine(info)
    kls, lambdas = grid(args.settings)
    common = ["--env", "Pendulum-v1", "--num-seeds", str(args.seeds)]
    common += ["--total-steps", str(args.total_steps), "--checkpoint-every", "0"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sweep_args = ["sweep", "trpo", *common, "--sweep-dir", str(root / "sweep")]
        sweep_args += ["--sweep", "max-kl=" + ",".join(map(str, kls))]
        sweep_args += ["--sweep", "gae-lambda=" + ",".join(map(str, lambdas))]
        load_before = loadavg()
        sweep_s, said = _run(sweep_args, root / "cache-sweep")
        found = re.search(r"compiled in ([0-9.]+) s", said)
        compile_s = float(found.group(1)) if found else None
        print(
            f"jaxrl sweep: {args.settings} settings x {args.seeds} seeds in {sweep_s:.1f} s "
            f"(period programs compiled in {compile_s} s)"
        )
        separate: list[float] = []
        if not args.no_separate:
            for number, (kl, lam) in enumerate(itertools.product(kls, lambdas)):
                run = ["train", "trpo", *common, "--max-kl", str(kl), "--gae-lambda", str(lam)]
                run += ["--run-dir", str(root / f"run-{number}")]
                separate.append(_run(run, root / f"cache-{number}")[0])
                shutil.rmtree(root / f"cache-{number}", ignore_errors=True)
                print(f"  jaxrl train {number + 1}/{args.settings}: {separate[-1]:.1f} s")
        load_after = loadavg()
    result: dict[str, Any] = {
        "settings": args.settings,
        "seeds": args.seeds,
        "total_steps": args.total_steps,
        "sweep_s": sweep_s,
        "sweep_compile_s": compile_s,
        "separate_s": sum(separate) if separate else None,
        "separate_each_s": separate or None,
        "speedup": sum(separate) / sweep_s if separate else None,
        "machine": info,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }
    if separate:
        print(
            f"{args.settings} separate jaxrl train: {sum(separate):.1f} s "
            f"(median {sorted(separate)[len(separate) // 2]:.1f} s each); "
            f"the sweep is {result['speedup']:.1f}x faster"
        )
    print(f"load average before {load_before}, after {load_after}")
    name = f"sweep_speed_{args.settings}x{args.seeds}_{info['jax_backend']}.json"
    write_json(out / name.replace(" ", "_"), result)


if __name__ == "__main__":
    main()

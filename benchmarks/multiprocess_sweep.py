"""A sweep over 2 processes ranks its settings as 1 process does: a figure for
``docs/guides/gpu.md`` ("Sweeps and studies over several processes").

Runs ``jaxrl sweep trpo --env Pendulum-v1 --sweep max-kl=0.005,0.01,0.02`` (gymnax) as a job
of 2 local CPU processes (``--coordinator-address localhost:PORT --num-processes 2
--process-id i``, process ``i`` in its own directory, as ``tests/training/test_multiprocess.py``
launches them), then the same sweep in 1 process; prints whether the two ``sweep.csv``
(without ``wall_time``) are equal and draws the two rankings side by side.

    python benchmarks/multiprocess_sweep.py                      # 2 seeds x 20,000 steps
    python benchmarks/multiprocess_sweep.py --total-steps 8192 --out /tmp/mp
                                     # a quick look (one collection), its results apart
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxrl.studies.sweep_report import ranking  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RUNS = RESULTS / "multiprocess_sweep_runs"  # the sweeps themselves: not committed
FIGURE = ROOT / "docs" / "guides" / "multiprocess_sweep.png"
FIELDS = ["max_kl"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _environment() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu"}


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def _without_wall_time(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != "wall_time"} for row in rows]


def _ranked(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    typed = [{**row, "final_return": float(row["final_return"])} for row in rows]
    return ranking(typed, FIELDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=20_000)
    parser.add_argument("--num-seeds", type=int, default=2)
    parser.add_argument("--sweep", default="max-kl=0.005,0.01,0.02")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="folder of the results (JSON, both sweep.csv)"
    )
    parser.add_argument(
        "--runs-dir",
        type=Path,
        default=RUNS,
        help="where the sweeps run (its process0, process1 and single folders are replaced)",
    )
    parser.add_argument(
        "--figure", type=Path, default=None, help=f"default: {FIGURE}, or in --out if given"
    )
    args = parser.parse_args()
    figure = args.figure or (FIGURE if args.out == RESULTS else args.out / FIGURE.name)

    sweep = [
        *("sweep", "trpo", "--env", "Pendulum-v1", "--sweep", args.sweep),
        *("--num-seeds", str(args.num_seeds), "--total-steps", str(args.total_steps)),
        *("--sweep-dir", "sweep"),
    ]
    two = [args.runs_dir / "process0", args.runs_dir / "process1"]
    one = args.runs_dir / "single"
    for directory in (*two, one):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)

    port = _free_port()
    processes = []
    started = time.monotonic()
    for index, cwd in enumerate(two):
        launch = ["--coordinator-address", f"localhost:{port}", "--num-processes", "2"]
        launch += ["--process-id", str(index)]
        print(
            f"[process {index}, in {cwd.name}/] JAX_PLATFORMS=cpu jaxrl {' '.join(sweep + launch)}"
        )
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "jaxrl", *sweep, *launch],
                cwd=cwd,
                env=_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for index, process in enumerate(processes):
        out, err = process.communicate()
        if process.returncode != 0:
            sys.exit(f"process {index} failed ({process.returncode}):\n{out}\n{err[-3000:]}")
        print(f"process {index}: {(err.strip() or out.strip()).splitlines()[-1]}")
    seconds_two = time.monotonic() - started
    print(f"2 processes: {seconds_two:.0f} s")

    print(f"[1 process, in {one.name}/] JAX_PLATFORMS=cpu jaxrl {' '.join(sweep)}")
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "jaxrl", *sweep],
        cwd=one,
        env=_environment(),
        check=True,
        capture_output=True,
    )
    seconds_one = time.monotonic() - started
    print(f"1 process: {seconds_one:.0f} s")

    rows_two = _rows(two[0] / "sweep" / "sweep.csv")
    rows_one = _rows(one / "sweep" / "sweep.csv")
    equal = _without_wall_time(rows_two) == _without_wall_time(rows_one)
    print(f"sweep.csv without wall_time equal (2 processes vs 1): {equal}")
    print(f"process 1 wrote nothing: {not any(two[1].iterdir())}")
    ranked_two, ranked_one = _ranked(rows_two), _ranked(rows_one)
    for entry in ranked_two:
        print(f"  {entry['setting']}: mean {entry['mean']:.1f} +- {entry['std']:.1f}")

    args.out.mkdir(parents=True, exist_ok=True)
    for name, directory in (("2_processes", two[0]), ("1_process", one)):
        shutil.copy(directory / "sweep" / "sweep.csv", args.out / f"multiprocess_sweep_{name}.csv")
    summary = {
        "command": "jaxrl " + " ".join(sweep),
        "launch": "--coordinator-address localhost:PORT --num-processes 2 --process-id {0,1}",
        "seconds_2_processes": round(seconds_two),
        "seconds_1_process": round(seconds_one),
        "sweep_csv_equal_without_wall_time": equal,
        "ranking_2_processes": ranked_two,
        "ranking_1_process": ranked_one,
    }
    (args.out / "multiprocess_sweep.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {args.out / 'multiprocess_sweep.json'}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, panels = plt.subplots(1, 2, figsize=(9, 2.9), dpi=110, sharex=True, sharey=True)
    order = [entry["setting"] for entry in reversed(ranked_one)]
    for axes, ranked, rows, title in (
        (panels[0], ranked_two, rows_two, f"2 processes ({seconds_two:.0f} s)"),
        (panels[1], ranked_one, rows_one, f"1 process ({seconds_one:.0f} s)"),
    ):
        by_name = {entry["setting"]: entry for entry in ranked}
        y = np.arange(len(order))
        means = np.array([by_name[name]["mean"] for name in order])
        low = means - np.array([by_name[name]["ci_low"] for name in order])
        high = np.array([by_name[name]["ci_high"] for name in order]) - means
        axes.errorbar(
            means, y, xerr=np.nan_to_num([low, high]), fmt="o", capsize=3, label="mean, 95% CI"
        )
        for i, name in enumerate(order):
            seeds = [float(r["final_return"]) for r in rows if r["setting"] == name]
            axes.plot(
                seeds,
                [i] * len(seeds),
                "x",
                color="tab:gray",
                ms=5,
                label="seeds" if i == 0 else None,
            )
        axes.set_yticks(y, order, fontsize=8)
        axes.set_title(title, fontsize=10)
        axes.grid(axis="x", alpha=0.3)
        axes.set_xlabel("final deterministic return")
    panels[1].legend(fontsize=7, loc="upper right")
    fig.suptitle(
        f"jaxrl sweep trpo, Pendulum-v1, {args.num_seeds} seeds x {args.total_steps} steps: "
        f"sweep.csv equal (without wall_time): {equal}",
        fontsize=10,
    )
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure)
    print(f"wrote {figure}")


if __name__ == "__main__":
    main()
